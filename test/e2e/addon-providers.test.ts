import { addonProviders } from "../../src/adapters/addons/providers.js";
import type { AddonCredentials, AddonKind } from "../../src/core/addons.js";
import { addonVariables } from "../../src/core/addons.js";
import { LABEL } from "../../src/core/labels.js";
import { type AddonClient, addonProviderConformance } from "../conformance/addon-provider.js";
import { addonTestBed } from "./addon-bed.js";
import { run } from "./harness.js";

const _SOCKET = "/var/run/docker.sock";
const DOCKER = "/usr/bin/docker";

/** How a client talks to each kind: one command, run in a container of the add-on's image. */
interface Client {
  image: string;
  write(host: string, c: AddonCredentials, value: string): string[];
  read(host: string, c: AddonCredentials): string[];
  /** A client that keeps a connection open for 60 s (a restore must not wait for it, nor fail). */
  hold(host: string, c: AddonCredentials): string[];
  /** The docker options that reach the add-on other than its network (fs: its volume, as an app mounts it). */
  reach?: (host: string) => string[];
}

const kvCli = (h: string, c: AddonCredentials, ...cmd: string[]) => [
  "valkey-cli",
  "-h",
  h,
  "-p",
  "6378",
  "--no-auth-warning",
  "-a",
  c.password,
  ...cmd,
];
const psql = (h: string, c: AddonCredentials, sql: string, ...opts: string[]) => [
  "psql",
  addonVariables("postgresql", h, c).DATABASE_URL as string,
  ...opts,
  "-c",
  sql,
];

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

const CLIENTS: Record<AddonKind, Client> = {
  kv: {
    image: "pier/addon-kv:8",
    write: (h, c, v) => kvCli(h, c, "SET", "k", v),
    read: (h, c) => kvCli(h, c, "GET", "k"),
    hold: (h, c) => kvCli(h, c, "BLPOP", "nothing", "60"),
  },
  postgresql: {
    image: "pier/addon-postgresql:17",
    write: (h, c, v) =>
      psql(
        h,
        c,
        `CREATE TABLE IF NOT EXISTS t (v text); DELETE FROM t; INSERT INTO t VALUES ('${v}');`,
        "-v",
        "ON_ERROR_STOP=1",
        "-qAt",
      ),
    read: (h, c) => psql(h, c, "SELECT v FROM t", "-v", "ON_ERROR_STOP=1", "-qAt"),
    hold: (h, c) => psql(h, c, "SELECT pg_sleep(60)"),
  },
  mysql: {
    image: "pier/addon-mysql:11",
    write: (h, c, v) =>
      mariadb(h, c, `CREATE TABLE IF NOT EXISTS t (v text); DELETE FROM t; INSERT INTO t VALUES ('${v}');`),
    read: (h, c) => mariadb(h, c, "SELECT v FROM t"),
    // An open transaction that read the table holds it: the restore's RENAME TABLE must not wait for it.
    hold: (h, c) => mariadb(h, c, "START TRANSACTION; SELECT COUNT(*) FROM t; SELECT SLEEP(60);"),
  },
  // A bucket is reached by its mount, as the instances of a linked app (uid 10000) mount it; no password.
  fs: {
    image: "pier/addon-fs:1",
    write: (_h, _c, v) => ["sh", "-c", `echo ${v} > /bucket/value`],
    read: () => ["cat", "/bucket/value"],
    // A file held open, as an app's log or upload in progress.
    hold: () => ["sh", "-c", "exec 3</bucket/value; sleep 60"],
    reach: (h) => ["-v", `${h}-data:/bucket`],
  },
};

/** Runs a client command in a throwaway container on `network` (bounded: an address that never answers). */
async function client(kind: AddonKind, network: string, host: string, argv: string[]) {
  const r = await run(
    [
      DOCKER,
      "run",
      "--rm",
      ...(CLIENTS[kind].reach?.(host) ?? []),
      "--network",
      network,
      "--entrypoint",
      "timeout",
      CLIENTS[kind].image,
      "10",
      ...argv,
    ],
    { timeoutMs: 60_000 },
  );
  return { code: r.code ?? 1, stdout: r.stdout.trim(), stderr: r.stderr };
}

const clients: AddonClient = {
  write: (kind, network, host, c, value) => client(kind, network, host, CLIENTS[kind].write(host, c, value)),
  read: (kind, network, host, c) => client(kind, network, host, CLIENTS[kind].read(host, c)),
  async holding(kind, network, host, c, work) {
    const holder = `pier-test-${scope}-${kind}-holder`;
    const hold = CLIENTS[kind].hold(host, c);
    await run([
      DOCKER,
      "run",
      "-d",
      "--rm",
      "--name",
      holder,
      ...(CLIENTS[kind].reach?.(host) ?? []),
      "--network",
      network,
      "--entrypoint",
      hold[0] as string,
      CLIENTS[kind].image,
      ...hold.slice(1),
    ]);
    await new Promise((r) => setTimeout(r, 1000));
    try {
      return await work();
    } finally {
      await run([DOCKER, "rm", "-f", holder]);
    }
  },
};

const bed = addonTestBed("addons");
const { scope, engine } = bed;

addonProviderConformance("the Docker adapter", {
  providers: Object.values(addonProviders(engine)),
  servers: engine,
  client: clients,
  network: (tag) => bed.network(tag),
  async lose(id) {
    await run([DOCKER, "rm", "-f", `pier-addon-${id}`]);
  },
  async dataLeft(id) {
    const vols = await run([DOCKER, "volume", "ls", "-q", "--filter", `label=${LABEL.addon}=${id}`]);
    return vols.stdout.split("\n").filter(Boolean);
  },
  cleanUp: () => bed.cleanUp(),
});
