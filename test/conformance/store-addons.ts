/**
 * The Store's contract for add-ons, links, published variables, backups, custom domains and ACME accounts
 * (part of test/conformance/store.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { codeOf, newApp, type StoreFactory, withStore } from "./store.js";

const creds = (name: string) => ({ user: `u_${name}`, password: `pw-${name}-secret`, database: name });
const addon = (name: string) => ({ id: `adn-${name}`, name, kind: "kv" as const, flavor: "nano" as const });

export function addonConformance(factory: StoreFactory): void {
  describe("add-ons, links, published variables, backups", () => {
    it(
      "add-ons: created, found by id or name, listed by name, credentials round-trip; a taken name is CONFLICT",
      withStore(factory, async ({ addons }) => {
        const a = await addons.createAddon(addon("cache"), creds("cache"));
        // No node given: null (one dockerd); a swarm add-on keeps the node it is pinned to.
        assert.deepEqual({ ...a, createdAt: "" }, { ...addon("cache"), node: null, createdAt: "" });
        await addons.createAddon({ ...addon("db"), node: "node2" }, creds("db"));
        assert.equal((await addons.findAddon("db"))?.node, "node2");
        assert.deepEqual(await addons.findAddon("adn-cache"), a);
        assert.deepEqual(await addons.findAddon("cache"), a);
        assert.equal(await addons.findAddon("nope"), null);
        assert.deepEqual(
          (await addons.listAddons()).map((x) => x.name),
          ["cache", "db"],
        );
        assert.deepEqual(await addons.addonCredentials("adn-cache"), creds("cache"));
        assert.equal(await codeOf(addons.addonCredentials("adn-nope")), "NOT_FOUND");
        assert.equal(
          await codeOf(addons.createAddon({ ...addon("cache"), id: "adn-2" }, creds("x"))),
          "CONFLICT",
        );
        await addons.deleteAddon("adn-db");
        assert.equal(await addons.findAddon("db"), null);
      }),
    );

    it(
      "links: an app to add-ons and to apps, listed by name; twice is CONFLICT; unlink says if there was one",
      withStore(factory, async ({ store, addons }) => {
        for (const n of ["web", "api", "auth"]) await store.createApp(newApp(n));
        for (const n of ["db", "cache"]) await addons.createAddon(addon(n), creds(n));
        await addons.linkAddon("app-web", "adn-db");
        await addons.linkAddon("app-web", "adn-cache");
        await addons.linkAddon("app-api", "adn-db");
        assert.equal(await codeOf(addons.linkAddon("app-web", "adn-db")), "CONFLICT");
        assert.deepEqual(
          (await addons.linkedAddons("app-web")).map((a) => a.name),
          ["cache", "db"],
        );
        assert.deepEqual(await addons.addonApps("adn-db"), ["app-api", "app-web"]);
        await addons.linkApp("app-web", "app-auth");
        await addons.linkApp("app-web", "app-api");
        assert.equal(await codeOf(addons.linkApp("app-web", "app-api")), "CONFLICT");
        assert.deepEqual(
          (await addons.linkedApps("app-web")).map((a) => a.name),
          ["api", "auth"],
        );
        assert.deepEqual(await addons.linkedApps("app-api"), [], "a link has a direction");
        assert.equal(await addons.unlinkAddon("app-web", "adn-db"), true);
        assert.equal(await addons.unlinkAddon("app-web", "adn-db"), false);
        assert.equal(await addons.unlinkApp("app-web", "app-auth"), true);
        assert.equal(await addons.unlinkApp("app-web", "app-auth"), false);
        await addons.deleteAddon("adn-cache");
        assert.deepEqual(await addons.linkedAddons("app-web"), [], "a deleted add-on's links go");
      }),
    );

    it(
      "published variables round-trip by name; null removes one",
      withStore(factory, async ({ store, addons }) => {
        await store.createApp(newApp("auth"));
        await addons.setPublished("app-auth", "AUTH_URL", "http://auth");
        await addons.setPublished("app-auth", "AUTH_KEY", "k e y");
        assert.deepEqual(Object.entries(await addons.getPublished("app-auth")), [
          ["AUTH_KEY", "k e y"],
          ["AUTH_URL", "http://auth"],
        ]);
        await addons.setPublished("app-auth", "AUTH_KEY", null);
        assert.deepEqual(await addons.getPublished("app-auth"), { AUTH_URL: "http://auth" });
      }),
    );

    it(
      "backups: listed newest first, with the time given or now; deleted one by one, and with their add-on",
      withStore(factory, async ({ addons }) => {
        await addons.createAddon(addon("db"), creds("db"));
        const b = (id: string, createdAt?: string) =>
          addons.addBackup({
            id,
            addonId: "adn-db",
            file: `${id}.pgdump`,
            bytes: 4,
            automatic: true,
            createdAt,
          });
        const old = await b("bak-1", "2026-01-01T00:00:00.000Z");
        assert.equal(old.createdAt, "2026-01-01T00:00:00.000Z");
        await b("bak-2", "2026-01-02T00:00:00.000Z");
        const fresh = await b("bak-3");
        assert.ok(Date.parse(fresh.createdAt) > Date.parse("2026-01-02T00:00:00.000Z"));
        assert.deepEqual(
          (await addons.listBackups("adn-db")).map((x) => x.id),
          ["bak-3", "bak-2", "bak-1"],
        );
        await addons.deleteBackup("bak-2");
        assert.deepEqual(
          (await addons.listBackups("adn-db")).map((x) => x.id),
          ["bak-3", "bak-1"],
        );
        await addons.deleteAddon("adn-db");
        assert.deepEqual(await addons.listBackups("adn-db"), []);
      }),
    );
  });

  describe("custom domains and ACME accounts", () => {
    it(
      "a domain: added pending, one owner (CONFLICT naming it), listed by name, updated with its certificate",
      withStore(factory, async ({ store, domains }) => {
        for (const n of ["web", "api"]) await store.createApp(newApp(n));
        const d = await domains.addDomain({
          name: "www.example.test",
          appId: "app-web",
          nextAttemptAt: null,
        });
        assert.deepEqual([d.source, d.state, d.failures, d.lastError], ["acme", "pending", 0, null]);
        await domains.addDomain({
          name: "api.example.test",
          appId: "app-api",
          nextAttemptAt: "2026-01-01T00:00:00.000Z",
        });
        const clash = domains.addDomain({ name: "www.example.test", appId: "app-api", nextAttemptAt: null });
        await assert.rejects(clash, /belongs to the app web/);
        assert.equal(await codeOf(clash), "CONFLICT");
        assert.deepEqual(
          (await domains.listDomains()).map((x) => x.name),
          ["api.example.test", "www.example.test"],
        );
        assert.deepEqual(
          (await domains.listDomains("app-web")).map((x) => x.name),
          ["www.example.test"],
        );
        assert.equal(await domains.domainCertificate("www.example.test"), null);
        const pair = { certPem: "-----BEGIN CERTIFICATE-----\n", keyPem: "-----BEGIN PRIVATE KEY-----\n" };
        const u = await domains.updateDomain(
          "www.example.test",
          { state: "issued", failures: 2, issuer: undefined },
          pair,
        );
        assert.deepEqual([u.state, u.failures, u.issuer], ["issued", 2, null]);
        assert.deepEqual(await domains.findDomain("www.example.test"), u);
        assert.deepEqual(await domains.domainCertificate("www.example.test"), pair);
        assert.equal(
          await codeOf(domains.updateDomain("nope.example.test", { failures: 1 })),
          "DOMAIN_NOT_FOUND",
        );
        await domains.deleteDomain("www.example.test");
        assert.equal(await domains.findDomain("www.example.test"), null);
        assert.equal(await domains.domainCertificate("www.example.test"), null);
      }),
    );

    it(
      "ACME account keys: one per directory, replaced by a second save",
      withStore(factory, async ({ domains }) => {
        assert.equal(await domains.acmeAccountKey("https://acme.test/dir"), null);
        await domains.saveAcmeAccountKey("https://acme.test/dir", "KEY-1");
        await domains.saveAcmeAccountKey("https://other.test/dir", "KEY-O");
        await domains.saveAcmeAccountKey("https://acme.test/dir", "KEY-2");
        assert.equal(await domains.acmeAccountKey("https://acme.test/dir"), "KEY-2");
        assert.equal(await domains.acmeAccountKey("https://other.test/dir"), "KEY-O");
      }),
    );
  });
}
