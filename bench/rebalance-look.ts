// bench/rebalance-look: what one look of the rebalancer costs as the apps grow (src/server/rebalancer.ts
// `planned`, ADR 0030 fourteenth part): the regular look runs it every PIER_REBALANCE_EVERY on a quiet
// swarm, and a pass runs it before each move. A look lists the nodes and the instances (fakes here: one
// engine call each, whatever the number of apps), reads every app, its current release and its links from
// the real SQLite store, and makes the plan. N one-instance apps spread evenly over three nodes, so the
// plan is empty, as at a regular look that finds nothing to do. Printed: the median look at 30, 300 and
// 1000 apps, its cost per app, and the ratio of that per-app cost at 1000 apps against 30 (1.0: linear).
// Run: npm run build && node dist/bench/rebalance-look.js [rounds, default 15]
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { SecretBox } from "../src/adapters/secret-box.js";
import { SqliteStore } from "../src/adapters/store/sqlite.js";
import { Rebalancer } from "../src/server/rebalancer.js";
import { FakeEngine } from "../test/support/fake-engine.js";
import { FakeNodes } from "../test/support/fake-nodes.js";
import { servingApp } from "../test/support/serving-app.js";

const ROUNDS = Number(process.argv[2] ?? 15);

async function medianMs(apps: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "pier-bench-look-"));
  try {
    const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromKey(randomBytes(32)));
    const engine = new FakeEngine();
    for (let i = 0; i < apps; i++) {
      await servingApp(store, engine, `a${i}`, [`node${(i % 3) + 1}`]);
    }
    const addons = store.addons();
    const rebalancer = new Rebalancer({
      nodes: new FakeNodes(),
      engine,
      store,
      deployer: { enqueue: () => Promise.reject(new Error("no deploy in a bench")), isBusy: () => false },
      pinned: async (id) => (await addons.linkedAddons(id)).some((a) => a.kind === "fs" && !!a.node),
      logger: pino({ level: "silent" }),
    });
    const times: number[] = [];
    for (let r = 0; r < ROUNDS + 2; r++) {
      const t0 = performance.now();
      const plan = await rebalancer.planned();
      if (plan.length !== 0) throw new Error(`an even swarm planned ${plan.length} moves`);
      // The first two rounds are not counted: the JIT and SQLite's caches warm up.
      if (r >= 2) times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)] ?? 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: { n: number; ms: number }[] = [];
for (const n of [30, 300, 1000]) results.push({ n, ms: await medianMs(n) });
for (const r of results)
  console.log(
    `${r.n} apps: a look in ${r.ms.toFixed(1)} ms (${((r.ms / r.n) * 1000).toFixed(0)} us per app); every 15 min that is ${((r.ms / 900_000) * 100).toFixed(4)}% of one core`,
  );
const first = results[0] as { n: number; ms: number };
const last = results[results.length - 1] as { n: number; ms: number };
console.log(
  `per-app cost of a look, ${last.n} apps against ${first.n}: ${(last.ms / last.n / (first.ms / first.n)).toFixed(2)}x`,
);
