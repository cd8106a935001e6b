// bench/rebalance-pass (issue 18, ADR 0030 fifteenth part): how long a node's return takes to even the nodes
// out, moving one app at a time against several at once (PIER_REBALANCE_AT_ONCE), on a 3-node lab. N
// one-instance Dockerfile apps; per round: pier server started with the round's setting, node3 drained
// (the swarm moves its instances to node1 and node2), then activated: the time from the activation to the
// end of the last redeploy its pass planned (the deployments' own finish times), the moves, each move's
// median time, and the instances per node after the pass and its second look. Rounds alternate the two
// settings (ABAB...), both measured in this run; it prints the ratio of the medians.
// Run: npm run build && node dist/bench/rebalance-pass.js [N, default 12] [rounds per setting, default 2]
//      [the setting compared with 1, default 3]
// The lab is PIER_SWARM_LAB_NAME / PIER_SWARM_LAB_NET when set, else bench/swarm's own (pierbench,
// 192.168.249). The lab goes down and the Pier is destroyed at the end, on a failure, on SIGINT/SIGTERM and
// past the time limit (PIER_BENCH_LIMIT_S, default 2400 s).
import { NODE_DOCKER_APP, type Pier } from "../test/e2e/harness.js";
import { swarmPier, swarmPierDown, swarmSettings, until } from "../test/e2e-swarm/lab.js";
import { load1, median, sleep } from "./common.js";
import { runBounded } from "./procs.js";

const N = Number(process.argv[2] ?? 12);
const ROUNDS = Number(process.argv[3] ?? 2);
const AT_ONCE = Number(process.argv[4] ?? 3);
if (!Number.isInteger(N) || N < 6 || N > 60) throw new Error(`N must be an integer from 6 to 60, not ${N}`);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 5) throw new Error("rounds: 1 to 5");
if (!Number.isInteger(AT_ONCE) || AT_ONCE < 2 || AT_ONCE > 20) throw new Error("the setting: 2 to 20");
const limitS = Number(process.env.PIER_BENCH_LIMIT_S ?? 2400);
if (!process.env.PIER_SWARM_LAB_NAME) {
  process.env.PIER_SWARM_LAB_NAME = "pierbench";
  process.env.PIER_SWARM_LAB_NET = process.env.PIER_SWARM_LAB_NET ?? "192.168.249";
}
const CAUSE = "rebalance: node3 activated";

let pier: Pier | undefined;

interface DeploymentRow {
  cause: string;
  state: string;
  createdAt: string;
  finishedAt: string | null;
}

interface Pass {
  atOnce: number;
  planned: number;
  passMs: number;
  moveMs: number[];
  later: number;
  failed: number;
  perNode: number[];
  /** The most moves under way together (from the deployments' own times): what the setting did. */
  together: number;
}

/** The most intervals open at one time. */
function mostTogether(ds: readonly DeploymentRow[]): number {
  const edges = ds.flatMap((d) => [
    { t: Date.parse(d.createdAt), up: 1 },
    { t: Date.parse(d.finishedAt ?? d.createdAt), up: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.up - b.up);
  let open = 0;
  let most = 0;
  for (const e of edges) {
    open += e.up;
    most = Math.max(most, open);
  }
  return most;
}

const s2 = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function perNode(p: Pier): Promise<Map<string, number>> {
  const nodes = await p.cliJson<{ name: string; instances: number }[]>(["nodes"]);
  return new Map(nodes.map((n) => [n.name, n.instances]));
}

/** The rebalance deployments of every app since `since` (ms). */
async function rebalances(p: Pier, names: readonly string[], since: number): Promise<DeploymentRow[]> {
  const out: DeploymentRow[] = [];
  for (const name of names) {
    const r = await p.api("GET", `/v1/apps/${name}/deployments`);
    if (r.status !== 200) throw new Error(`deployments of ${name}: ${r.status} ${JSON.stringify(r.json)}`);
    for (const d of r.json as DeploymentRow[])
      if (d.cause === CAUSE && Date.parse(d.createdAt) >= since) out.push(d);
  }
  return out;
}

async function pass(p: Pier, names: readonly string[], atOnce: number): Promise<Pass> {
  const drained = await p.cli(["nodes", "drain", "node3"]);
  if (drained.code !== 0) throw new Error(`drain: ${drained.stderr}`);
  await until("every instance on node1 and node2", 180, async () => {
    const n = await perNode(p);
    return n.get("node3") === 0 && (n.get("node1") ?? 0) + (n.get("node2") ?? 0) === N ? n : undefined;
  });
  await sleep(3000);
  const t0 = Date.now();
  const activated = await p.cli(["nodes", "activate", "node3"]);
  if (activated.code !== 0) throw new Error(`activate: ${activated.stderr}`);
  const named = /planned now: (.*)$/m.exec(activated.stderr)?.[1]?.split(", ") ?? [];
  if (named.length === 0) throw new Error(`no app planned: ${activated.stderr}`);
  const ended = (ds: DeploymentRow[]) => ds.filter((d) => d.finishedAt);
  const first = await until(`the ${named.length} planned moves ended`, 600, async () => {
    const ds = await rebalances(p, names, t0);
    return ended(ds).length >= named.length ? ds : undefined;
  });
  const byEnd = ended(first).sort((a, b) => Date.parse(a.finishedAt ?? "") - Date.parse(b.finishedAt ?? ""));
  const pass = byEnd.slice(0, named.length);
  const passMs = Date.parse(pass.at(-1)?.finishedAt ?? "") - t0;
  // The second look (10 s after the pass) may move more: waited for, counted apart.
  await sleep(15_000);
  const all = await until("no rebalance under way", 300, async () => {
    const ds = await rebalances(p, names, t0);
    return ds.every((d) => d.finishedAt) ? ds : undefined;
  });
  return {
    atOnce,
    planned: named.length,
    passMs,
    moveMs: pass.map((d) => Date.parse(d.finishedAt ?? "") - Date.parse(d.createdAt)),
    later: all.length - pass.length,
    failed: all.filter((d) => d.state !== "succeeded").length,
    perNode: [...(await perNode(p)).values()],
    together: mostTogether(pass),
  };
}

async function main(): Promise<void> {
  const t0 = Date.now();
  console.log(
    `bench/rebalance-pass: ${N} one-instance apps, ${ROUNDS} rounds of 1 and of ${AT_ONCE} at once; lab ${process.env.PIER_SWARM_LAB_NAME}; load ${load1()}`,
  );
  const made = await swarmPier({
    images: ["pier/base:bookworm", "pier/node:22"],
    settings: (l) => ({ ...swarmSettings(l), PIER_ACME_DIRECTORY: "off", PIER_REBALANCE_EVERY: "0" }),
  });
  pier = made.pier;
  const names: string[] = [];
  for (let i = 0; i < N; i++) {
    const name = `rp${i}`;
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", name]);
    const push = await pier.push(await pier.repo(name, NODE_DOCKER_APP, app.id));
    if (push.code !== 0) throw new Error(`push of ${name} failed: ${push.stderr}`);
    names.push(name);
  }
  console.log(`set-up and ${N} deploys: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const passes: Pass[] = [];
  for (let r = 0; r < ROUNDS; r++)
    for (const atOnce of [1, AT_ONCE]) {
      await pier.restartServer({ PIER_REBALANCE_AT_ONCE: String(atOnce) });
      await sleep(12_000); // the look at the start (10 s after it) ends before the drain
      const p = await pass(pier, names, atOnce);
      passes.push(p);
      console.log(
        `round ${r + 1}, ${atOnce} at once: ${p.planned} moves in ${s2(p.passMs)} (a move: median ${s2(median(p.moveMs))}, ` +
          `at most ${p.together} together; second look moved ${p.later}; failed ${p.failed}; instances per node after: ${p.perNode.join("/")}; load ${load1()}`,
      );
    }
  const of = (k: number) => median(passes.filter((p) => p.atOnce === k).map((p) => p.passMs));
  const one = of(1);
  const many = of(AT_ONCE);
  console.log(
    `pass after node3's return, median: 1 at once ${s2(one)}, ${AT_ONCE} at once ${s2(many)}; ratio ${(many / one).toFixed(2)}`,
  );
  console.log(`total ${((Date.now() - t0) / 1000).toFixed(0)} s; load at the end ${load1()}`);
}

await runBounded(main, () => swarmPierDown(pier), limitS);
