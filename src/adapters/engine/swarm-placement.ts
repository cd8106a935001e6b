// Where a new instance of an app goes on the swarm (ADR 0030). Each instance is a service of one replica, so
// the swarm's own spread (a placement preference) acts within one instance only: its scheduler then fills
// the node with the fewest tasks of any kind, and an app's 3 instances could all land on one node when
// other apps' tasks weigh on the others. Pier chooses the node itself, from the app's live tasks: the one
// with the fewest instances of the same deployment, then of the app, then the smallest share of its memory
// held by all of Pier's instances (a new app's instance goes where most is free; a node the instance would
// not fit in is not chosen: the swarm would refuse it). The new service is made pinned there,
// and the pin is lifted once its task started: a placement-only change the swarm applies without replacing
// a task whose node still fits, so a lost or drained node's instances are rescheduled as before.
import { createHash } from "node:crypto";
import { LABEL } from "../../core/labels.js";
import type { SwarmNodeState } from "./swarm-services.js";
import type { SwarmTask } from "./swarm-tasks.js";

/** The app (and the deployment) a new instance belongs to, and the memory it reserves. */
export interface PlacementKey {
  appId: string;
  deploymentId: string | undefined;
  memoryBytes: number;
}

/** A live instance as the spread counts it: its node (none before the swarm assigned one), its deployment. */
export interface PlacedInstance {
  nodeId: string | undefined;
  deploymentId: string | undefined;
}

/**
 * The node a new instance of `key` goes to: among the nodes that take new tasks (ready, active) and have room
 * for its memory, the one with the fewest live instances of the same deployment, then of the app, then with
 * the smallest share of its memory held once it is placed (`reserved`: the memory Pier's instances reserve
 * per node; as bytes when a node does not tell its memory), then first in an order drawn from the app's id
 * (the choice is the same on every call). Null when there is nothing to choose: fewer than 2 such nodes
 * (the swarm's own placement says why none).
 */
export function spreadNode(
  nodes: ReadonlyMap<string, SwarmNodeState>,
  live: readonly PlacedInstance[],
  key: PlacementKey,
  reserved: ReadonlyMap<string, number> = new Map(),
): string | null {
  const after = (id: string) => (reserved.get(id) ?? 0) + key.memoryBytes;
  const fits = (id: string, n: SwarmNodeState) => !n.memoryBytes || after(id) <= n.memoryBytes;
  const open = [...nodes].filter(([id, n]) => n.ready && n.active && fits(id, n)).map(([id]) => id);
  if (open.length < 2) return null;
  const everyKnown = open.every((id) => nodes.get(id)?.memoryBytes);
  const held = (id: string) => (everyKnown ? after(id) / (nodes.get(id)?.memoryBytes ?? 1) : after(id));
  const count = (id: string, same: (p: PlacedInstance) => boolean) =>
    live.filter((p) => p.nodeId === id && same(p)).length;
  const rank = (id: string): [number, number, number, string] => [
    key.deploymentId === undefined ? 0 : count(id, (p) => p.deploymentId === key.deploymentId),
    count(id, () => true),
    held(id),
    createHash("sha256").update(`${key.appId} ${id}`).digest("hex"),
  ];
  const ranked = open.map((id) => ({ id, r: rank(id) }));
  ranked.sort((a, b) => a.r[0] - b.r[0] || a.r[1] - b.r[1] || a.r[2] - b.r[2] || (a.r[3] < b.r[3] ? -1 : 1));
  return ranked[0]!.id;
}

/** What the spread reads of the swarm: its nodes, an app's tasks the swarm wants running, and all apps'. */
export interface SpreadReads {
  nodes(): Promise<Map<string, SwarmNodeState>>;
  liveTasks(appId: string): Promise<SwarmTask[]>;
  /** Every app's instance tasks the swarm wants running (their reservations are summed per node). */
  allLiveTasks(): Promise<SwarmTask[]>;
}

/**
 * How long the memory every app's instances reserve per node is reused: a list of all of them per start
 * would grow with the number of apps, and it only breaks ties between nodes the app itself weighs alike.
 */
export const LOAD_TTL_MS = 10_000;

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
  /** The memory every app's instances reserve per node, as last listed, plus the choices since. */
  private load: { at: number; reserved: Promise<Map<string, number>> } | null = null;

  constructor(
    private readonly reads: SpreadReads,
    private readonly now: () => number = Date.now,
  ) {}

  /** The memory reserved per node, listed again once older than LOAD_TTL_MS (one list for the starts meanwhile). */
  private reserved(): Promise<Map<string, number>> {
    if (!this.load || this.now() - this.load.at > LOAD_TTL_MS) {
      const reserved = this.reads.allLiveTasks().then((tasks) => {
        const m = new Map<string, number>();
        for (const t of tasks)
          if (t.NodeID)
            m.set(t.NodeID, (m.get(t.NodeID) ?? 0) + (t.Spec?.Resources?.Reservations?.MemoryBytes ?? 0));
        return m;
      });
      const load = { at: this.now(), reserved };
      this.load = load;
      // A failed list is not kept: the next start lists again.
      reserved.catch(() => {
        if (this.load === load) this.load = null;
      });
    }
    return this.load.reserved;
  }

  /**
   * Pier ended an instance's task on its node, a stop it began at `since`: the memory it reserved is free
   * in the load listed before that (a list asked for since may not show the task: left as listed). Without
   * it, the starts of the next LOAD_TTL_MS would still count it: a rebalance's next move, a deploy right
   * after another, would shun the node it just left.
   */
  released(nodeId: string, memoryBytes: number, since: number): void {
    const load = this.load;
    if (!load || load.at >= since || memoryBytes <= 0) return;
    void load.reserved.then(
      (m) => m.set(nodeId, Math.max(0, (m.get(nodeId) ?? 0) - memoryBytes)),
      () => undefined,
    );
  }

  /** Whether a start of this process made that service and has not lifted its pin yet. */
  starting(serviceId: string): boolean {
    return [...this.pending].some((p) => p.serviceId === serviceId);
  }

  /** The node to pin a new instance of `key` to, reserved until `done()`; null when there is no choice. */
  async reserve(key: PlacementKey): Promise<Reservation | null> {
    const [nodes, tasks, load] = await Promise.all([
      this.reads.nodes(),
      this.reads.liveTasks(key.appId),
      this.reserved(),
    ]);
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
    const nodeId = spreadNode(nodes, live, key, load);
    if (!nodeId) return null;
    // Counted at once: the next start within LOAD_TTL_MS sees it, listed by the swarm or not.
    load.set(nodeId, (load.get(nodeId) ?? 0) + key.memoryBytes);
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
