// The conformance suite of AddonProvider (ADR 0015): every provider (kv, postgresql, mysql) passes the same cases
// on the real engine: provisioning with the flavor's memory, reachability only from the networks it is
// connected to, the password, data that survives a restart, a backup restored exactly, a failed restore
// that changes nothing, and a removal that leaves nothing.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { kvProvider } from "../../src/adapters/addons/kv.js";
import { mysqlProvider } from "../../src/adapters/addons/mysql.js";
import { postgresqlProvider } from "../../src/adapters/addons/postgresql.js";
import { DockerEngine } from "../../src/adapters/engine/docker.js";
import { SecretBox } from "../../src/adapters/secret-box.js";
import { SqliteStore } from "../../src/adapters/store/sqlite.js";
import type { AddonCredentials } from "../../src/core/addons.js";
import { addonVariables } from "../../src/core/addons.js";
import { FLAVOR_MEMORY_MIB } from "../../src/core/model.js";
import type { AddonProvider } from "../../src/core/ports.js";
import { type Cidr, DEFAULT_SUBNET_POOL, parseCidr } from "../../src/core/subnets.js";
import { Networks } from "../../src/server/networks.js";
import { run } from "./harness.js";

const SOCKET = "/var/run/docker.sock";
const DOCKER = "/usr/bin/docker";
const scope = `test-${randomBytes(4).toString("hex")}`;

/** How a client talks to each kind: one command, run in a container of the add-on's image. */
interface Client {
  image: string;
  write(host: string, c: AddonCredentials, value: string): string[];
  read(host: string, c: AddonCredentials): string[];
  /** A client that keeps a connection open for 60 s (a restore must not wait for it, nor fail). */
  hold(host: string, c: AddonCredentials): string[];
}

/** The MariaDB client as an app connects: over tcp, the add-on's user, password and database. */
const mariadb = (h: string, c: AddonCredentials, sql: string) => [
  "mariadb",
  "--no-defaults",
  `--host=${h}`,
  `--user=${c.user}`,
  `--password=${c.password}`,
  "--skip-column-names",
  c.database,
  "-e",
  sql,
];

const CLIENTS: Record<string, Client> = {
  kv: {
    image: "pier/addon-kv:8",
    write: (h, c, v) => [
      "valkey-cli",
      "-h",
      h,
      "-p",
      "6378",
      "--no-auth-warning",
      "-a",
      c.password,
      "SET",
      "k",
      v,
    ],
    read: (h, c) => ["valkey-cli", "-h", h, "-p", "6378", "--no-auth-warning", "-a", c.password, "GET", "k"],
    hold: (h, c) => [
      "valkey-cli",
      "-h",
      h,
      "-p",
      "6378",
      "--no-auth-warning",
      "-a",
      c.password,
      "BLPOP",
      "nothing",
      "60",
    ],
  },
  postgresql: {
    image: "pier/addon-postgresql:17",
    write: (h, c, v) => [
      "psql",
      addonVariables("postgresql", h, c).DATABASE_URL as string,
      "-v",
      "ON_ERROR_STOP=1",
      "-qAt",
      "-c",
      `CREATE TABLE IF NOT EXISTS t (v text); DELETE FROM t; INSERT INTO t VALUES ('${v}');`,
    ],
    read: (h, c) => [
      "psql",
      addonVariables("postgresql", h, c).DATABASE_URL as string,
      "-v",
      "ON_ERROR_STOP=1",
      "-qAt",
      "-c",
      "SELECT v FROM t",
    ],
    hold: (h, c) => [
      "psql",
      addonVariables("postgresql", h, c).DATABASE_URL as string,
      "-c",
      "SELECT pg_sleep(60)",
    ],
  },
  mysql: {
    image: "pier/addon-mysql:11",
    write: (h, c, v) =>
      mariadb(h, c, `CREATE TABLE IF NOT EXISTS t (v text); DELETE FROM t; INSERT INTO t VALUES ('${v}');`),
    read: (h, c) => mariadb(h, c, "SELECT v FROM t"),
    // An open transaction that read the table holds it: the restore's RENAME TABLE must not wait for it.
    hold: (h, c) => mariadb(h, c, "START TRANSACTION; SELECT COUNT(*) FROM t; SELECT SLEEP(60);"),
  },
};

/** Runs a client command in a throwaway container on `network`. */
async function client(kind: string, network: string, argv: string[]) {
  const c = CLIENTS[kind] as Client;
  return run(
    [
      DOCKER,
      "run",
      "--rm",
      "--network",
      network,
      "--entrypoint",
      argv[0] as string,
      c.image,
      ...argv.slice(1),
    ],
    { timeoutMs: 60_000 },
  );
}

const work = mkdtempSync(join(tmpdir(), "pier-addons-"));
const store = new SqliteStore(join(work, "pier.db"), SecretBox.fromFile(join(work, "secret.key")));
const engine = new DockerEngine({ socketPath: SOCKET, scope, sandboxImage: "pier/base:bookworm" });
// The add-on containers on the engine's own networks: Pier's isolation rules (ADR 0019) are not what this
// file tests (test/e2e/isolation-window.test.ts does), so none are added.
const networks = new Networks({
  engine,
  store,
  pool: parseCidr(DEFAULT_SUBNET_POOL) as Cidr,
  prefix: 26,
  isolation: { add: async () => undefined, remove: async () => undefined },
});
const made: string[] = [];
async function network(tag: string): Promise<string> {
  const name = `pier-test-${scope}-${tag}`;
  await networks.ensure(name, `test-${tag}`, null, { "pier.test": scope });
  made.push(name);
  return name;
}

after(async () => {
  await engine.removeNetworks({ "pier.test": scope }).then((gone) => store.releaseSubnets(gone));
  store.close();
  rmSync(work, { recursive: true, force: true });
});

const PROVIDERS: AddonProvider[] = [
  kvProvider({ socketPath: SOCKET, scope }),
  postgresqlProvider({ socketPath: SOCKET, scope }),
  mysqlProvider({ socketPath: SOCKET, scope }),
];

for (const p of PROVIDERS) {
  describe(`AddonProvider conformance: ${p.kind}`, { timeout: 240_000 }, () => {
    const id = `adn-${randomBytes(6).toString("hex")}`;
    const creds = p.credentials("conf-db");
    let own = "";
    let other = "";
    const host = p.host(id);

    before(async () => {
      own = await network(`${p.kind}-own`);
      other = await network(`${p.kind}-other`);
      await p.provision({
        id,
        name: "conf-db",
        flavor: "pico",
        memoryBytes: FLAVOR_MEMORY_MIB.pico * 2 ** 20,
        credentials: creds,
        network: own,
      });
    });
    after(async () => {
      await p.remove(id).catch(() => undefined);
    });

    it("runs with the flavor's memory limit, on its own network, and provisioning again changes nothing", async () => {
      const s = await p.status(id);
      assert.equal(s.state, "running");
      assert.deepEqual(s.networks, [own]);
      const mem = await run([DOCKER, "inspect", "-f", "{{.HostConfig.Memory}}", host]);
      assert.equal(mem.stdout.trim(), String(FLAVOR_MEMORY_MIB.pico * 2 ** 20));
      await p.provision({
        id,
        name: "conf-db",
        flavor: "pico",
        memoryBytes: FLAVOR_MEMORY_MIB.pico * 2 ** 20,
        credentials: creds,
        network: own,
      });
      assert.equal((await p.status(id)).state, "running");
    });

    it("answers with its password on its networks, refuses a wrong one, and is unreachable elsewhere", async () => {
      const w = await client(p.kind, own, CLIENTS[p.kind]!.write(host, creds, "one"));
      assert.equal(w.code, 0, w.stderr);
      const r = await client(p.kind, own, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(r.stdout.trim(), "one");
      const wrong = await client(
        p.kind,
        own,
        CLIENTS[p.kind]!.read(host, { ...creds, password: "wrong-password" }),
      );
      assert.ok(wrong.code !== 0 || !wrong.stdout.includes("one"), "a wrong password is refused");
      assert.match(
        wrong.stdout + wrong.stderr,
        /WRONGPASS|NOAUTH|password authentication failed|Access denied for user/,
      );
      // The host name does not resolve on another network, nor does its address answer there.
      const elsewhere = await client(p.kind, other, CLIENTS[p.kind]!.read(host, creds));
      assert.notEqual(elsewhere.stdout.trim(), "one");
      const ip = (
        await run([DOCKER, "inspect", "-f", `{{(index .NetworkSettings.Networks "${own}").IPAddress}}`, host])
      ).stdout.trim();
      assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
      const byIp = await client(p.kind, other, ["timeout", "5", ...CLIENTS[p.kind]!.read(ip, creds)]);
      assert.notEqual(byIp.code, 0, "the add-on's address is not reachable from another network");
    });

    it("is reachable from a network once connected to it, and no longer once disconnected", async () => {
      await p.connect(id, other);
      await p.connect(id, other); // twice: no error
      assert.deepEqual((await p.status(id)).networks, [own, other].sort());
      const r = await client(p.kind, other, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(r.stdout.trim(), "one", r.stderr);
      await p.disconnect(id, other);
      await p.disconnect(id, other);
      const gone = await client(p.kind, other, ["timeout", "5", ...CLIENTS[p.kind]!.read(host, creds)]);
      assert.notEqual(gone.stdout.trim(), "one");
    });

    it("keeps its data across a restart", async () => {
      await client(p.kind, own, CLIENTS[p.kind]!.write(host, creds, "two"));
      await p.restart(id);
      const r = await client(p.kind, own, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(r.stdout.trim(), "two", r.stderr);
    });

    it("restores a backup exactly; a bad backup changes nothing", async () => {
      const file = join(work, `${p.kind}.backup`);
      const bytes = await p.backup(id, file);
      assert.ok(bytes > 0);
      await client(p.kind, own, CLIENTS[p.kind]!.write(host, creds, "three"));
      // A client connected meanwhile (an app's pool) neither blocks nor breaks the restore.
      const holder = `pier-test-${scope}-${p.kind}-holder`;
      const hold = CLIENTS[p.kind]!.hold(host, creds);
      await run([
        DOCKER,
        "run",
        "-d",
        "--rm",
        "--name",
        holder,
        "--network",
        own,
        "--entrypoint",
        hold[0] as string,
        CLIENTS[p.kind]!.image,
        ...hold.slice(1),
      ]);
      await new Promise((r) => setTimeout(r, 1000));
      await p.restore(id, file).finally(() => run([DOCKER, "rm", "-f", holder]));
      const r = await client(p.kind, own, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(r.stdout.trim(), "two", r.stderr);
      const bad = join(work, `${p.kind}.bad`);
      writeFileSync(bad, "this is not a backup\n".repeat(100));
      await assert.rejects(p.restore(id, bad), /could not be restored/);
      const after = await client(p.kind, own, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(after.stdout.trim(), "two", after.stderr);
      assert.equal((await p.status(id)).state, "running");
    });

    it("made again on its volume with networks to join: it is on them once it answers, with its data", async () => {
      await run([DOCKER, "rm", "-f", host]);
      assert.equal((await p.status(id)).state, "missing");
      await p.provision({
        id,
        name: "conf-db",
        flavor: "pico",
        memoryBytes: FLAVOR_MEMORY_MIB.pico * 2 ** 20,
        credentials: creds,
        network: own,
        joins: [other],
      });
      const s = await p.status(id);
      assert.equal(s.state, "running");
      assert.deepEqual(s.networks, [own, other].sort());
      // At once, from the joined network: nothing to wait for once provision returned.
      const r = await client(p.kind, other, CLIENTS[p.kind]!.read(host, creds));
      assert.equal(r.stdout.trim(), "two", r.stderr);
      await p.disconnect(id, other);
    });

    it("remove leaves neither container nor volume", async () => {
      await p.remove(id);
      assert.equal((await p.status(id)).state, "missing");
      const vols = await run([DOCKER, "volume", "ls", "-q", "--filter", `label=pier.addon=${id}`]);
      assert.equal(vols.stdout.trim(), "");
      await p.remove(id); // twice: no error
    });
  });
}
