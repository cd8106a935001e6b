// bench/swarm (issue 18 item 5): the same Dockerfile app on two Piers in one run, one on this machine's own
// dockerd (the default engine) and one on a 3-node swarm lab's manager (PIER_ENGINE=swarm, ADR 0030):
// - deploy cost: push to first 200 of a code change (a new layer) with 3 instances, rounds interleaved
//   (one machine, swarm, one machine, ...), each push once both sides run only their 3 instances (a
//   retired release's containers stopped), medians, the ratio swarm/one machine (target <= 1.5), and the
//   timeline of the median push on each (the lines the push printed, with when they came);
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
const HOST = "bench.localhost";

type Side = "one machine" | "swarm";

interface Target {
  side: Side;
  pier: Pier;
  repo: string;
  appId: string;
}

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
async function first200(pier: Pier, limitMs = 120_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    try {
      const r = await httpRequest(pier.httpPort, HOST, "GET", "/", {}, "", 2000, pier.edgeAddress);
      if (r.status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no 200 from ${HOST} at ${pier.edgeAddress}:${pier.httpPort} within ${limitMs / 1000} s`);
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

/** A code change pushed, timed to the first 200 through the edge after the push returned. */
async function deploy(t: Target, msg: string): Promise<Timed> {
  await t.pier.commit(t.repo, app(randomBytes(4).toString("hex")), msg);
  const t0 = performance.now();
  const p = await timedPush(t.pier, t.repo);
  if (p.code !== 0) throw new Error(`${t.side}: push failed: ${p.text}`);
  await first200(t.pier);
  return { ms: performance.now() - t0, lines: p.lines };
}

/** A Pier with the bench app deployed and scaled to 3 instances. */
async function target(side: Side, env: Record<string, string>): Promise<Target> {
  const pier = new Pier({ PIER_ACME_DIRECTORY: "off", ...env });
  cleanups.push(() => pier.destroy());
  await pier.start();
  await pier.addKey();
  const created = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "bench"]);
  const health = await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", "bench"]);
  if (health.code !== 0) throw new Error(health.stderr);
  const repo = await pier.repo("bench", app("seed"), created.id);
  const p = await pier.push(repo);
  if (p.code !== 0) throw new Error(`${side}: first push failed: ${p.stderr}`);
  const scaled = await pier.cli(["scale", "--instances", "3", "--app", "bench"]);
  if (scaled.code !== 0) throw new Error(`${side}: scale failed: ${scaled.stderr}`);
  await first200(pier);
  return { side, pier, repo, appId: created.id };
}

/** On which lab node each running instance of the app is (one entry per instance). */
async function placement(info: LabInfo, appId: string): Promise<string[]> {
  const nodes: string[] = [];
  for (const n of info.nodes) {
    if (!n.running) continue;
    const ids = await docker(info, n.name, ["ps", "-q", "--filter", `label=pier.app=${appId}`]);
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
  for (let i = 0; i < rounds; i++) {
    waits.push(await quiet(one, sw, info));
    runs["one machine"].push(await deploy(one, `round ${i}`));
    waits.push(await quiet(one, sw, info));
    runs.swarm.push(await deploy(sw, `round ${i}`));
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
  console.log(
    `deploy: push to first 200 of a code change (new layer), 3 instances; medians of ${rounds} rounds`,
  );
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
    const r = await wrk(`http://${t.pier.edgeAddress}:${t.pier.httpPort}/`, { seconds, host: HOST });
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
  const one = await target("one machine", {});
  const sw = await target("swarm", { ...swarmSettings(info), PIER_ISOLATION: "off" });
  const placed = await until("3 instances running on the swarm", 120, async () => {
    const p = await placement(info, sw.appId);
    return p.length === 3 ? p : undefined;
  });
  const spread = new Set(placed).size;
  console.log(`set-up ${((Date.now() - t0) / 1000).toFixed(0)} s; swarm instances on: ${placed.join(", ")}`);
  if (spread < 2) throw new Error(`the swarm's 3 instances are on ${spread} node: not spread`);
  await deployRounds(one, sw, info);
  const after = new Set(await placement(info, sw.appId)).size;
  console.log(`swarm instances after the deploys on ${after} nodes`);
  if (after < 2) throw new Error("the swarm's instances are on one node after the deploys: not spread");
  await edgeRounds(one, sw);
  console.log(`total ${((Date.now() - t0) / 1000).toFixed(0)} s, load (1 min) at the end ${load1()}`);
}

await runBounded(main, cleanup, limitS);
