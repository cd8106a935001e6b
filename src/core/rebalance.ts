/**
 * When instances should be spread again over a swarm's nodes (issue 18, ADR 0030): a lost or drained node's
 * instances are placed by the swarm on the nodes left, and stay there when the node takes work again. Which
 * apps a redeploy should move, for their own spread and for the nodes' loads. Pure: the nodes as listed,
 * each app's serving instances with their node.
 */
import { LABEL } from "./labels.js";
import type { ClusterNode } from "./nodes.js";

/** A node that takes new instances: ready and active. */
export const takesWork = (n: Pick<ClusterNode, "state" | "availability">): boolean =>
  n.state === "ready" && n.availability === "active";

/**
 * Whether moving one instance would even out an app's spread: some node runs at least two more of its
 * running instances than a node that takes work runs. Fewer than two such nodes: nothing to spread onto.
 * (One instance per node on 3 nodes of 4 is even; 2, 1 and 0 on three nodes is not.)
 */
export function crowded(open: readonly string[], nodesOfRunning: readonly string[]): boolean {
  if (open.length < 2) return false;
  const count = new Map<string, number>();
  for (const n of nodesOfRunning) count.set(n, (count.get(n) ?? 0) + 1);
  const most = Math.max(0, ...count.values());
  const least = Math.min(...open.map((n) => count.get(n) ?? 0));
  return most - least >= 2;
}

/** An instance as the rule reads it: its app, its deployment, whether it runs and where. */
export interface PlacedServing {
  labels: Record<string, string>;
  running: boolean;
  node?: string;
}

/**
 * The apps to redeploy, in order, so that instances spread again over the nodes that take work (a node back
 * after a loss, or activated after a drain: the swarm never moves instances back itself).
 *
 * 1. Each movable app whose own instances crowd some nodes (`crowded`), in `serving`'s order.
 * 2. Then while the busiest open node runs at least two more of Pier's serving instances (every app's) than
 *    the emptiest: a movable app with an instance on the busiest node, not picked yet, whose redeploy would
 *    even the nodes out (fewest instances first: one-instance apps move one instance each), until none is
 *    left or the nodes are even. So a node drained and activated again, or lost and back, gets its share of
 *    one-instance apps back too, not only of apps with several instances.
 *
 * A redeploy is simulated as the spread places a deploy's instances (adapters/engine/swarm-placement.ts):
 * each on the open node with the fewest of the new deployment, then of the app, then of every app's. Each
 * app at most once: a plan has at most as many moves as apps.
 *
 * `serving`: each app that runs a release of instances, with its serving deployment (its instances count
 * as load whether or not it may move); `movable`: the apps a redeploy may move (not being deployed, not held
 * on a node).
 */
export function spreadPlan(
  nodes: readonly ClusterNode[],
  instances: readonly PlacedServing[],
  serving: ReadonlyMap<string, string>,
  movable: ReadonlySet<string>,
): string[] {
  const open = nodes.filter(takesWork).map((n) => n.name);
  if (open.length < 2) return [];
  const spread = new Spread(open, placed(instances, serving));
  const out = new Set<string>();
  const take = (app: string) => {
    out.add(app);
    spread.redeploy(app);
  };
  for (const app of serving.keys()) if (movable.has(app) && crowded(open, spread.nodesOf(app))) take(app);
  const smallestFirst = [...movable].sort((a, b) => spread.size(a) - spread.size(b));
  for (;;) {
    const busiest = spread.busiest();
    const pick =
      busiest &&
      smallestFirst.find((app) => !out.has(app) && spread.count(app, busiest) > 0 && spread.evens(app));
    if (!pick) return [...out];
    take(pick);
  }
}

/** How many serving instances (every app's serving deployment's, running) each node runs. */
export function loadPerNode(
  instances: readonly PlacedServing[],
  serving: ReadonlyMap<string, string>,
): Record<string, number> {
  return Object.fromEntries(perNode(placed(instances, serving)));
}

/** The instances per node, every app's summed. */
function perNode(where: ReadonlyMap<string, ReadonlyMap<string, number>>): Map<string, number> {
  const load = new Map<string, number>();
  for (const counts of where.values()) for (const [n, c] of counts) load.set(n, (load.get(n) ?? 0) + c);
  return load;
}

/** Each app's serving deployment's running instances, as node -> count. */
function placed(
  instances: readonly PlacedServing[],
  serving: ReadonlyMap<string, string>,
): Map<string, Map<string, number>> {
  const where = new Map<string, Map<string, number>>();
  for (const i of instances) {
    const app = i.labels[LABEL.app];
    if (!i.running || !i.node || !app || i.labels[LABEL.deployment] !== serving.get(app)) continue;
    const counts = where.get(app) ?? new Map<string, number>();
    counts.set(i.node, (counts.get(i.node) ?? 0) + 1);
    where.set(app, counts);
  }
  return where;
}

/** The instances per app and per node as a plan moves them (spreadPlan). */
class Spread {
  private readonly load: Map<string, number>;

  constructor(
    private readonly open: readonly string[],
    private readonly where: Map<string, Map<string, number>>,
  ) {
    this.load = perNode(where);
  }

  count(app: string, node: string): number {
    return this.where.get(app)?.get(node) ?? 0;
  }

  size(app: string): number {
    return [...(this.where.get(app)?.values() ?? [])].reduce((a, b) => a + b, 0);
  }

  /** The app's nodes, one entry per instance. */
  nodesOf(app: string): string[] {
    return [...(this.where.get(app) ?? [])].flatMap(([n, c]) => Array<string>(c).fill(n));
  }

  /** The busiest open node when it runs two or more instances more than the emptiest, else null. */
  busiest(): string | null {
    const byLoad = [...this.open].sort((a, b) => this.loadOf(b) - this.loadOf(a));
    const most = byLoad[0] as string;
    return this.loadOf(most) - this.loadOf(byLoad[byLoad.length - 1] as string) >= 2 ? most : null;
  }

  /** Whether redeploying the app would even the open nodes out (their squared loads summed drop). */
  evens(app: string): boolean {
    const before = this.unevenness();
    const placedNew = this.placement(app);
    const old = this.where.get(app) ?? new Map<string, number>();
    this.move(old, placedNew);
    const after = this.unevenness();
    this.move(placedNew, old);
    return after < before;
  }

  /** The app's instances placed anew, as a deploy's spread would place them. */
  redeploy(app: string): void {
    const placedNew = this.placement(app);
    this.move(this.where.get(app) ?? new Map(), placedNew);
    this.where.set(app, placedNew);
  }

  private placement(app: string): Map<string, number> {
    const old = this.where.get(app) ?? new Map<string, number>();
    const fresh = new Map<string, number>();
    const rank = (n: string): [number, number, number] => [
      fresh.get(n) ?? 0,
      old.get(n) ?? 0,
      this.loadOf(n) + (fresh.get(n) ?? 0),
    ];
    for (let k = this.size(app); k > 0; k--) {
      let best = this.open[0] as string;
      for (const n of this.open) if (before(rank(n), rank(best))) best = n;
      fresh.set(best, (fresh.get(best) ?? 0) + 1);
    }
    return fresh;
  }

  private move(from: Map<string, number>, to: Map<string, number>): void {
    for (const [n, c] of from) this.add(n, -c);
    for (const [n, c] of to) this.add(n, c);
  }

  private add(node: string, c: number): void {
    this.load.set(node, this.loadOf(node) + c);
  }

  private loadOf(node: string): number {
    return this.load.get(node) ?? 0;
  }

  private unevenness(): number {
    return this.open.reduce((sum, n) => sum + this.loadOf(n) ** 2, 0);
  }
}

const before = (a: readonly number[], b: readonly number[]): boolean => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  return false;
};
