// bench/addons: a kv, a postgresql and a mysql add-on, measured from a linked app's network, against bare servers
// in containers on the same network, in one run. The bare servers are the same images with the same
// settings (the add-on's entrypoint and environment: the flavor's memory, so the same shared_buffers and
// maxmemory, the same fsync and append-only settings) and their data on a named volume, as the add-on's;
// what differs is only what Pier adds: the memory and CPU limits of the flavor, the hardening, the
// add-on's own network. Both are reached the same way: by name, on the app's bridge (no published port,
// no docker-proxy). kv: valkey-benchmark (redis-benchmark's valkey build) SET and GET; postgresql: pgbench
// (TPC-B like, initialized once per server, a CHECKPOINT before each run so that no run pays for the
// previous one's dirty pages); mysql: mariadb-slap (from the image) running a TPC-B like transaction (an
// update, a read and an insert in a transaction) on 100,000 accounts. A warm-up run each, then rounds in alternating order (add-on first, then
// bare first, ...); it prints every run with the load average before it, the medians and their ratios
// (target: at least 0.9x). The machine is shared: figures taken at a load above ~1.5 are not trustworthy.
// Run: npm run build && node dist/bench/addons.js [flavor, default S] [seconds per pgbench run, default 10]
//      [rounds, default 5]
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { FLAVOR_MEMORY_MIB, type Flavor } from "../src/core/model.js";
import { Pier, run } from "../test/e2e/harness.js";

const FLAVOR = (process.argv[2] ?? "S") as Flavor;
const SECONDS = Number(process.argv[3] ?? 10);
const ROUNDS = Number(process.argv[4] ?? 5);
const DOCKER = "/usr/bin/docker";
const KV_IMAGE = "pier/addon-kv:8";
const PG_IMAGE = "pier/addon-postgresql:17";
const MY_IMAGE = "pier/addon-mysql:11";
/** mariadb-slap's run: 10 clients, 500 transactions per second of SECONDS (about SECONDS s here). */
const MY_CLIENTS = 10;
const MY_TRANSACTIONS = SECONDS * 500;
const MY_TRANSACTION = [
  "START TRANSACTION",
  "SET @a = FLOOR(1 + RAND() * 100000)",
  "UPDATE accounts SET balance = balance + 1 WHERE id = @a",
  "SELECT balance FROM accounts WHERE id = @a",
  "INSERT INTO history (aid, delta) VALUES (@a, 1)",
  "COMMIT",
];
const PASSWORD = "bench-password";

async function docker(args: string[], timeoutMs = 600_000): Promise<string> {
  const r = await run([DOCKER, ...args], { timeoutMs });
  if (r.code !== 0) throw new Error(`docker ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const load = () => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);

/** A client command in a throwaway container on the app's network. */
const client = (network: string, image: string, argv: string[]) =>
  docker(["run", "--rm", "--network", network, "--entrypoint", argv[0] as string, image, ...argv.slice(1)]);

async function kvBench(network: string, host: string, password: string): Promise<Record<string, number>> {
  const out = await client(network, KV_IMAGE, [
    "valkey-benchmark",
    "-h",
    host,
    "-p",
    "6378",
    "-a",
    password,
    "-t",
    "set,get",
    "-n",
    "200000",
    "-c",
    "50",
    "--csv",
  ]);
  const rps: Record<string, number> = {};
  for (const line of out.split("\n")) {
    const m = /^"(SET|GET)","([\d.]+)"/.exec(line);
    if (m) rps[m[1] as string] = Number(m[2]);
  }
  return rps;
}

/** One pgbench run on a server initialized already, after a checkpoint (as postgres, on its own socket). */
async function pgBench(network: string, container: string, url: string, seconds: number): Promise<number> {
  await docker(["exec", container, "psql", "-h", "/tmp", "-d", "postgres", "-X", "-q", "-c", "CHECKPOINT"]);
  const out = await client(network, PG_IMAGE, ["pgbench", "-c", "10", "-j", "2", "-T", String(seconds), url]);
  return Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1] ?? 0);
}

interface MyServer {
  host: string;
  user: string;
  password: string;
  db: string;
}
const mariadb = (s: MyServer, tool: string, args: string[]) => [
  tool,
  "--no-defaults",
  `--host=${s.host}`,
  `--user=${s.user}`,
  `--password=${s.password}`,
  ...args,
];

/** The accounts and history tables, made once per server (as its user, over the network). */
async function myInit(network: string, s: MyServer): Promise<void> {
  const sql = `DROP TABLE IF EXISTS accounts, history;
CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL DEFAULT 0, filler CHAR(84) NOT NULL DEFAULT '');
INSERT INTO accounts (id) SELECT seq FROM seq_1_to_100000;
CREATE TABLE history (id BIGINT AUTO_INCREMENT PRIMARY KEY, aid INT, delta INT, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);`;
  await client(network, MY_IMAGE, mariadb(s, "mariadb", [s.db, "-e", sql]));
}

/** One mariadb-slap run of `transactions` transactions: transactions per second. */
async function myBench(network: string, s: MyServer, transactions: number): Promise<number> {
  const out = await client(
    network,
    MY_IMAGE,
    mariadb(s, "mariadb-slap", [
      `--create-schema=${s.db}`,
      `--concurrency=${MY_CLIENTS}`,
      "--iterations=1",
      `--number-of-queries=${transactions * MY_TRANSACTION.length}`,
      "--delimiter=;",
      `--query=${MY_TRANSACTION.join(";")}`,
    ]),
  );
  const seconds = Number(/Average number of seconds to run all queries: ([\d.]+)/.exec(out)?.[1] ?? 0);
  return seconds > 0 ? transactions / seconds : 0;
}

/** A bare server: the add-on's image, entrypoint and settings, data on a volume, no limits, on `network`. */
async function startBare(name: string, image: string, env: string[], network: string): Promise<void> {
  await docker([
    "run",
    "-d",
    "--name",
    name,
    "--network",
    network,
    "-v",
    `${name}:/data`,
    ...env.flatMap((e) => ["-e", e]),
    image,
  ]);
}

async function waitReady(name: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const r = await run([DOCKER, "exec", name, "pier-addon", "ready"]);
    if (r.code === 0) return;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error(`${name} did not become ready`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a");

/** Rounds in alternating order; each run's figure and the load before it, printed as it goes. */
async function alternate<T extends Record<string, number>>(
  what: string,
  runs: { addon: () => Promise<T>; bare: () => Promise<T> },
): Promise<{ addon: T[]; bare: T[]; loads: number[] }> {
  const out = { addon: [] as T[], bare: [] as T[], loads: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["addon", "bare"] as const) : (["bare", "addon"] as const);
    for (const side of order) {
      const l = load();
      const got = await runs[side]();
      out[side].push(got);
      out.loads.push(l);
      const figures = Object.entries(got)
        .map(([k, v]) => `${k} ${v.toFixed(0)}`)
        .join(", ");
      console.error(`${what} round ${round + 1} ${side.padEnd(5)}: ${figures} (load ${l.toFixed(2)})`);
    }
  }
  return out;
}

type Vars = Record<string, string>;
type Runs = Awaited<ReturnType<typeof alternate<Record<string, number>>>>;

/** Pier with an app linked to one add-on of each kind, deployed (so they are on its network). */
async function setUp(pier: Pier): Promise<{ network: string; kv: Vars; pg: Vars; my: Vars }> {
  await pier.start();
  await pier.addKey();
  const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "bench"]);
  const names = { kv: "cache", postgresql: "db", mysql: "my" } as const;
  for (const [kind, name] of Object.entries(names)) {
    const r = await pier.cli(["addon", "create", kind, name, "--link", "bench", "--flavor", FLAVOR]);
    if (r.code !== 0) throw new Error(r.stderr);
  }
  // A deploy connects the linked add-ons to the app's network.
  const dir = await pier.repo(
    "bench",
    {
      "package.json": '{"name":"b","version":"1.0.0","scripts":{"start":"node s.js"}}\n',
      "s.js": 'require("http").createServer((q,s)=>s.end("ok")).listen(8080,"0.0.0.0");\n',
      ".gitignore": "/node_modules\n",
    },
    app.id,
  );
  const push = await pier.push(dir);
  if (push.code !== 0) throw new Error(push.stderr);
  // The daily backup round runs a minute after the server starts and backs up new add-ons at once:
  // wait for it, so that no dump or snapshot runs during the measurements.
  for (let i = 0; i < 120; i++) {
    const lists = await Promise.all(
      Object.values(names).map((n) => pier.cliJson<unknown[]>(["addon", "backup", "list", n])),
    );
    if (lists.every((l) => l.length > 0)) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const env = (name: string) => pier.cliJson<Vars>(["addon", "env", name, "--reveal"]);
  return { network: `pier-${app.id}`, kv: await env("cache"), pg: await env("db"), my: await env("my") };
}

async function measureKv(network: string, vars: Vars, bare: string): Promise<Runs> {
  const runs = {
    addon: () => kvBench(network, vars.KV_HOST as string, vars.KV_TOKEN as string),
    bare: () => kvBench(network, bare, PASSWORD),
  };
  await runs.addon();
  await runs.bare();
  return alternate("kv", runs);
}

async function measurePg(network: string, vars: Vars, bare: string): Promise<Runs> {
  const addon = { host: vars.POSTGRESQL_ADDON_HOST as string, url: vars.DATABASE_URL as string };
  const plain = { host: bare, url: `postgresql://bench:${PASSWORD}@${bare}:5432/bench` };
  for (const s of [addon, plain]) await client(network, PG_IMAGE, ["pgbench", "-i", "-q", "-s", "10", s.url]);
  await pgBench(network, addon.host, addon.url, 5);
  await pgBench(network, plain.host, plain.url, 5);
  return alternate("postgresql", {
    addon: async () => ({ tps: await pgBench(network, addon.host, addon.url, SECONDS) }),
    bare: async () => ({ tps: await pgBench(network, plain.host, plain.url, SECONDS) }),
  });
}

async function measureMy(network: string, vars: Vars, bare: string): Promise<Runs> {
  const addon: MyServer = {
    host: vars.MYSQL_ADDON_HOST as string,
    user: vars.MYSQL_ADDON_USER as string,
    password: vars.MYSQL_ADDON_PASSWORD as string,
    db: vars.MYSQL_ADDON_DB as string,
  };
  const plain: MyServer = { host: bare, user: "bench", password: PASSWORD, db: "bench" };
  for (const s of [addon, plain]) await myInit(network, s);
  await myBench(network, addon, MY_TRANSACTIONS / 2);
  await myBench(network, plain, MY_TRANSACTIONS / 2);
  return alternate("mysql", {
    addon: async () => ({ tps: await myBench(network, addon, MY_TRANSACTIONS) }),
    bare: async () => ({ tps: await myBench(network, plain, MY_TRANSACTIONS) }),
  });
}

function report(kv: Runs, pg: Runs, my: Runs, startLoad: number): void {
  const m = (xs: Record<string, number>[], k: string) => median(xs.map((x) => x[k] ?? 0));
  const rows = [
    ["kv SET (requests/s)", m(kv.addon, "SET"), m(kv.bare, "SET")],
    ["kv GET (requests/s)", m(kv.addon, "GET"), m(kv.bare, "GET")],
    ["postgresql pgbench (tps)", m(pg.addon, "tps"), m(pg.bare, "tps")],
    ["mysql mariadb-slap (tps)", m(my.addon, "tps"), m(my.bare, "tps")],
  ] as const;
  const loads = [...kv.loads, ...pg.loads, ...my.loads];
  console.log(
    `\nAdd-ons of flavor ${FLAVOR} and bare servers with the same settings, from the linked app's network:`,
  );
  console.log(
    `medians of ${ROUNDS} runs each in alternating order (pgbench: scale 10, 10 clients, ${SECONDS} s per run; mariadb-slap: ${MY_CLIENTS} clients, ${MY_TRANSACTIONS} transactions per run)`,
  );
  console.log(`${"".padEnd(26)}${"add-on".padStart(12)}${"bare".padStart(12)}${"ratio".padStart(8)}`);
  for (const [name, a, b] of rows)
    console.log(
      `${name.padEnd(26)}${a.toFixed(0).padStart(12)}${b.toFixed(0).padStart(12)}${ratio(a, b).padStart(8)}`,
    );
  console.log(
    `(target: at least 0.90 for each; load average before the bench ${startLoad.toFixed(2)}, before the runs ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}, median ${median(loads).toFixed(2)})`,
  );
}

async function main(): Promise<void> {
  const pier = new Pier();
  const tag = randomBytes(4).toString("hex");
  const bare = { kv: `pier-bench-kv-${tag}`, pg: `pier-bench-pg-${tag}`, my: `pier-bench-my-${tag}` };
  const startLoad = load();
  try {
    const { network, ...vars } = await setUp(pier);
    // The bare servers: the same images, entrypoints and settings, data on a volume, no limits, on the
    // app's network.
    const memory = `PIER_ADDON_MEMORY_MB=${FLAVOR_MEMORY_MIB[FLAVOR]}`;
    const dbEnv = [`PIER_ADDON_PASSWORD=${PASSWORD}`, "PIER_ADDON_USER=bench", "PIER_ADDON_DB=bench", memory];
    await startBare(bare.kv, KV_IMAGE, [`PIER_ADDON_PASSWORD=${PASSWORD}`, memory], network);
    await startBare(bare.pg, PG_IMAGE, dbEnv, network);
    await startBare(bare.my, MY_IMAGE, dbEnv, network);
    for (const name of Object.values(bare)) await waitReady(name);
    const kv = await measureKv(network, vars.kv, bare.kv);
    const pg = await measurePg(network, vars.pg, bare.pg);
    const my = await measureMy(network, vars.my, bare.my);
    report(kv, pg, my, startLoad);
  } finally {
    await run([DOCKER, "rm", "-f", ...Object.values(bare)]);
    await run([DOCKER, "volume", "rm", ...Object.values(bare)]);
    await pier.destroy();
  }
}

await main();
