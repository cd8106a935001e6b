// bench/addons: a kv and a postgresql add-on, measured from a linked app's network, against bare servers
// in containers on the same network, in one run. The bare servers are the same images with the same
// settings (the add-on's entrypoint and environment: the flavor's memory, so the same shared_buffers and
// maxmemory, the same fsync and append-only settings) and their data on a named volume, as the add-on's;
// what differs is only what Pier adds: the memory and CPU limits of the flavor, the hardening, the
// add-on's own network. Both are reached the same way: by name, on the app's bridge (no published port,
// no docker-proxy). kv: valkey-benchmark (redis-benchmark's valkey build) SET and GET; postgresql: pgbench
// (TPC-B like, initialized once per server, a CHECKPOINT before each run so that no run pays for the
// previous one's dirty pages). A warm-up run each, then rounds in alternating order (add-on first, then
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

async function main(): Promise<void> {
  const pier = new Pier();
  const tag = randomBytes(4).toString("hex");
  const bare = { kv: `pier-bench-kv-${tag}`, pg: `pier-bench-pg-${tag}` };
  const memoryMb = String(FLAVOR_MEMORY_MIB[FLAVOR]);
  const startLoad = load();
  try {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "bench"]);
    for (const [kind, name] of [
      ["kv", "cache"],
      ["postgresql", "db"],
    ] as const) {
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
    const network = `pier-${app.id}`;
    // The daily backup round runs a minute after the server starts and backs up new add-ons at once:
    // wait for it, so that no pg_dump or snapshot runs during the measurements.
    for (let i = 0; i < 120; i++) {
      const lists = await Promise.all(
        ["cache", "db"].map((n) => pier.cliJson<unknown[]>(["addon", "backup", "list", n])),
      );
      if (lists.every((l) => l.length > 0)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const kvVars = await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]);
    const pgVars = await pier.cliJson<Record<string, string>>(["addon", "env", "db", "--reveal"]);

    // The bare servers: the same images, entrypoints and settings, data on a volume, no limits, on the
    // app's network.
    for (const [name, image, env] of [
      [bare.kv, KV_IMAGE, [`PIER_ADDON_PASSWORD=${PASSWORD}`]],
      [
        bare.pg,
        PG_IMAGE,
        [`PIER_ADDON_PASSWORD=${PASSWORD}`, "PIER_ADDON_USER=bench", "PIER_ADDON_DB=bench"],
      ],
    ] as const) {
      await docker([
        "run",
        "-d",
        "--name",
        name,
        "--network",
        network,
        "-v",
        `${name}:/data`,
        ...[...env, `PIER_ADDON_MEMORY_MB=${memoryMb}`].flatMap((e) => ["-e", e]),
        image,
      ]);
    }
    await waitReady(bare.kv);
    await waitReady(bare.pg);

    const kvRuns = {
      addon: () => kvBench(network, kvVars.KV_HOST as string, kvVars.KV_TOKEN as string),
      bare: () => kvBench(network, bare.kv, PASSWORD),
    };
    await kvRuns.addon();
    await kvRuns.bare();
    const kv = await alternate("kv", kvRuns);

    const pgAddon = { host: pgVars.POSTGRESQL_ADDON_HOST as string, url: pgVars.DATABASE_URL as string };
    const pgBare = { host: bare.pg, url: `postgresql://bench:${PASSWORD}@${bare.pg}:5432/bench` };
    for (const s of [pgAddon, pgBare])
      await client(network, PG_IMAGE, ["pgbench", "-i", "-q", "-s", "10", s.url]);
    const pgRuns = {
      addon: async () => ({ tps: await pgBench(network, pgAddon.host, pgAddon.url, SECONDS) }),
      bare: async () => ({ tps: await pgBench(network, pgBare.host, pgBare.url, SECONDS) }),
    };
    await pgBench(network, pgAddon.host, pgAddon.url, 5);
    await pgBench(network, pgBare.host, pgBare.url, 5);
    const pg = await alternate("postgresql", pgRuns);

    const m = (xs: Record<string, number>[], k: string) => median(xs.map((x) => x[k] ?? 0));
    const rows = [
      ["kv SET (requests/s)", m(kv.addon, "SET"), m(kv.bare, "SET")],
      ["kv GET (requests/s)", m(kv.addon, "GET"), m(kv.bare, "GET")],
      ["postgresql pgbench (tps)", m(pg.addon, "tps"), m(pg.bare, "tps")],
    ] as const;
    const loads = [...kv.loads, ...pg.loads];
    console.log(
      `\nAdd-ons of flavor ${FLAVOR} and bare servers with the same settings, from the linked app's network:`,
    );
    console.log(
      `medians of ${ROUNDS} runs each in alternating order (pgbench: scale 10, 10 clients, ${SECONDS} s per run)`,
    );
    console.log(`${"".padEnd(26)}${"add-on".padStart(12)}${"bare".padStart(12)}${"ratio".padStart(8)}`);
    for (const [name, a, b] of rows)
      console.log(
        `${name.padEnd(26)}${a.toFixed(0).padStart(12)}${b.toFixed(0).padStart(12)}${ratio(a, b).padStart(8)}`,
      );
    console.log(
      `(target: at least 0.90 for each; load average before the bench ${startLoad.toFixed(2)}, before the runs ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}, median ${median(loads).toFixed(2)})`,
    );
  } finally {
    await run([DOCKER, "rm", "-f", bare.kv, bare.pg]);
    await run([DOCKER, "volume", "rm", bare.kv, bare.pg]);
    await pier.destroy();
  }
}

await main();
