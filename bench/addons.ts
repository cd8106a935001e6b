// bench/addons: a kv and a postgresql add-on, measured from a linked app's network, against bare servers
// in containers on the same network (the same Debian packages, their default settings, no memory or CPU
// limit), in one run. kv: valkey-benchmark (redis-benchmark's valkey build, same protocol) SET and GET;
// postgresql: pgbench (TPC-B like). Prints both and the ratios (target: at least 0.9x).
// Run: npm run build && node dist/bench/addons.js [flavor, default S] [seconds per pgbench run, default 15]
import { randomBytes } from "node:crypto";
import { Pier, run } from "../test/e2e/harness.js";

const FLAVOR = process.argv[2] ?? "S";
const SECONDS = Number(process.argv[3] ?? 15);
const DOCKER = "/usr/bin/docker";
const KV_IMAGE = "pier/addon-kv:8";
const PG_IMAGE = "pier/addon-postgresql:17";

async function docker(args: string[], timeoutMs = 600_000): Promise<string> {
  const r = await run([DOCKER, ...args], { timeoutMs });
  if (r.code !== 0) throw new Error(`docker ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

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

async function pgBench(network: string, url: string): Promise<number> {
  await client(network, PG_IMAGE, ["pgbench", "-i", "-q", "-s", "10", url]);
  const out = await client(network, PG_IMAGE, ["pgbench", "-c", "10", "-j", "2", "-T", String(SECONDS), url]);
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

const best = (a: number, b: number) => Math.max(a, b);
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a");

async function main(): Promise<void> {
  const pier = new Pier();
  const tag = randomBytes(4).toString("hex");
  const bare = { kv: `pier-bench-kv-${tag}`, pg: `pier-bench-pg-${tag}` };
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

    // The bare servers: the same packages, their defaults, no limits, on the same network.
    await docker([
      "run",
      "-d",
      "--name",
      bare.kv,
      "--network",
      network,
      "--entrypoint",
      "valkey-server",
      KV_IMAGE,
      "--port",
      "6378",
      "--requirepass",
      "bench-password",
      "--protected-mode",
      "no",
      "--dir",
      "/tmp",
    ]);
    await docker([
      "run",
      "-d",
      "--name",
      bare.pg,
      "--network",
      network,
      "-e",
      "PIER_ADDON_PASSWORD=bench-password",
      "-e",
      "PIER_ADDON_USER=bench",
      "-e",
      "PIER_ADDON_DB=bench",
      // shared_buffers = 128 MB, PostgreSQL's default.
      "-e",
      "PIER_ADDON_MEMORY_MB=512",
      PG_IMAGE,
    ]);
    await waitReady(bare.pg);
    await new Promise((r) => setTimeout(r, 1000));

    const kv = { addon: { SET: 0, GET: 0 }, bare: { SET: 0, GET: 0 } };
    for (let round = 0; round < 2; round++) {
      const a = await kvBench(network, kvVars.KV_HOST as string, kvVars.KV_TOKEN as string);
      const b = await kvBench(network, bare.kv, "bench-password");
      for (const op of ["SET", "GET"] as const) {
        kv.addon[op] = best(kv.addon[op], a[op] ?? 0);
        kv.bare[op] = best(kv.bare[op], b[op] ?? 0);
      }
    }
    let pgAddon = 0;
    let pgBare = 0;
    for (let round = 0; round < 2; round++) {
      pgAddon = best(pgAddon, await pgBench(network, pgVars.DATABASE_URL as string));
      pgBare = best(
        pgBare,
        await pgBench(network, `postgresql://bench:bench-password@${bare.pg}:5432/bench`),
      );
    }
    const rows = [
      ["kv SET (requests/s)", kv.addon.SET, kv.bare.SET],
      ["kv GET (requests/s)", kv.addon.GET, kv.bare.GET],
      ["postgresql pgbench (tps)", pgAddon, pgBare],
    ] as const;
    console.log(
      `\nAdd-ons of flavor ${FLAVOR}, measured from the linked app's network (best of 2 runs each):`,
    );
    console.log(`${"".padEnd(26)}${"add-on".padStart(12)}${"bare".padStart(12)}${"ratio".padStart(8)}`);
    for (const [name, a, b] of rows)
      console.log(
        `${name.padEnd(26)}${a.toFixed(0).padStart(12)}${b.toFixed(0).padStart(12)}${ratio(a, b).padStart(8)}`,
      );
    console.log("(target: at least 0.90 for each)");
  } finally {
    await run([DOCKER, "rm", "-f", bare.kv, bare.pg]);
    await pier.destroy();
  }
}

await main();
