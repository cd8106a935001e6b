// bench/swarm-start (issue 18 item 5, ADR 0030): the swarm driver's start of a release's instances alone,
// without a build, git or the edge around it: `SwarmEngine.runInstance` of 3 instances side by side (as a
// deploy starts them), from the call to all three returned, on a 3-node lab; then they are removed. With a
// second build of Pier given (the `dist` directory of another checkout, e.g. a worktree of main before a
// change), rounds alternate the two drivers (ABAB, one warm-up round each), and it prints both medians and
// their ratio: an A/B of a change to the start's path, measured in one run on one lab. Always beside them,
// as the baseline: the swarm alone (three services of the spec Pier made, pinned one per node, created side
// by side and polled every 25 ms until running, none of Pier's calls around them): what the driver adds.
// Run: npm run build && node dist/bench/swarm-start.js [rounds, default 10] [other dist directory]
// The lab is PIER_SWARM_LAB_NAME / PIER_SWARM_LAB_NET when set, else bench/swarm's own (pierbench,
// 192.168.249). It goes down at the end, on a failure, on SIGINT/SIGTERM and past PIER_BENCH_LIMIT_S
// (default 1200 s).
import { randomBytes } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Docker from "dockerode";
import type { SwarmEngine } from "../src/adapters/engine/swarm.js";
import { pinConstraint } from "../src/adapters/engine/swarm-spec.js";
import { LABEL } from "../src/core/labels.js";
import type { InstanceSpec } from "../src/core/ports.js";
import {
  type DriverClasses,
  httpdInstance,
  importBusybox,
  LAB_BUSYBOX,
  type LabInfo,
  lab,
  labRegistryAuth,
  labSocket,
  labSwarmEngine,
  labUp,
} from "../test/e2e-swarm/lab.js";
import { load1, median, sleep } from "./common.js";
import { runBounded } from "./procs.js";

const ROUNDS = Number(process.argv[2] ?? 10);
const OTHER = process.argv[3];
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 50) throw new Error("rounds: 1 to 50");
const limitS = Number(process.env.PIER_BENCH_LIMIT_S ?? 1200);
if (!process.env.PIER_SWARM_LAB_NAME) {
  process.env.PIER_SWARM_LAB_NAME = "pierbench";
  process.env.PIER_SWARM_LAB_NET = process.env.PIER_SWARM_LAB_NET ?? "192.168.249";
}
/** This build's dist directory (bench/ is compiled to dist/bench/). */
const OWN = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** One way of starting three instances side by side: the time to all three started, and their removal. */
interface Side {
  name: string;
  start: (round: number) => Promise<{ ms: number; remove: () => Promise<void> }>;
  ms: number[];
}

/** A swarm driver of the build in `dist` on the lab's manager (lab.ts `labSwarmEngine`, with its classes). */
async function driver(dist: string, info: LabInfo, scope: string): Promise<SwarmEngine> {
  const load = (p: string) => import(pathToFileURL(join(dist, p)).href);
  const [engine, push] = await Promise.all([
    load("src/adapters/engine/swarm.js"),
    load("src/adapters/engine/registry-push.js"),
  ]);
  const classes = {
    SwarmEngine: engine.SwarmEngine,
    DockerRegistryPush: push.DockerRegistryPush,
  } as DriverClasses;
  return labSwarmEngine(info, scope, { stopGraceMs: 1000, classes });
}

const spec = (prefix: string, round: number, n: number): InstanceSpec =>
  httpdInstance(`${prefix}-${round}-${n}`, prefix, {
    [LABEL.deployment]: `r${round}`,
    [LABEL.instance]: String(n),
  });

/** Pier's driver: `runInstance` of three instances side by side (as a deploy starts them). */
function pierSide(name: string, engine: SwarmEngine, prefix: string): Side {
  return {
    name,
    ms: [],
    start: async (r) => {
      const t0 = performance.now();
      const made = await Promise.all([0, 1, 2].map((n) => engine.runInstance(spec(prefix, r, n))));
      const ms = performance.now() - t0;
      const nodes = new Set(made.map((m) => m.node));
      if (nodes.size < 2) throw new Error(`${name}: the three instances on ${[...nodes].join(", ")}`);
      return {
        ms,
        remove: () => Promise.all(made.map((m) => engine.removeInstance(m.id, 1000))).then(() => {}),
      };
    },
  };
}

/**
 * The baseline: the swarm alone, with none of Pier's calls around it. Three services of the spec Pier made
 * for a warm-up instance (its image by digest, network, mounts, limits), each pinned to one node as Pier
 * pins them, created side by side with the registry's credentials; each task's state polled every 25 ms
 * until it runs.
 */
function swarmAlone(
  manager: Docker,
  template: Record<string, unknown>,
  auth: object,
  nodeIds: string[],
): Side {
  const one = async (name: string, nodeId: string): Promise<string> => {
    const t = template as { TaskTemplate: Record<string, unknown> };
    const made = (await manager.createService(auth, {
      ...template,
      Name: name,
      TaskTemplate: {
        ...t.TaskTemplate,
        Placement: { Constraints: [pinConstraint(nodeId)] },
      },
    } as Docker.CreateServiceOptions)) as { id: string };
    for (const t0 = Date.now(); Date.now() - t0 < 60_000; ) {
      const tasks = (await manager.listTasks({ filters: { service: [made.id] } })) as {
        Status?: { State?: string; Err?: string };
      }[];
      const state = tasks[0]?.Status?.State;
      if (state === "running") return made.id;
      if (state === "failed" || state === "rejected") throw new Error(`${name}: ${tasks[0]?.Status?.Err}`);
      await sleep(25);
    }
    throw new Error(`${name} did not run within 60 s`);
  };
  return {
    name: "the swarm alone",
    ms: [],
    start: async (r) => {
      const t0 = performance.now();
      const ids = await Promise.all(nodeIds.map((node, n) => one(`alone-${r}-${n}`, node)));
      const ms = performance.now() - t0;
      return {
        ms,
        remove: () => Promise.all(ids.map((id) => manager.getService(id).remove())).then(() => {}),
      };
    },
  };
}

/**
 * One round of a side: timed, then its instances removed, and waited for until no node has any of their
 * containers left (a container still being torn down would slow the next round, whichever side it is).
 */
async function round(nodes: readonly Docker[], side: Side, r: number): Promise<number> {
  const { ms, remove } = await side.start(r);
  await remove();
  const left = async () => {
    const lists = await Promise.all(
      nodes.map((d) => d.listContainers({ all: true, filters: { label: [`${LABEL.role}=instance`] } })),
    );
    return lists.reduce((sum, l) => sum + l.length, 0);
  };
  for (const t0 = Date.now(); (await left()) > 0; ) {
    if (Date.now() - t0 > 60_000) throw new Error(`${side.name}: containers left on the nodes after 60 s`);
    await sleep(100);
  }
  return ms;
}

async function main(): Promise<void> {
  console.log(
    `bench/swarm-start: ${ROUNDS} rounds of 3 instances started side by side; ${OTHER ? `A/B with ${OTHER}` : "this build only"}; load ${load1()}`,
  );
  await lab("down");
  const info = await labUp(3);
  await importBusybox(info, "node1", LAB_BUSYBOX);
  const dists: [string, string][] = [["this build", OWN]];
  if (OTHER) dists.push(["the other build", resolve(OTHER)]);
  const manager = new Docker({ socketPath: labSocket(info, "node1") });
  const nodeEngines = info.nodes.map((n) => new Docker({ socketPath: labSocket(info, n.name) }));
  const sides: Side[] = [];
  let template: Record<string, unknown> | null = null;
  for (const [name, dist] of dists) {
    const prefix = `st${sides.length}-${randomBytes(2).toString("hex")}`;
    const engine = await driver(dist, info, prefix);
    const subnet = `10.23${2 + sides.length}.0.0/24`;
    await engine.ensureNetwork(`${prefix}-net`, { [LABEL.app]: prefix }, { ipv4: subnet, ipv6: null });
    const side = pierSide(name, engine, prefix);
    // Warm-up: the image pushed, the overlay on every node; the first build's spec kept for the baseline.
    const { remove } = await side.start(0);
    if (!template) {
      const [first] = await engine.listInstances({ [LABEL.app]: prefix });
      const service = (await manager.getService(first?.id ?? "").inspect()) as {
        Spec: Record<string, unknown>;
      };
      template = service.Spec;
    }
    await remove();
    sides.push(side);
  }
  const nodes = (await manager.listNodes()) as { ID: string }[];
  const ids = nodes.map((n) => n.ID).slice(0, 3);
  const alone = swarmAlone(manager, template ?? {}, labRegistryAuth(info), ids);
  await round(nodeEngines, alone, 0);
  sides.push(alone);
  for (let r = 1; r <= ROUNDS; r++) for (const side of sides) side.ms.push(await round(nodeEngines, side, r));
  for (const s of sides)
    console.log(
      `  ${s.name}: median ${median(s.ms).toFixed(0)} ms  [${s.ms.map((m) => m.toFixed(0)).join(", ")}]`,
    );
  const base = median(alone.ms);
  for (const s of sides.filter((x) => x !== alone))
    console.log(
      `  ${s.name} / the swarm alone: ${(median(s.ms) / base).toFixed(2)} (${median(s.ms) >= base ? "+" : ""}${(median(s.ms) - base).toFixed(0)} ms)`,
    );
  const [a, b] = sides;
  if (OTHER && a && b)
    console.log(`  ratio this build / the other: ${(median(a.ms) / median(b.ms)).toFixed(3)}`);
  console.log(`load at the end ${load1()}`);
}

await runBounded(main, () => lab("down").then(() => undefined), limitS);
