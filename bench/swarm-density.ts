// bench/swarm-density (issue 18, the scale standard): N small apps on one swarm Pier (PIER_ENGINE=swarm,
// ADR 0030) on a 3-node lab, isolation on (the node guard runs), a Dockerfile app and a Node.js app
// alternating as bench/density does. It prints:
// - each deploy's cost: push to the push's return, and to the first 200 through the edge; the median of the
//   last 10 apps over the first 10 (target <= 1.5);
// - every app answering through the edge at the end;
// - the edge's recovery at checkpoints (N/3, 2N/3, N apps): pier server stopped, the edge's sandbox on the
//   manager removed (`docker rm -f pier-edge-<scope>`), pier server started: the time from its start to
//   every app answering 200 again; against a baseline measured at the same checkpoint, HAProxy killed with
//   the sandbox kept (the same restart, without the sandbox made again and its overlays joined); then,
//   pier server running, the sandbox restarted (`docker restart`, what a restart of the manager's dockerd
//   does to it) to every app answering; then the manager's dockerd killed and started (`swarm-lab kill node1`,
//   `start node1`: the sandbox and node1's instances die with it) to the first and to every app answering;
//   the cost per app of each between checkpoints;
// - memory at each checkpoint: pier server's RSS, and each node's (its dockerd and everything under it:
//   containerd, shims, instances, on the manager the edge's sandbox and builds) PSS; the growth per app;
// - the time to delete every app.
// Run: npm run build && node dist/bench/swarm-density.js [N, default 30]
// The lab is PIER_SWARM_LAB_NAME / PIER_SWARM_LAB_NET when set, else bench/swarm's own (pierbench,
// 192.168.249): a bench never takes the default lab. The lab goes down and the Pier is destroyed at the
// end, on a failure, on SIGINT/SIGTERM, and past the time limit (PIER_BENCH_LIMIT_S, default 3600 s).
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { httpRequest, NODE_DOCKER_APP, type Pier, scopeOf } from "../test/e2e/harness.js";
import {
  docker,
  type LabInfo,
  lab,
  labSocket,
  swarmPier,
  swarmPierDown,
  swarmSettings,
} from "../test/e2e-swarm/lab.js";
import { countPassing, load1, median, sleep, TINY_NODE_APP } from "./common.js";
import { type Proc, processes, pssKb, rssKb, runBounded } from "./procs.js";

const N = Number(process.argv[2] ?? 30);
if (!Number.isInteger(N) || N < 2 || N > 300)
  throw new Error(`N must be an integer from 2 to 300, not ${process.argv[2]}`);
const limitS = Number(process.env.PIER_BENCH_LIMIT_S ?? 3600);
if (!process.env.PIER_SWARM_LAB_NAME) {
  process.env.PIER_SWARM_LAB_NAME = "pierbench";
  process.env.PIER_SWARM_LAB_NET = process.env.PIER_SWARM_LAB_NET ?? "192.168.249";
}
/** Apps at which the edge's recovery and memory are measured. */
const CHECKPOINTS = [...new Set([Math.ceil(N / 3), Math.ceil((2 * N) / 3), N])];
/** The apps compared (first and last): 10, or half of N when smaller. */
const K = Math.min(10, Math.floor(N / 2));

const s2 = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
const verdict = (good: boolean) => (good ? "MET" : "MISSED");

async function ok(pier: Pier, name: string): Promise<boolean> {
  try {
    const r = await httpRequest(
      pier.httpPort,
      `${name}.localhost`,
      "GET",
      "/",
      {},
      "",
      3000,
      pier.edgeAddress,
    );
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Polls until every app answers 200 through the edge, at most `limitMs`: the time taken, and who never did. */
async function allAnswer(pier: Pier, names: readonly string[], limitMs: number, stop = () => false) {
  const t0 = performance.now();
  const pending = new Set(names);
  const at = new Map<string, number>();
  while (pending.size > 0 && performance.now() - t0 < limitMs && !stop()) {
    const batch = [...pending].slice(0, 20);
    await Promise.all(
      batch.map(async (n) => {
        if (!(await ok(pier, n))) return;
        pending.delete(n);
        at.set(n, performance.now() - t0);
      }),
    );
    if (pending.size > 0) await sleep(50);
  }
  // The first answer as it was seen (not the end of the batch it came in).
  const firstMs = at.size > 0 ? Math.min(...at.values()) : Number.NaN;
  return { ms: performance.now() - t0, firstMs, missing: [...pending], at };
}

/** How many of the apps answer 200 through the edge now. */
const answering = (pier: Pier, names: readonly string[]) => countPassing(names, (a) => ok(pier, a));

// ------------------------------------------------------------------------------------------- memory

/**
 * Each lab node's PSS: its dockerd (found by its configuration file, beside its socket), its containerd,
 * shims and containers: every process of the node's init.
 */
function nodesPss(info: LabInfo): Record<string, number> {
  const procs = processes();
  const byParent = new Map<number, Proc[]>();
  for (const p of procs) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const tree = (pid: number, depth = 0): number =>
    depth > 20 ? 0 : pssKb(pid) + (byParent.get(pid) ?? []).reduce((s, c) => s + tree(c.pid, depth + 1), 0);
  const out: Record<string, number> = {};
  for (const n of info.nodes) {
    const config = `${dirname(labSocket(info, n.name))}/daemon.json`;
    const dockerd = procs.find((p) => p.args[0]?.endsWith("dockerd") && p.args.includes(config));
    // The node's init (docker-init, its PID namespace's first process) holds what daemonized: the shims and
    // the containers under them are its children, not dockerd's.
    const init = procs.find((p) => p.pid === dockerd?.ppid && p.args[0]?.endsWith("docker-init"));
    const root = init ?? dockerd;
    out[n.name] = root ? tree(root.pid) : 0;
  }
  return out;
}

interface Memory {
  apps: number;
  serverKb: number;
  nodesKb: Record<string, number>;
}
const memory = (pier: Pier, info: LabInfo, apps: number): Memory => ({
  apps,
  serverKb: pier.proc?.pid ? rssKb(pier.proc.pid) : 0,
  nodesKb: nodesPss(info),
});

// ------------------------------------------------------------------------------------------- deploys
interface Deployed {
  name: string;
  id: string;
  pushMs: number;
  first200Ms: number;
}

/** App `i` created and deployed: push to its return, and to the first 200 through the edge. */
async function deployApp(pier: Pier, i: number): Promise<Deployed> {
  const node = i % 2 === 1;
  const name = `sd-${node ? "n" : "d"}${i}`;
  const created = await pier.cliJson<{ id: string }>(["create", "--type", node ? "node" : "docker", name]);
  if (node) {
    const r = await pier.cli(["env", "set", "CC_NODE_VERSION", "22.16.0", "--app", name]);
    if (r.code !== 0) throw new Error(`env set failed: ${r.stderr}`);
  }
  const repo = await pier.repo(name, node ? TINY_NODE_APP : NODE_DOCKER_APP, created.id);
  const t0 = performance.now();
  const p = await pier.push(repo);
  const pushMs = performance.now() - t0;
  if (p.code !== 0) throw new Error(`push of ${name} (app ${i + 1}) failed (${p.code}):\n${p.stderr}`);
  const a = await allAnswer(pier, [name], 120_000);
  if (a.missing.length > 0) throw new Error(`${name} did not answer 200 through the edge within 120 s`);
  return { name, id: created.id, pushMs, first200Ms: performance.now() - t0 };
}

// ------------------------------------------------------------------------------------------- recovery
interface Recovery {
  apps: number;
  /** HAProxy killed, the sandbox kept: pier server start to every app answering. */
  baselineMs: number;
  /** The sandbox removed: pier server start to every app answering. */
  removedMs: number;
  /** ... of which pier server start to its API answering (`is running`). */
  removedStartMs: number;
  /** ... to the first app answering (the others' overlays still being joined). */
  removedFirstMs: number;
  /** pier server running, the sandbox restarted (`docker restart`, as a restart of the manager's dockerd does):
   *  the restart command's own time, and to every app answering. */
  restartCmdMs: number;
  restartedMs: number;
  /** pier server running, the manager's dockerd killed and started (`swarm-lab kill/start node1`): from the
   *  start command's return to the first app answering and to every app answering. */
  managerFirstMs: number;
  managerMs: number;
  /** Each app, when it answered after the manager's restart, and the nodes its instances were on before. */
  managerApps: { name: string; ms: number; nodes: string[] }[];
  /** The server's log from the manager's kill on. */
  managerLog: string[];
  missing: number;
  /** The server's log during the start with the sandbox removed. */
  removedLog: string[];
}

const edgeName = (pier: Pier) => `pier-edge-${scopeOf(pier.dataDir)}`;

/** pier server started, timed to its API and to every app answering; the apps must be down before. */
async function timedStart(pier: Pier, names: readonly string[]) {
  if ((await answering(pier, names.slice(0, 1))) > 0)
    throw new Error("an app still answers with the edge down: the measurement would be wrong");
  const from = pier.output.length;
  const wall0 = Date.now();
  const t0 = performance.now();
  // A server that fails to start (e.g. a join of the sandbox that failed) ends the polling and the run.
  let failed: Error | undefined;
  const started = pier.start().then(
    () => performance.now() - t0,
    (e: Error) => {
      failed = e;
      return Number.NaN;
    },
  );
  const a = await allAnswer(pier, names, 180_000, () => failed !== undefined);
  const startMs = await started;
  if (failed) throw new Error(`pier server did not start again: ${failed.message.slice(0, 600)}`);
  return {
    startMs,
    allMs: a.ms,
    firstMs: a.firstMs,
    missing: a.missing,
    log: serverLog(pier.output.slice(from), wall0),
  };
}

/** The server's log records (pino JSON) as "+seconds from `wall0`  message", each message once. */
function serverLog(text: string, wall0: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const line of text.split("\n")) {
    try {
      const r = JSON.parse(line) as { time?: number; msg?: string; err?: unknown };
      if (!r.msg || seen.has(r.msg)) continue;
      seen.add(r.msg);
      const err = r.err === undefined ? "" : ` (${JSON.stringify(r.err).slice(0, 200)})`;
      out.push(
        `+${(((r.time ?? wall0) - wall0) / 1000).toFixed(2).padStart(6)} s  ${r.msg.slice(0, 120)}${err}`,
      );
    } catch {
      // not a record
    }
  }
  return out;
}

/** Waits (bounded) until the first app stops answering. */
async function untilDown(pier: Pier, names: readonly string[]): Promise<void> {
  for (let i = 0; i < 200 && (await answering(pier, names.slice(0, 1))) > 0; i++) await sleep(50);
}

/** The lab nodes each app's instances run on (one entry per instance), by app id. */
async function instanceNodes(info: LabInfo): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const n of info.nodes) {
    const apps = await docker(info, n.name, [
      "ps",
      "--filter",
      "label=pier.role=instance",
      "--format",
      '{{.Label "pier.app"}}',
    ]).catch(() => "");
    for (const a of apps.split("\n").filter(Boolean)) out.set(a, [...(out.get(a) ?? []), n.name]);
  }
  return out;
}

async function recovery(pier: Pier, info: LabInfo, ds: readonly Deployed[]): Promise<Recovery> {
  const names = ds.map((d) => d.name);
  // Baseline: the same restart with the sandbox kept (HAProxy killed, so the edge must be started again).
  await pier.stopServer();
  const haproxy = Number(readFileSync(`${pier.dataDir}/edge/haproxy.pid`, "utf8").trim().split("\n")[0]);
  process.kill(haproxy, "SIGTERM");
  await untilDown(pier, names);
  const base = await timedStart(pier, names);
  // The sandbox removed under a stopped pier server (its old HAProxy is left in the gone sandbox's namespace).
  await pier.stopServer();
  await docker(info, "node1", ["rm", "-f", edgeName(pier)]);
  await untilDown(pier, names);
  const removed = await timedStart(pier, names);
  // The sandbox restarted under a running pier server: Docker attaches it to every overlay again as it starts.
  const t0 = performance.now();
  await docker(info, "node1", ["restart", "-t", "0", edgeName(pier)]).catch((e: Error) =>
    console.error(`bench: docker restart of the sandbox: ${e.message}`),
  );
  const restartCmdMs = performance.now() - t0;
  const restarted = await allAnswer(pier, names, 180_000);
  // The manager's dockerd killed and started, pier server running: every container on node1 dies with it
  // (the sandbox, the instances there); the swarm restarts its tasks, Pier makes the sandbox again.
  const placed = await instanceNodes(info);
  const from = pier.output.length;
  const wall0 = Date.now();
  await lab("kill", "node1");
  await lab("start", "node1");
  const manager = await allAnswer(pier, names, 180_000);
  const managerApps = ds.map((d) => ({
    name: d.name,
    ms: manager.at.get(d.name) ?? Number.NaN,
    nodes: placed.get(d.id) ?? [],
  }));
  return {
    apps: names.length,
    baselineMs: base.allMs,
    removedMs: removed.allMs,
    removedStartMs: removed.startMs,
    removedFirstMs: removed.firstMs,
    restartCmdMs,
    restartedMs: restartCmdMs + restarted.ms,
    managerFirstMs: manager.firstMs,
    managerMs: manager.ms,
    managerApps,
    managerLog: serverLog(pier.output.slice(from), wall0),
    missing: base.missing.length + removed.missing.length + restarted.missing.length + manager.missing.length,
    removedLog: removed.log,
  };
}

// ------------------------------------------------------------------------------------------- report
function reportDeploys(ds: Deployed[]): void {
  const first = ds.slice(0, K);
  const last = ds.slice(-K);
  for (const [what, key] of [
    ["push to its return", "pushMs"],
    ["push to the first 200", "first200Ms"],
  ] as const) {
    const f = median(first.map((d) => d[key]));
    const l = median(last.map((d) => d[key]));
    console.log(
      `deploy, ${what}: median of the last ${K} over the first ${K}: ${(l / f).toFixed(2)} (${s2(l)} / ${s2(f)}; target <= 1.50) ${verdict(l / f <= 1.5)}`,
    );
  }
  const blocks: string[] = [];
  for (let b = 0; b < ds.length; b += 10)
    blocks.push(
      `${b + 1}-${Math.min(b + 10, ds.length)}: ${s2(median(ds.slice(b, b + 10).map((d) => d.first200Ms)))}`,
    );
  console.log(`  median push to first 200 by 10 apps: ${blocks.join(", ")}`);
}

function reportRecoveries(rs: Recovery[]): void {
  console.log("edge recovery: pier server start to every app answering 200 through the edge");
  for (const r of rs)
    console.log(
      `  ${String(r.apps).padStart(3)} apps: sandbox removed ${s2(r.removedMs)} (API up at ${s2(r.removedStartMs)}, first app at ${s2(r.removedFirstMs)}), ${(r.removedMs / r.apps).toFixed(0)} ms per app; baseline (HAProxy killed, sandbox kept) ${s2(r.baselineMs)}; removed/baseline ${(r.removedMs / r.baselineMs).toFixed(2)}; sandbox restarted ${s2(r.restartedMs)} (docker restart ${s2(r.restartCmdMs)}), ${(r.restartedMs / r.apps).toFixed(0)} ms per app; manager's dockerd killed and started: first app ${s2(r.managerFirstMs)}, all ${s2(r.managerMs)}${r.missing ? `; ${r.missing} app(s) NEVER answered` : ""}`,
    );
  const a = rs[0];
  const b = rs[rs.length - 1];
  if (!a || !b) return;
  console.log(
    `  the server's log as it started with the sandbox removed, at ${b.apps} apps (from its start; all answered at +${s2(b.removedMs)}):`,
  );
  for (const l of b.removedLog.slice(0, 30)) console.log(`    ${l}`);
  for (const r of rs) {
    console.log(
      `  at ${r.apps} apps, the manager's dockerd killed and started: each app answering (from the start command's return), with its instances' nodes before`,
    );
    const byTime = [...r.managerApps].sort((x, y) => x.ms - y.ms);
    console.log(`    ${byTime.map((x) => `${x.name}(${x.nodes.join("+")}) ${s2(x.ms)}`).join(", ")}`);
    console.log("    the server's log from the kill (its messages, each once):");
    for (const l of r.managerLog.slice(0, 40)) console.log(`      ${l}`);
  }
  if (a === b) return;
  const slope = (f: (r: Recovery) => number) => (f(b) - f(a)) / (b.apps - a.apps);
  const ratio = (f: (r: Recovery) => number) => (f(b) / f(a)).toFixed(2);
  console.log(
    `  growth from ${a.apps} to ${b.apps} apps (apps x${(b.apps / a.apps).toFixed(2)}), ms per app added and ratio: sandbox removed ${slope((r) => r.removedMs).toFixed(0)} (x${ratio((r) => r.removedMs)}), its API up ${slope((r) => r.removedStartMs).toFixed(0)} (x${ratio((r) => r.removedStartMs)}), its first app ${slope((r) => r.removedFirstMs).toFixed(0)} (x${ratio((r) => r.removedFirstMs)}); sandbox restarted ${slope((r) => r.restartedMs).toFixed(0)} (x${ratio((r) => r.restartedMs)}); manager's dockerd restarted ${slope((r) => r.managerMs).toFixed(0)} (x${ratio((r) => r.managerMs)}); baseline ${slope((r) => r.baselineMs).toFixed(0)} (x${ratio((r) => r.baselineMs)})`,
  );
}

function reportMemory(ms: Memory[]): void {
  const nodes = Object.keys(ms[0]?.nodesKb ?? {});
  console.log(
    "memory: pier server RSS; each node's init and all under it (dockerd, containerd, shims, containers), PSS",
  );
  for (const m of ms)
    console.log(
      `  ${String(m.apps).padStart(3)} apps: server ${mib(m.serverKb)}; ${nodes.map((n) => `${n} ${mib(m.nodesKb[n] ?? 0)}`).join(", ")}`,
    );
  const a = ms[0];
  const b = ms[ms.length - 1];
  if (!a || !b || a === b) return;
  const per = (x: number, y: number) => mib((y - x) / (b.apps - a.apps));
  console.log(
    `  per app from ${a.apps} to ${b.apps} apps: server ${per(a.serverKb, b.serverKb)}; ${nodes.map((n) => `${n} ${per(a.nodesKb[n] ?? 0, b.nodesKb[n] ?? 0)}`).join(", ")}`,
  );
}

// ------------------------------------------------------------------------------------------- main
let pier: Pier | undefined;
let cleaning: Promise<void> | undefined;
const cleanup = (): Promise<void> => {
  cleaning ??= swarmPierDown(pier).catch((e: Error) => console.error(`bench: cleanup: ${e.message}`));
  return cleaning;
};

async function main(): Promise<void> {
  const t0 = Date.now();
  const loads = [`start ${load1()}`];
  console.log(
    `bench/swarm-density: ${N} apps; lab ${process.env.PIER_SWARM_LAB_NAME} (${process.env.PIER_SWARM_LAB_NET}.0/24); checkpoints ${CHECKPOINTS.join(", ")}`,
  );
  const made = await swarmPier({
    images: ["pier/base:bookworm", "pier/node:22", "pier/guard:1"],
    settings: (l) => ({
      ...swarmSettings(l),
      PIER_ACME_DIRECTORY: "off",
      PIER_LOG_LEVEL: "info", // the recovery's steps, timed
      PIER_ISOLATION: "on",
      PIER_EGRESS_ALLOW: `${l.registry.address.split(":")[0]}/32`,
    }),
  });
  pier = made.pier;
  const { info } = made;
  console.log(`set-up ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const mem: Memory[] = [memory(pier, info, 0)];
  const deployed: Deployed[] = [];
  const recs: Recovery[] = [];
  for (let i = 0; i < N; i++) {
    deployed.push(await deployApp(pier, i));
    if (!CHECKPOINTS.includes(i + 1)) continue;
    await sleep(10_000); // idle: the first deploys' retired instances gone
    mem.push(memory(pier, info, i + 1));
    recs.push(await recovery(pier, info, deployed));
    loads.push(`${i + 1} apps ${load1()}`);
    process.stderr.write(`${i + 1} apps (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  }
  const names = deployed.map((d) => d.name);
  const serving = await answering(pier, names);
  reportDeploys(deployed);
  console.log(`answering through the edge at the end: ${serving}/${N} ${verdict(serving === N)}`);
  reportRecoveries(recs);
  reportMemory(mem);
  const d0 = performance.now();
  for (const n of names) {
    const r = await pier.cli(["delete", "--app", n, "--yes"]);
    if (r.code !== 0) throw new Error(`delete of ${n} failed: ${r.stderr}`);
  }
  const left = await docker(info, "node1", ["service", "ls", "-q", "--filter", "label=pier.app"]);
  console.log(
    `deleting all ${N} apps: ${s2(performance.now() - d0)} (${s2((performance.now() - d0) / N)} each); services of apps left ${left.split("\n").filter(Boolean).length}`,
  );
  console.log(
    `total ${((Date.now() - t0) / 1000).toFixed(0)} s; load (1 min): ${loads.join(", ")}, end ${load1()}`,
  );
}

await runBounded(main, cleanup, limitS);
