// Where a new instance of an app goes on the swarm (ADR 0030). Each instance is a service of one replica, so
// the swarm's own spread (a placement preference) acts within one instance only: its scheduler then fills
// the node with the fewest tasks of any kind, and an app's 3 instances could all land on one node when
// other apps' tasks weigh on the others. Pier chooses the node itself, from the app's live tasks: the one
// with the fewest instances of the same deployment, then of the app. The new service is made pinned there,
// and the pin is lifted once its task started: a placement-only change the swarm applies without replacing
// a task whose node still fits, so a lost or drained node's instances are rescheduled as before.
import { createHash } from "node:crypto";
import { LABEL } from "../../core/labels.js";
import type { SwarmNodeState } from "./swarm-services.js";
import type { SwarmTask } from "./swarm-tasks.js";

/** The app (and the deployment) a new instance belongs to. */
export interface PlacementKey {
  appId: string;
  deploymentId: string | undefined;
}

/** A live instance as the spread counts it: its node (none before the swarm assigned one), its deployment. */
export interface PlacedInstance {
  nodeId: string | undefined;
  deploymentId: string | undefined;
}

/** The constraint that pins a task to one node. */
export const pinConstraint = (nodeId: string): string => `node.id==${nodeId}`;

/** The node a service is pinned to by Pier's choice (not a bucket's `node.hostname==`), if any. */
export function pinnedNode(constraints: readonly string[] | undefined): string | null {
  for (const c of constraints ?? []) {
    const m = /^node\.id==(\S+)$/.exec(c);
    if (m) return m[1]!;
  }
  return null;
}

/**
 * The node a new instance of `key` goes to: among the nodes that take new tasks (ready, active), the one with
 * the fewest live instances of the same deployment, then of the app, then first in an order drawn from the
 * app's id (two apps' first instances go to different nodes, and the choice is the same on every call).
 * Null when there is nothing to choose: fewer than 2 such nodes (the swarm's own placement says why none).
 */
export function spreadNode(
  nodes: ReadonlyMap<string, SwarmNodeState>,
  live: readonly PlacedInstance[],
  key: PlacementKey,
): string | null {
  const open = [...nodes].filter(([, n]) => n.ready && n.active).map(([id]) => id);
  if (open.length < 2) return null;
  const count = (id: string, same: (p: PlacedInstance) => boolean) =>
    live.filter((p) => p.nodeId === id && same(p)).length;
  const rank = (id: string): [number, number, string] => [
    key.deploymentId === undefined ? 0 : count(id, (p) => p.deploymentId === key.deploymentId),
    count(id, () => true),
    createHash("sha256").update(`${key.appId} ${id}`).digest("hex"),
  ];
  const ranked = open.map((id) => ({ id, r: rank(id) }));
  ranked.sort((a, b) => a.r[0] - b.r[0] || a.r[1] - b.r[1] || (a.r[2] < b.r[2] ? -1 : 1));
  return ranked[0]!.id;
}

/** What the spread reads of the swarm: its nodes, and an app's tasks the swarm wants running. */
export interface SpreadReads {
  nodes(): Promise<Map<string, SwarmNodeState>>;
  liveTasks(appId: string): Promise<SwarmTask[]>;
}

/** A node chosen for one start: tell it the service once made, and that the start is over. */
export interface Reservation {
  nodeId: string;
  made(serviceId: string): void;
  done(): void;
}

interface Pending extends PlacementKey {
  nodeId: string;
  serviceId?: string;
}

/**
 * Chooses the node of each new instance (`spreadNode`), counting the starts in flight that the swarm does not
 * list yet: a deploy starts its instances together, and each must see where the others went.
 */
export class SwarmSpread {
  private readonly pending = new Set<Pending>();

  constructor(private readonly reads: SpreadReads) {}

  /** Whether a start of this process made that service and has not lifted its pin yet. */
  starting(serviceId: string): boolean {
    return [...this.pending].some((p) => p.serviceId === serviceId);
  }

  /** The node to pin a new instance of `key` to, reserved until `done()`; null when there is no choice. */
  async reserve(key: PlacementKey): Promise<Reservation | null> {
    const [nodes, tasks] = await Promise.all([this.reads.nodes(), this.reads.liveTasks(key.appId)]);
    const mine = [...this.pending].filter((p) => p.appId === key.appId);
    const listed = new Set(tasks.map((t) => t.ServiceID));
    // A task listed before the swarm assigned it counts on the node it is pinned to.
    const live: PlacedInstance[] = tasks.map((t) => ({
      nodeId: t.NodeID || mine.find((p) => p.serviceId === t.ServiceID)?.nodeId,
      deploymentId: t.Spec?.ContainerSpec?.Labels?.[LABEL.deployment],
    }));
    for (const p of mine)
      if (!(p.serviceId && listed.has(p.serviceId)))
        live.push({ nodeId: p.nodeId, deploymentId: p.deploymentId });
    const nodeId = spreadNode(nodes, live, key);
    if (!nodeId) return null;
    const pending: Pending = { ...key, nodeId };
    this.pending.add(pending);
    return {
      nodeId,
      made: (serviceId) => {
        pending.serviceId = serviceId;
      },
      done: () => {
        this.pending.delete(pending);
      },
    };
  }
}
