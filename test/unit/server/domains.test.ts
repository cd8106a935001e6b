// DomainService with the real SQLite store, behind fakes of its two ports: the edge's TLS side and the
// ACME issuer. Renewal when due, backoff after a failure (the current certificate keeps serving), the edge
// kept in step with the store.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { edgePem } from "../../../src/core/domains.js";
import { PierError } from "../../../src/core/errors.js";
import { DomainService } from "../../../src/server/domains.js";
import { newApp } from "../../conformance/store.js";
import { FakeTls } from "../../support/fake-edge.js";
import { FakeIssuer } from "../../support/fake-issuer.js";
import { ManualClock } from "../../support/manual-clock.js";
import { LEAF, LEAF_KEY, OTHER_KEY } from "../core/tls-fixtures.js";
import { storeApp } from "./store-apps.js";

const dir = mkdtempSync(join(tmpdir(), "pier-domains-unit-"));
after(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
async function setup(acme = true, retryBaseMs?: number) {
  n++;
  const store = new SqliteStore(join(dir, `${n}.db`), SecretBox.fromFile(join(dir, "secret.key")));
  const domains = store.domains();
  const tls = new FakeTls();
  const issuer = new FakeIssuer();
  const refreshed: string[] = [];
  // The service's time: moved by the tests, never compared against the wall clock.
  const clock = new ManualClock();
  const service = new DomainService({
    store: domains,
    tls,
    issuer: acme ? issuer : null,
    refreshEdge: async (appId) => {
      refreshed.push(appId);
    },
    logger: pino({ level: "silent" }),
    pierDomain: "pier.test",
    httpsPort: 443,
    retryBaseMs,
    clock,
  });
  const app = (name: string) => storeApp(store, name);
  const settled = async (name: string) => {
    for (let i = 0; i < 100; i++) {
      const d = await domains.findDomain(name);
      if (d && d.state !== "pending") return d;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${name} stayed pending`);
  };
  return { store, domains, tls, issuer, refreshed, service, app, settled, clock };
}

const code = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof PierError, String(e));
    return `${e.code} ${e.message}`;
  }
  return "resolved";
};

describe("DomainService", () => {
  it("adds a domain: routed at once, a certificate obtained and installed, a renewal planned", async () => {
    const { service, app, refreshed, settled, tls, issuer, domains } = await setup();
    const web = await app("web");
    const v = await service.add(web, "Shop.Example.Test");
    assert.equal(v.name, "shop.example.test");
    assert.equal(v.url, "https://shop.example.test");
    assert.deepEqual(refreshed, [web.id]);
    const d = await settled("shop.example.test");
    assert.equal(d.state, "issued");
    assert.equal(d.issuer, "Fixture CA");
    assert.deepEqual(issuer.calls, ["shop.example.test"]);
    assert.equal(tls.certs.get("shop.example.test"), edgePem({ certPem: LEAF, keyPem: LEAF_KEY }));
    assert.equal(tls.challenges.size, 0, "the challenge answer is gone once used");
    assert.ok(d.nextAttemptAt && Date.parse(d.nextAttemptAt) < Date.parse(d.notAfter ?? ""));
    assert.deepEqual(await domains.domainCertificate("shop.example.test"), {
      certPem: LEAF,
      keyPem: LEAF_KEY,
    });
  });

  it("refuses an invalid name, a task app, and a domain of another app (naming it)", async () => {
    const { service, app, store } = await setup();
    const web = await app("web");
    const api = await app("api");
    assert.match(
      await code(service.add(web, "no_way.test")),
      /^INVALID_INPUT domain 'no_way\.test' is not a valid DNS name/,
    );
    assert.match(await code(service.add(web, "x.pier.test")), /^INVALID_INPUT .*under PIER_DOMAIN/);
    await service.add(web, "www.example.test");
    assert.match(
      await code(service.add(api, "www.example.test")),
      /^CONFLICT The domain www\.example\.test belongs to the app web/,
    );
    assert.match(await code(service.remove(api, "www.example.test")), /^DOMAIN_NOT_FOUND/);
    const job = await store.createApp(newApp("job", { task: "node job.js" }));
    assert.match(await code(service.add(job, "job.example.test")), /^INVALID_INPUT job is a task app/);
  });

  it("renews by itself when due; a failed renewal keeps the certificate serving and retries with backoff", async () => {
    const { service, app, settled, tls, issuer, domains, clock } = await setup();
    const web = await app("web");
    await service.add(web, "shop.example.test");
    await settled("shop.example.test");
    const installed = tls.installs;
    await service.tick();
    assert.deepEqual(issuer.calls, ["shop.example.test"], "not due yet: nothing happens");

    await domains.updateDomain("shop.example.test", { nextAttemptAt: clock.iso(-1000) });
    issuer.refuse = "connection refused";
    await service.tick();
    let d = (await domains.findDomain("shop.example.test"))!;
    assert.equal(d.state, "issued", "still served");
    assert.equal(d.failures, 1);
    assert.match(d.lastError ?? "", /gave no certificate for shop\.example\.test: connection refused/);
    assert.equal(d.nextAttemptAt, clock.iso(5 * 60_000), "first retry in 5 min");
    assert.equal(tls.installs, installed, "the edge keeps its certificate");
    assert.ok(await domains.domainCertificate("shop.example.test"));

    clock.advance(5 * 60_000);
    await service.tick();
    d = (await domains.findDomain("shop.example.test"))!;
    assert.equal(d.failures, 2);
    assert.equal(d.nextAttemptAt, clock.iso(10 * 60_000), "then 10 min");

    issuer.refuse = null;
    clock.advance(10 * 60_000 - 1);
    await service.tick();
    assert.equal(issuer.calls.length, 3, "not before its retry time");
    clock.advance(1);
    await service.tick();
    d = (await domains.findDomain("shop.example.test"))!;
    assert.equal(d.failures, 0);
    assert.equal(d.lastError, null);
    assert.equal(tls.installs, installed + 1, "the renewed certificate is installed");
    assert.equal(issuer.calls.length, 4);
  });

  it("started, it wakes when a certificate is due (not a whole interval later)", async () => {
    const { service, app, settled, issuer, domains, clock } = await setup();
    const web = await app("web");
    await service.add(web, "shop.example.test");
    await settled("shop.example.test");
    await domains.updateDomain("shop.example.test", { nextAttemptAt: clock.iso(1200) });
    service.start(3_600_000);
    try {
      const armed = async () => {
        for (let i = 0; i < 100 && clock.pending().length === 0; i++)
          await new Promise((r) => setTimeout(r, 10));
        return clock.pending();
      };
      assert.deepEqual(await armed(), [1200], "the timer is set for the certificate's due time, not an hour");
      assert.equal(issuer.calls.length, 1, "not renewed before it is due");
      clock.advance(1200);
      // The issuer counts a call when the order starts; the store records the renewal after the install.
      const planned = async () =>
        Date.parse((await domains.findDomain("shop.example.test"))?.nextAttemptAt ?? "") >
        clock.now() + 86_400_000;
      for (let i = 0; i < 100 && !(issuer.calls.length >= 2 && (await planned())); i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(issuer.calls.length, 2, "renewed when due");
      assert.ok(await planned(), "the next renewal is planned");
    } finally {
      service.stop();
    }
  });

  it("a first issue that fails leaves the domain failed (HTTP routing stays)", async () => {
    const { service, app, settled, issuer, tls, refreshed } = await setup();
    issuer.refuse = "urn:ietf:params:acme:error:rejectedIdentifier";
    const web = await app("web");
    await service.add(web, "www.example.test");
    const d = await settled("www.example.test");
    assert.equal(d.state, "failed");
    assert.match(d.lastError ?? "", /rejectedIdentifier/);
    assert.equal(tls.certs.size, 0);
    assert.deepEqual(refreshed, [web.id]);
    assert.match(
      await code(service.renew(web, "www.example.test", { admin: true })),
      /^ACME_ERROR .*rejectedIdentifier/,
    );
  });

  it("keeps the edge in step with the store: a missing certificate is installed, a deleted domain's removed", async () => {
    const { service, app, settled, tls, store } = await setup();
    const web = await app("web");
    await service.add(web, "shop.example.test");
    await settled("shop.example.test");
    tls.certs.clear();
    tls.certs.set("gone.example.test", "old");
    await service.tick();
    assert.deepEqual([...tls.certs.keys()], ["shop.example.test"]);
    await store.deleteApp(web.id); // its domains go with it
    await service.tick();
    assert.equal(tls.certs.size, 0);
  });

  it("a user's certificate: checked against the key and the name, not renewed; ACME off leaves domains pending", async () => {
    const { service, app, tls, issuer, domains } = await setup(false);
    const web = await app("web");
    const v = await service.add(web, "other.example.test");
    assert.equal(v.state, "pending");
    assert.equal(v.nextAttemptAt, null);
    assert.match(
      await code(service.renew(web, "other.example.test", { admin: true })),
      /^CONFLICT ACME is off/,
    );
    assert.match(
      await code(service.setCertificate(web, "shop.example.test", { certPem: LEAF, keyPem: OTHER_KEY })),
      /^CERTIFICATE_INVALID The private key does not match the certificate/,
    );
    assert.equal(await domains.findDomain("shop.example.test"), null, "nothing added on a refusal");
    const set = await service.setCertificate(web, "shop.example.test", { certPem: LEAF, keyPem: LEAF_KEY });
    assert.equal(set.source, "user");
    assert.equal(set.state, "issued");
    assert.equal(set.nextAttemptAt, null);
    assert.ok(tls.certs.has("shop.example.test"));
    await service.tick();
    assert.deepEqual(issuer.calls, []);
    assert.match(
      await code(service.renew(web, "shop.example.test", { admin: true })),
      /^CONFLICT shop\.example\.test serves your own certificate: Pier does not renew it/,
    );
    assert.deepEqual(issuer.calls, [], "a renewal does not replace the user's certificate");
    assert.equal((await domains.findDomain("shop.example.test"))?.source, "user");
  });

  it("renew --acme switches a domain with the user's certificate to one from the ACME server", async () => {
    const { service, app, issuer, domains } = await setup();
    const web = await app("web");
    await service.setCertificate(web, "shop.example.test", { certPem: LEAF, keyPem: LEAF_KEY });
    assert.match(
      await code(service.renew(web, "shop.example.test", { admin: true })),
      /^CONFLICT .*your own certificate/,
    );
    const v = await service.renew(web, "shop.example.test", { admin: true, toAcme: true });
    assert.equal(v.source, "acme");
    assert.equal(issuer.calls.length, 1);
    assert.equal((await domains.findDomain("shop.example.test"))?.source, "acme");
  });

  const many = async (n: number, acme = true, retryBaseMs?: number) => {
    const t = await setup(acme, retryBaseMs);
    const web = await t.app("web");
    const names = Array.from({ length: n }, (_, i) => `d${i}.example.test`);
    for (const name of names) await t.service.add(web, name);
    for (const name of names) await t.settled(name);
    return { ...t, web, names };
  };

  it("hundreds of domains added at once: one ACME order at a time, each gets its certificate", async () => {
    const { issuer, names, domains } = await many(200);
    assert.equal(issuer.maxActive, 1, "never two orders at once");
    assert.equal(issuer.calls.length, 200);
    for (const name of names) assert.equal((await domains.findDomain(name))?.state, "issued");
  });

  it("an ACME server that is down: one domain tried, not every due one; after the pause all are renewed", async () => {
    const { issuer, names, domains, service, clock } = await many(50);
    for (const name of names) await domains.updateDomain(name, { nextAttemptAt: clock.iso(-1000) });
    issuer.calls = [];
    issuer.down = true;
    await service.tick();
    assert.equal(issuer.calls.length, 1, "the first failure pauses every automatic attempt");
    await service.tick();
    assert.equal(issuer.calls.length, 1, "still paused: no attempt");
    const failed = (await domains.listDomains()).filter((d) => d.failures > 0);
    assert.equal(failed.length, 1);
    assert.match(failed[0]?.lastError ?? "", /unavailable/);
    for (const d of await domains.listDomains()) assert.equal(d.state, "issued", "certificates keep serving");
    issuer.down = false;
    clock.advance(5 * 60_000 - 1);
    await service.tick();
    assert.equal(issuer.calls.length, 1, "the pause (5 min, the first retry's wait) is not over");
    clock.advance(1);
    await service.tick();
    assert.equal(issuer.calls.length, 51, "after the pause: every due domain, one by one");
    for (const d of await domains.listDomains()) assert.equal(d.failures, 0);
  });

  it("a domain added while the ACME server's outage pauses every attempt says why it waits, and until when", async () => {
    const { issuer, names, domains, service, app, settled, clock } = await many(2, true, 60_000);
    for (const name of names) await domains.updateDomain(name, { nextAttemptAt: clock.iso(-1000) });
    issuer.calls = [];
    issuer.down = true;
    await service.tick();
    assert.equal(issuer.calls.length, 1);
    await service.add(await app("late"), "late.example.test");
    const d = await settled("late.example.test");
    assert.equal(issuer.calls.length, 1, "no attempt during the pause");
    assert.equal(d.state, "failed");
    assert.match(d.lastError ?? "", /unavailable, no certificate for late\.example\.test: no answer/);
    assert.equal(d.nextAttemptAt, clock.iso(60_000), "the next attempt is the pause's end");
  });

  it("an app's token waits out its domain's backoff (the ACME account is shared); an admin's goes now", async () => {
    const { service, app, settled, issuer } = await setup();
    issuer.refuse = "urn:ietf:params:acme:error:unauthorized";
    const web = await app("web");
    await service.add(web, "www.example.test");
    await settled("www.example.test");
    assert.match(
      await code(service.renew(web, "www.example.test", { admin: false })),
      /^CONFLICT The last attempt for www\.example\.test failed \(.*unauthorized\); the next is at 20/,
    );
    assert.equal(issuer.calls.length, 1, "no new order");
    issuer.refuse = null;
    const v = await service.renew(web, "www.example.test", { admin: true });
    assert.equal(v.state, "issued");
    assert.equal(issuer.calls.length, 2);
    const again = await service.renew(web, "www.example.test", { admin: false });
    assert.equal(again.state, "issued", "no failure to wait out: the app's token renews");
  });

  it("a user's certificate the edge refuses: nothing recorded, the domain it would add not left behind", async () => {
    const { service, app, tls, domains, refreshed } = await setup(false);
    const web = await app("web");
    tls.refuse = true;
    assert.match(
      await code(service.setCertificate(web, "shop.example.test", { certPem: LEAF, keyPem: LEAF_KEY })),
      /^EDGE_ERROR HAProxy refused/,
    );
    assert.equal(await domains.findDomain("shop.example.test"), null, "not left pending forever");
    assert.deepEqual(refreshed, [web.id, web.id], "routed, then unrouted");
  });

  it("the store failing after the edge took a certificate: the edge goes back to the one the store knows", async () => {
    const { service, app, settled, tls, domains } = await setup();
    const web = await app("web");
    await service.add(web, "shop.example.test");
    await settled("shop.example.test");
    const served = tls.certs.get("shop.example.test");
    const update = domains.updateDomain.bind(domains);
    domains.updateDomain = async (name, patch, cert) => {
      if (cert) throw new Error("disk I/O error");
      return update(name, patch, cert);
    };
    assert.match(await code(service.renew(web, "shop.example.test", { admin: true })), /disk I\/O error/);
    assert.equal(tls.certs.get("shop.example.test"), served, "the previous certificate serves");
    assert.equal((await domains.findDomain("shop.example.test"))?.failures, 1, "the failure is recorded");
    await assert.rejects(
      service.setCertificate(web, "new.apps.example.test", { certPem: LEAF, keyPem: LEAF_KEY }),
      /disk I\/O error/,
    );
    assert.equal(tls.certs.has("new.apps.example.test"), false, "not served: the store does not know it");
  });

  it("two adds of one name at once, by two apps: one owner, the other refused naming it", async () => {
    const { service, app, domains, settled } = await setup();
    const web = await app("web");
    const api = await app("api");
    const [a, b] = await Promise.allSettled([
      service.add(web, "race.example.test"),
      service.add(api, "race.example.test"),
    ]);
    const won = [a, b].filter((r) => r.status === "fulfilled");
    const lost = [a, b].filter((r) => r.status === "rejected");
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    const owner = (won[0] as PromiseFulfilledResult<{ app: string }>).value.app;
    assert.equal((await domains.findDomain("race.example.test"))?.appId, `app-${owner}`);
    assert.match(
      String((lost[0] as PromiseRejectedResult).reason),
      new RegExp(`belongs to the app ${owner}`),
    );
    await settled("race.example.test");
  });

  it("a domain the edge could not route is not recorded", async () => {
    const { app, domains, issuer } = await setup();
    const web = await app("web");
    const failing = new DomainService({
      store: domains,
      tls: new FakeTls(),
      issuer,
      refreshEdge: async () => {
        throw new PierError("EDGE_ERROR", "HAProxy rejected the new edge configuration");
      },
      logger: pino({ level: "silent" }),
      pierDomain: "pier.test",
      httpsPort: 443,
    });
    assert.match(await code(failing.add(web, "www.example.test")), /^EDGE_ERROR/);
    assert.equal(await domains.findDomain("www.example.test"), null);
    assert.deepEqual(issuer.calls, []);
  });

  it("a user's certificate set while an ACME order is under way is not replaced by it", async () => {
    const { service, app, domains, issuer } = await setup();
    const web = await app("web");
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const obtain = issuer.obtain.bind(issuer);
    issuer.obtain = async (name, edge) => {
      await gate;
      return obtain(name, edge);
    };
    await service.add(web, "shop.example.test");
    await service.setCertificate(web, "shop.example.test", { certPem: LEAF, keyPem: LEAF_KEY });
    release();
    for (let i = 0; i < 50 && issuer.calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    const d = await domains.findDomain("shop.example.test");
    assert.equal(d?.source, "user");
    assert.equal(d?.nextAttemptAt, null, "and never renewed by Pier");
  });
});
