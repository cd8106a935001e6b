// The AddonProvider port's contract (ADR 0015), one suite for every kind and every engine: provisioning with
// the flavor's memory, reachability only from the networks it is connected to, the password, data that
// survives a restart, a backup restored exactly, a failed restore that changes nothing, a server made again
// on its data joining its networks before it answers, and a removal that leaves nothing. The providers over
// the Docker adapter pass it in test/e2e/addon-providers.test.ts (real servers, real clients); the same
// providers over the fake engine in test/unit/adapters/addon-providers.test.ts (its played servers).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type AddonCredentials, type AddonKind, hasProtocol } from "../../src/core/addons.js";
import { FLAVOR_MEMORY_MIB } from "../../src/core/model.js";
import type { AddonProvider, AddonServers, AddonSpec } from "../../src/core/ports.js";

/** What a client of the add-on's protocol printed (`stdout` trimmed: the value read) and its exit code. */
export interface ClientResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A client of each kind, run from `network`, reaching the add-on at `host` (its name or an address). */
export interface AddonClient {
  /** Stores `value` (kv: the key `k`; postgresql: the one row of a table). */
  write(
    kind: AddonKind,
    network: string,
    host: string,
    c: AddonCredentials,
    value: string,
  ): Promise<ClientResult>;
  /** Reads what `write` stored: `stdout` is the value. */
  read(kind: AddonKind, network: string, host: string, c: AddonCredentials): Promise<ClientResult>;
  /** Runs `work` while a client holds a connection to the add-on open (an app's pool). */
  holding<T>(
    kind: AddonKind,
    network: string,
    host: string,
    c: AddonCredentials,
    work: () => Promise<T>,
  ): Promise<T>;
}

export interface AddonProvidersUnderTest {
  providers: AddonProvider[];
  /** The engine the providers run on: what it says of a server (memory, addresses). */
  servers: AddonServers;
  /** A network of Pier's (a subnet of its pool), made for this run; `tag` is unique in the run. */
  network(tag: string): Promise<string>;
  client: AddonClient;
  /** The add-on's server is gone as if removed outside Pier (a crash, a `docker rm`); its data stays. */
  lose(id: string): Promise<void>;
  /** What the engine still keeps of the add-on's data (on Docker: its volumes), by name. */
  dataLeft(id: string): Promise<string[]>;
  /** Removes whatever the suite made. */
  cleanUp(): Promise<void>;
}

const PICO = FLAVOR_MEMORY_MIB.pico * 2 ** 20;

/** Runs the AddonProvider contract on each provider of `t`. */
export function addonProviderConformance(name: string, t: AddonProvidersUnderTest): void {
  const work = mkdtempSync(join(tmpdir(), "pier-addon-conformance-"));
  after(async () => {
    await t.cleanUp();
    rmSync(work, { recursive: true, force: true });
  });
  for (const p of t.providers) providerCases(`${name}: ${p.kind}`, t, p, work);
}

function providerCases(name: string, t: AddonProvidersUnderTest, p: AddonProvider, work: string): void {
  describe(`AddonProvider conformance, ${name}`, { timeout: 240_000 }, () => {
    const id = `adn-${randomBytes(6).toString("hex")}`;
    const creds = p.credentials("conf-db");
    const host = p.host(id);
    const c = t.client;
    let own = "";
    let other = "";
    const spec = (over: Partial<AddonSpec> = {}): AddonSpec => ({
      id,
      name: "conf-db",
      flavor: "pico",
      memoryBytes: PICO,
      credentials: creds,
      network: own,
      ...over,
    });

    before(async () => {
      own = await t.network(`${p.kind}-own`);
      other = await t.network(`${p.kind}-other`);
      await p.provision(spec());
    });
    after(async () => {
      await p.remove(id).catch(() => undefined);
    });

    it("runs with the flavor's memory limit, on its own network, and provisioning again changes nothing", async () => {
      const s = await p.status(id);
      assert.equal(s.state, "running");
      assert.deepEqual(s.networks, [own]);
      assert.equal((await t.servers.addonServer(id))?.memoryBytes, PICO);
      await p.provision(spec());
      assert.equal((await p.status(id)).state, "running");
    });

    // fs speaks no protocol on one engine (a bucket is mounted: the engine suite holds the mount, the links
    // who gets it); its kind has no network cases until the Swarm driver's NFS (issue 18).
    if (hasProtocol(p.kind)) {
      it("answers with its password on its networks, refuses a wrong one, and is unreachable elsewhere", async () => {
        const w = await c.write(p.kind, own, host, creds, "one");
        assert.equal(w.code, 0, w.stderr);
        assert.equal((await c.read(p.kind, own, host, creds)).stdout, "one");
        const wrong = await c.read(p.kind, own, host, { ...creds, password: "wrong-password" });
        assert.ok(wrong.code !== 0 || !wrong.stdout.includes("one"), "a wrong password is refused");
        assert.match(
          wrong.stdout + wrong.stderr,
          /WRONGPASS|NOAUTH|password authentication failed|Access denied for user/,
        );
        // The host name does not resolve on another network, nor does its address answer there.
        assert.notEqual((await c.read(p.kind, other, host, creds)).stdout, "one");
        const ip = (await t.servers.addonServer(id))?.addresses[own] ?? "";
        assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
        const byIp = await c.read(p.kind, other, ip, creds);
        assert.notEqual(byIp.code, 0, "the add-on's address is not reachable from another network");
      });

      it("is reachable from a network once connected to it, and no longer once disconnected", async () => {
        await p.connect(id, other);
        await p.connect(id, other); // twice: no error
        assert.deepEqual((await p.status(id)).networks, [own, other].sort());
        const r = await c.read(p.kind, other, host, creds);
        assert.equal(r.stdout, "one", r.stderr);
        await p.disconnect(id, other);
        await p.disconnect(id, other);
        assert.notEqual((await c.read(p.kind, other, host, creds)).stdout, "one");
      });
    }

    it("keeps its data across a restart", async () => {
      await c.write(p.kind, own, host, creds, "two");
      await p.restart(id);
      assert.equal((await c.read(p.kind, own, host, creds)).stdout, "two");
    });

    it("restores a backup exactly; a bad backup changes nothing", async () => {
      const file = join(work, `${p.kind}.backup`);
      assert.ok((await p.backup(id, file)) > 0);
      await c.write(p.kind, own, host, creds, "three");
      // A client connected meanwhile (an app's pool) neither blocks nor breaks the restore.
      await c.holding(p.kind, own, host, creds, () => p.restore(id, file));
      assert.equal((await c.read(p.kind, own, host, creds)).stdout, "two");
      const bad = join(work, `${p.kind}.bad`);
      writeFileSync(bad, "this is not a backup\n".repeat(100));
      await assert.rejects(p.restore(id, bad), /could not be restored/);
      assert.equal((await c.read(p.kind, own, host, creds)).stdout, "two");
      assert.equal((await p.status(id)).state, "running");
    });

    it("made again on its data with networks to join: it is on them once it answers, with its data", async () => {
      await t.lose(id);
      assert.equal((await p.status(id)).state, "missing");
      await p.provision(spec({ joins: [other] }));
      const s = await p.status(id);
      assert.equal(s.state, "running");
      assert.deepEqual(s.networks, [own, other].sort());
      // At once, from the joined network: nothing to wait for once provision returned.
      assert.equal((await c.read(p.kind, other, host, creds)).stdout, "two");
      await p.disconnect(id, other);
    });

    it("remove leaves neither server nor data", async () => {
      await p.remove(id);
      assert.equal((await p.status(id)).state, "missing");
      assert.deepEqual(await t.dataLeft(id), []);
      await p.remove(id); // twice: no error
    });
  });
}
