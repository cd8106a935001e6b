/**
 * When an app's instances should be spread again over a swarm's nodes (issue 18, ADR 0030): a lost or
 * drained node's instances are placed by the swarm on the nodes left, and stay there when the node takes
 * work again. Pure: the nodes as listed, each app's serving instances with their node.
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
 * The apps (by id, in `serving`'s order) whose serving deployment's running instances crowd some nodes
 * while others that take work run fewer (`crowded`). `serving`: each app's serving deployment id, for the
 * apps that run a release of instances (not a task, not stopped).
 */
export function crowdedApps(
  nodes: readonly ClusterNode[],
  instances: readonly PlacedServing[],
  serving: ReadonlyMap<string, string>,
): string[] {
  const open = nodes.filter(takesWork).map((n) => n.name);
  const where = new Map<string, string[]>();
  for (const i of instances) {
    const app = i.labels[LABEL.app];
    if (!i.running || !i.node || !app || i.labels[LABEL.deployment] !== serving.get(app)) continue;
    where.set(app, [...(where.get(app) ?? []), i.node]);
  }
  return [...serving.keys()].filter((app) => crowded(open, where.get(app) ?? []));
}
