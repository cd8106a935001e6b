// bench/rebalance-plan: how the rebalancer's plan (src/core/rebalance.ts spreadPlan, ADR 0030 thirteenth
// part) grows with the apps: a node back after a drain, N one-instance apps on the two other nodes, the plan
// that evens the three out (N/3 moves). The rebalancer makes a plan again before each move, so the whole
// pass costs moves x plan. Printed: the median plan at 30, 300 and 1000 apps, its cost per app, and the
// ratio of that per-app cost at 1000 apps against 30 (1.0 is linear growth of a plan).
// Run: npm run build && node dist/bench/rebalance-plan.js [rounds, default 20]
import type { ClusterNode } from "../src/core/nodes.js";
import { type PlacedServing, spreadPlan } from "../src/core/rebalance.js";

const ROUNDS = Number(process.argv[2] ?? 20);
const nodes: ClusterNode[] = ["node1", "node2", "node3"].map((name) => ({
  id: name,
  name,
  address: "",
  role: "worker",
  leader: false,
  availability: "active",
  state: "ready",
  labels: {},
}));

function medianMs(apps: number): { ms: number; moves: number } {
  const serving = new Map<string, string>();
  const instances: PlacedServing[] = [];
  for (let i = 0; i < apps; i++) {
    serving.set(`a${i}`, `d${i}`);
    instances.push({
      labels: { "pier.app": `a${i}`, "pier.deployment": `d${i}` },
      running: true,
      node: i % 2 ? "node1" : "node2",
    });
  }
  const movable = new Set(serving.keys());
  const times: number[] = [];
  let moves = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    moves = spreadPlan(nodes, instances, serving, movable).length;
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)] ?? 0, moves };
}

const sizes = [30, 300, 1000];
// Once each first, not counted: the first plans run before the JIT compiled the code.
for (const n of sizes) medianMs(n);
const results = sizes.map((n) => ({ n, ...medianMs(n) }));
for (const r of results)
  console.log(
    `${r.n} apps: ${r.moves} moves planned in ${r.ms.toFixed(2)} ms (${((r.ms / r.n) * 1000).toFixed(1)} us per app); a pass of ${r.moves} plans: ${((r.ms * r.moves) / 1000).toFixed(2)} s of CPU`,
  );
const first = results[0] as { n: number; ms: number };
const last = results[results.length - 1] as { n: number; ms: number };
console.log(
  `per-app cost of a plan, ${last.n} apps against ${first.n}: ${(last.ms / last.n / (first.ms / first.n)).toFixed(2)}x`,
);
