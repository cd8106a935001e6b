// bench/swarm (issue 18 item 5): the same apps on two Piers in one run, one on this machine's own dockerd
// (the default engine) and one on a 3-node swarm lab's manager (PIER_ENGINE=swarm, ADR 0030):
// - deploy cost, for two kinds of push, each to an app of 3 instances: a code change to a Dockerfile app
//   (one new layer: the swarm's fixed costs weigh most) and a dependency change to a Node.js app (the
//   version of one npm package: an install from the registry in the build). Push to first 200, rounds
//   interleaved (one machine, swarm, one machine, ...), each push once both sides run only their 3
//   instances (a retired release's containers stopped), medians, the ratio swarm/one machine (target
//   <= 1.5), the swarm's added time, and the timeline of the median push on each (the lines the push
//   printed, with when they came). The lab's nodes have no route out of this machine, so the swarm's builds
//   reach the npm registry through a CONNECT proxy the bench runs on the lab's host address (to the
//   registry's host only; the app's npm_config_https_proxy); one machine's builds go straight to it: the
//   extra hop counts against the swarm;
// - edge throughput: wrk through each Pier's edge to the app's 3 instances (on the swarm spread over >= 2
//   nodes, checked), alternating rounds, the ratio swarm/one machine (target >= 0.9).
// Run: npm run build && node dist/bench/swarm.js [rounds, default 3] [seconds per wrk run, default 5]
// The lab is PIER_SWARM_LAB_NAME / PIER_SWARM_LAB_NET when set, else its own (pierbench, 192.168.249): a
// bench never takes the default lab. The lab goes down and both Piers are destroyed at the end, on a
// failure, on SIGINT/SIGTERM, and past the time limit (PIER_BENCH_LIMIT_S, default 1800 s).
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { httpRequest, NODE_DOCKER_APP, Pier } from "../test/e2e/harness.js";
import {
  copyImages,
  docker,
  instancePs,
  type LabInfo,
  lab,
  labUp,
  swarmSettings,
  until,
} from "../test/e2e-swarm/lab.js";
import { connectProxy, npmRegistryTarget } from "../test/support/connect-proxy.js";
import { load1, median, sleep } from "./common.js";
import { processes, runBounded } from "./procs.js";
import { ensureTools, type WrkResult, wrk } from "./wrk.js";

const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 5);
const limitS = Number(process.env.PIER_BENCH_LIMIT_S ?? 1800);
if (!process.env.PIER_SWARM_LAB_NAME) {
  process.env.PIER_SWARM_LAB_NAME = "pierbench";
  process.env.PIER_SWARM_LAB_NET = process.env.PIER_SWARM_LAB_NET ?? "192.168.249";
}

type Side = "one machine" | "swarm";

/** One kind of push the bench times: the app it goes to, and the files of each push. */
interface Kind {
  /** The app's name (served at `<name>.localhost`). */
  name: string;
  type: "docker" | "node";
  /** What each timed push changes, as printed. */
  title: string;
  /** The app's files for push `n` of this side (0: the first deploy); each n gives other files. */
  files(side: Side, n: number): Record<string, string>;
  env: [string, string][];
}

/** A code change to a Dockerfile app: a new layer, nothing else to build. */
const CODE_CHANGE: Kind = {
  name: "bench",
  type: "docker",
  title: "a code change (new layer) to a Dockerfile app",
  files: (side, n) => app(`${side} ${n} ${randomBytes(4).toString("hex")}`),
  env: [["CC_HEALTH_CHECK_PATH", "/health"]],
};

/**
 * Versions of one small npm package, each pinned by one push: every push of either side resolves and
 * installs a version no earlier push of this run installed (the Node.js runtime reuses node_modules only
 * when package.json and the lock file are unchanged, ADR 0005).
 */
const MS_VERSIONS = [
  "0.5.0",
  "0.5.1",
  "0.6.0",
  "0.6.1",
  "0.6.2",
  "0.7.0",
  "0.7.1",
  "0.7.2",
  "0.7.3",
  "1.0.0",
  "2.0.0",
  "2.1.0",
  "2.1.1",
  "2.1.2",
  "2.1.3",
];

/** A dependency change to a Node.js app without a lock file: the build runs `npm install` of one package. */
const DEPENDENCY_CHANGE: Kind = {
  name: "benchdeps",
  type: "node",
  title: "a dependency change (npm install of one package) to a Node.js app",
  files: (side, n) => {
    const version = MS_VERSIONS[2 * n + (side === "swarm" ? 1 : 0)];
    if (!version) throw new Error(`no version of ms left for push ${n}: at most ${MAX_ROUNDS} rounds`);
    return {
      "package.json": `${JSON.stringify({ name: "benchdeps", version: "1.0.0", private: true, scripts: { start: "node server.js" }, dependencies: { ms: version } }, null, 2)}\n`,
      "server.js": [
        'const ms = require("ms");',
        "const port = Number(process.env.PORT || 8080);",
        'require("http").createServer((q, s) => s.end(ms(7200000) + " " + require("ms/package.json").version + "\\n")).listen(port, "0.0.0.0");',
        "",
      ].join("\n"),
    };
  },
  env: [],
};

const KINDS = [CODE_CHANGE, DEPENDENCY_CHANGE];
/** Each side's pushes 0..rounds take a version each. */
const MAX_ROUNDS = Math.floor(MS_VERSIONS.length / 2) - 1;
if (!Number.isInteger(rounds) || rounds < 1 || rounds > MAX_ROUNDS)
  throw new Error(`rounds must be an integer from 1 to ${MAX_ROUNDS}, not ${process.argv[2]}`);

interface Target {
  side: Side;
  kind: Kind;
  pier: Pier;
  repo: string;
  appId: string;
}

const host = (k: Kind) => `${k.name}.localhost`;

/** One push: its wall time to the first 200 after it, and each line it printed with when (ms from start). */
interface Timed {
  ms: number;
  lines: [number, string][];
}

function app(nonce: string): Record<string, string> {
  return { ...NODE_DOCKER_APP, "server.js": `${NODE_DOCKER_APP["server.js"]}\n// ${nonce}\n` };
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Polls the app through the Pier's edge (loopback, or the manager's address on the swarm) until a 200. */
async function first200(pier: Pier, kind: Kind, limitMs = 120_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    try {
      const r = await httpRequest(pier.httpPort, host(kind), "GET", "/", {}, "", 2000, pier.edgeAddress);
      if (r.status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(
    `no 200 from ${host(kind)} at ${pier.edgeAddress}:${pier.httpPort} within ${limitMs / 1000} s`,
  );
}

/** `git push` with each line of its output timestamped (git prints the remote's deploy steps on stderr). */
function timedPush(pier: Pier, repo: string): Promise<Timed & { code: number; text: string }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const lines: [number, string][] = [];
    let text = "";
    let partial = "";
    const child = spawn("git", ["-C", repo, "push", "pier", "master"], {
      env: pier.gitEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const take = (c: Buffer) => {
      text += c.toString();
      const parts = (partial + c.toString()).split(/\r|\n/);
      partial = parts.pop() ?? "";
      for (const l of parts) if (l.trim()) lines.push([performance.now() - t0, l.trim()]);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const timer = setTimeout(() => child.kill("SIGKILL"), 600_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - t0, lines, code: code ?? -1, text });
    });
  });
}

/**
 * A CONNECT proxy on `address` (the lab's host address, which the lab's nodes reach) to `target` (the npm
 * registry's host:443) and nowhere else: the lab's nodes have no route out of this machine. Returns its URL
 * and how many tunnels it opened.
 */
async function registryProxy(
  address: string,
  target: string,
): Promise<{ url: string; tunnels: () => number }> {
  const proxy = connectProxy(target);
  await new Promise<void>((resolve, reject) => {
    proxy.server.once("error", reject);
    proxy.server.listen(0, address, resolve);
  });
  cleanups.push(() => proxy.close());
  const { port } = proxy.server.address() as { port: number };
  return { url: `http://${address}:${port}`, tunnels: proxy.tunnels };
}

/** Push `n` of a side (its files committed), timed to the first 200 through the edge after it returned. */
async function deploy(t: Target, n: number): Promise<Timed> {
  await t.pier.commit(t.repo, t.kind.files(t.side, n), `push ${n}`);
  const t0 = performance.now();
  const p = await timedPush(t.pier, t.repo);
  if (p.code !== 0) throw new Error(`${t.side}: push ${n} of ${t.kind.name} failed: ${p.text}`);
  await first200(t.pier, t.kind);
  return { ms: performance.now() - t0, lines: p.lines };
}

/** A Pier. */
async function started(env: Record<string, string>): Promise<Pier> {
  const pier = new Pier({ PIER_ACME_DIRECTORY: "off", ...env });
  cleanups.push(() => pier.destroy());
  await pier.start();
  await pier.addKey();
  return pier;
}

/** The kind's app on this Pier, deployed (push 0) and scaled to 3 instances. */
async function target(side: Side, pier: Pier, kind: Kind, env: [string, string][] = []): Promise<Target> {
  const created = await pier.cliJson<{ id: string }>(["create", "--type", kind.type, kind.name]);
  for (const [k, v] of [...kind.env, ...env]) {
    const set = await pier.cli(["env", "set", k, v, "--app", kind.name]);
    if (set.code !== 0) throw new Error(set.stderr);
  }
  const repo = await pier.repo(kind.name, kind.files(side, 0), created.id);
  const p = await pier.push(repo);
  if (p.code !== 0) throw new Error(`${side}: first push of ${kind.name} failed: ${p.stderr}`);
  const scaled = await pier.cli(["scale", "--instances", "3", "--app", kind.name]);
  if (scaled.code !== 0) throw new Error(`${side}: scale of ${kind.name} failed: ${scaled.stderr}`);
  await first200(pier, kind);
  return { side, kind, pier, repo, appId: created.id };
}

/** On which lab node each running instance of the app is (one entry per instance). */
async function placement(info: LabInfo, appId: string): Promise<string[]> {
  const nodes: string[] = [];
  for (const n of info.nodes) {
    if (!n.running) continue;
    const ids = await docker(info, n.name, instancePs(appId));
    for (const _ of ids.split("\n").filter(Boolean)) nodes.push(n.name);
  }
  return nodes;
}

const count = (ids: string) => ids.split("\n").filter(Boolean).length;

/**
 * Waits (at most 30 s) until each side runs its 3 instances and nothing else of the app: the previous
 * release's retired containers stopped on this machine's dockerd and on every lab node. A deploy timed
 * while the other side (or its own last release) still tears containers down shares the two cores with
 * that work: each push starts from the same quiet. Returns the time waited.
 */
async function quiet(one: Target, sw: Target, info: LabInfo): Promise<number> {
  const t0 = performance.now();
  const onOne = async () => count((await promisify(execFile)("docker", instancePs(one.appId))).stdout);
  const onSwarm = async () => {
    let n = 0;
    for (const node of info.nodes)
      if (node.running) n += count(await docker(info, node.name, instancePs(sw.appId)));
    return n;
  };
  while (performance.now() - t0 < 30_000) {
    const [a, b] = await Promise.all([onOne(), onSwarm()]);
    if (a === 3 && b === 3) break;
    await sleep(100);
  }
  return performance.now() - t0;
}

/** Milliseconds of a Go timestamp printed by `{{json .X}}` (RFC 3339, nanoseconds cut to milliseconds). */
const goTime = (json: string) => Date.parse(JSON.parse(json) as string);

/**
 * Where each running instance's start went, from the swarm's own timestamps: the service created, its task
 * created (allocated), the container created on its node (dispatched, image pulled), the container
 * started, the task seen running by the manager. Deltas in ms, one row per instance.
 */
async function startStages(info: LabInfo, appId: string): Promise<number[][]> {
  const manager = info.nodes[0]?.name ?? "node1";
  const services = await docker(info, manager, [
    "service",
    "ls",
    "-q",
    "--filter",
    `label=pier.app=${appId}`,
  ]);
  const rows: number[][] = [];
  for (const svc of services.split("\n").filter(Boolean)) {
    const tasks = await docker(info, manager, [
      "service",
      "ps",
      "-q",
      "--filter",
      "desired-state=running",
      svc,
    ]);
    const task = tasks.split("\n").find(Boolean);
    if (!task) continue; // a retired release's service, scaled to 0
    const [created, ...t] = [
      await docker(info, manager, ["service", "inspect", "-f", "{{json .CreatedAt}}", svc]),
      ...(
        await docker(info, manager, [
          "inspect",
          "--type",
          "task",
          "-f",
          "{{json .CreatedAt}} {{json .Status.Timestamp}} {{.Status.ContainerStatus.ContainerID}}",
          task,
        ])
      ).split(" "),
    ];
    const [taskCreated, running, container] = t as [string, string, string];
    let box = "";
    for (const n of info.nodes.filter((x) => x.running))
      box ||= await docker(info, n.name, [
        "inspect",
        "-f",
        "{{json .Created}} {{json .State.StartedAt}}",
        container,
      ]).catch(() => "");
    const [cCreated, cStarted] = box.split(" ") as [string, string];
    const ts = [created, taskCreated, cCreated, cStarted, running].map((x) => goTime(x ?? ""));
    rows.push(ts.slice(1).map((v, i) => v - (ts[i] ?? 0)));
  }
  return rows;
}

/** The timeline of one push: each line with when it came (a line repeated, a progress line, once). */
function timeline(t: Timed): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [ms, line] of t.lines) {
    if (seen.has(line)) continue;
    seen.add(line);
    out.push(`    +${(ms / 1000).toFixed(2).padStart(6)} s  ${line.slice(0, 140)}`);
  }
  out.push(`    +${(t.ms / 1000).toFixed(2).padStart(6)} s  first 200 through the edge`);
  return out.join("\n");
}

async function deployRounds(one: Target, sw: Target, info: LabInfo): Promise<void> {
  const runs: Record<Side, Timed[]> = { "one machine": [], swarm: [] };
  const loads: string[] = [];
  const stages: number[][] = [];
  const waits: number[] = [];
  for (let i = 1; i <= rounds; i++) {
    waits.push(await quiet(one, sw, info));
    runs["one machine"].push(await deploy(one, i));
    waits.push(await quiet(one, sw, info));
    runs.swarm.push(await deploy(sw, i));
    loads.push(load1());
    stages.push(...(await startStages(info, sw.appId).catch(() => [])));
  }
  const mid = (side: Side) => {
    const m = median(runs[side].map((r) => r.ms));
    return { ms: m, run: runs[side].find((r) => r.ms === m) as Timed };
  };
  const o = mid("one machine");
  const s = mid("swarm");
  const each = (side: Side) => runs[side].map((r) => (r.ms / 1000).toFixed(2)).join(", ");
  console.log(`deploy: push to first 200 of ${one.kind.title}, 3 instances; medians of ${rounds} rounds`);
  console.log(`  one machine: ${fmt(o.ms)}  [${each("one machine")}]`);
  console.log(`  swarm:       ${fmt(s.ms)}  [${each("swarm")}]`);
  const ratio = s.ms / o.ms;
  console.log(
    `  ratio swarm/one machine: ${ratio.toFixed(2)} (target <= 1.50: ${ratio <= 1.5 ? "met" : "MISSED"})`,
  );
  // The swarm's cost is mostly an added time (its dispatch and status batching, the push: ADR 0030), which
  // a ratio hides when one machine's deploy is short.
  console.log(`  the swarm's added time: +${fmt(s.ms - o.ms)} a deploy`);
  console.log(`  load (1 min) after each round: ${loads.join(", ")}`);
  console.log(
    `  each push started once both sides ran only their 3 instances (the retired ones stopped): waited ${waits.map((w) => (w / 1000).toFixed(1)).join(", ")} s`,
  );
  console.log(`  the median push on one machine:\n${timeline(o.run)}`);
  console.log(`  the median push on the swarm:\n${timeline(s.run)}`);
  const names = [
    "service created -> task created",
    "-> container created on its node (dispatch, pull)",
    "-> container started",
    "-> task running at the manager",
  ];
  console.log(
    `  a swarm instance's start, medians over ${stages.length} instances (the swarm's own timestamps):`,
  );
  names.forEach((n, k) => {
    console.log(`    ${n}: ${median(stages.map((r) => r[k] ?? Number.NaN)).toFixed(0)} ms`);
  });
}

/**
 * How one machine's dockerd publishes the instances' ports: through a docker-proxy process each (its
 * default), or through the kernel's DNAT (`--userland-proxy=false`, the set-up's). The edge's throughput
 * to the instances differs about 2x (ADR 0007): a run says which it measured.
 */
function hostPublishing(): string {
  const all = processes();
  const dockerd = all.find((p) => p.args[0]?.endsWith("dockerd") && !p.args.includes("--config-file"));
  if (!dockerd) return "unknown (no host dockerd found)";
  const proxies = all.filter((p) => p.ppid === dockerd.pid && p.args[0]?.endsWith("docker-proxy")).length;
  return proxies > 0 ? `docker-proxy (${proxies} processes)` : "the kernel's DNAT (no docker-proxy)";
}

async function edgeRounds(one: Target, sw: Target): Promise<void> {
  const at = async (t: Target) => {
    const r = await wrk(`http://${t.pier.edgeAddress}:${t.pier.httpPort}/`, { seconds, host: host(t.kind) });
    if (r.requests === 0) throw new Error(`${t.side}: wrk completed no request through the edge`);
    return r;
  };
  const runs: Record<Side, WrkResult[]> = { "one machine": [], swarm: [] };
  const loads: string[] = [];
  for (let i = 0; i < rounds; i++) {
    runs["one machine"].push(await at(one));
    runs.swarm.push(await at(sw));
    loads.push(load1());
  }
  const mid = (rs: WrkResult[]) =>
    [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)] as WrkResult;
  const o = mid(runs["one machine"]);
  const s = mid(runs.swarm);
  const row = (name: string, r: WrkResult, side: Side) =>
    `  ${name.padEnd(12)} ${r.rps.toFixed(0).padStart(7)} req/s   p99 ${r.p99ms.toFixed(2).padStart(7)} ms   errors ${r.errors}   [${runs[side].map((x) => x.rps.toFixed(0)).join(", ")}]`;
  console.log(
    `edge: wrk -t2 -c50 -d${seconds}s through each edge to 3 instances; medians of ${rounds} rounds`,
  );
  console.log(row("one machine", o, "one machine"));
  console.log(row("swarm", s, "swarm"));
  console.log(`  one machine's published ports go through ${hostPublishing()}`);
  const ratio = s.rps / o.rps;
  console.log(
    `  ratio swarm/one machine: ${ratio.toFixed(2)} (target >= 0.90: ${ratio >= 0.9 ? "met" : "MISSED"}); p99 ratio ${(s.p99ms / o.p99ms).toFixed(2)}`,
  );
  console.log(`  load (1 min) after each round: ${loads.join(", ")}`);
}

const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        console.error(`bench: cleanup: ${(e as Error).message}`);
      }
    }
  })();
  return cleaning;
}

/** Waits for the swarm app's 3 instances and checks that they are on at least 2 nodes. */
async function spreadOver(info: LabInfo, sw: Target, when: string): Promise<void> {
  const placed = await until(`3 instances of ${sw.kind.name} running on the swarm`, 120, async () => {
    const p = await placement(info, sw.appId);
    return p.length === 3 ? p : undefined;
  });
  console.log(`swarm instances of ${sw.kind.name} ${when} on: ${placed.join(", ")}`);
  if (new Set(placed).size < 2)
    throw new Error(`the swarm's instances of ${sw.kind.name} are on one node: not spread`);
}

async function main(): Promise<void> {
  ensureTools();
  const t0 = Date.now();
  console.log(
    `bench/swarm: lab ${process.env.PIER_SWARM_LAB_NAME} (${process.env.PIER_SWARM_LAB_NET}.0/24), load (1 min) at start ${load1()}`,
  );
  cleanups.push(async () => {
    await lab("down");
  });
  await lab("down");
  const info = await labUp(3);
  await copyImages(info, "node1", ["pier/base:bookworm", "pier/node:22"]);
  const onePier = await started({});
  const swPier = await started({ ...swarmSettings(info), PIER_ISOLATION: "off" });
  const registry = npmRegistryTarget();
  const proxy = await registryProxy(info.hostAddress, registry);
  const pairs: [Target, Target][] = [];
  for (const kind of KINDS) {
    const swEnv: [string, string][] = kind.type === "node" ? [["npm_config_https_proxy", proxy.url]] : [];
    const pair: [Target, Target] = [
      await target("one machine", onePier, kind),
      await target("swarm", swPier, kind, swEnv),
    ];
    await spreadOver(info, pair[1], "after its first deploy");
    pairs.push(pair);
  }
  console.log(`set-up ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  for (const [one, sw] of pairs) {
    await deployRounds(one, sw, info);
    await spreadOver(info, sw, "after the deploys");
  }
  const [code] = pairs;
  if (!code) throw new Error("no kind of push");
  await edgeRounds(...code);
  console.log(
    `the swarm's builds opened ${proxy.tunnels()} tunnels to ${registry} through the bench's proxy`,
  );
  console.log(`total ${((Date.now() - t0) / 1000).toFixed(0)} s, load (1 min) at the end ${load1()}`);
}

await runBounded(main, cleanup, limitS);
