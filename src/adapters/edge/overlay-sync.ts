// The edge's overlays after its sandbox is made again (ADR 0030, eleventh part). When the manager's dockerd
// restarts, the sandbox joins every app's overlay at once, often before the manager's gossip has rejoined
// the other nodes: the join's sync of the overlay's tables then asks nobody, and the endpoints of the
// instances on other nodes stay unknown on the manager until the next periodic sync, ~30 s later (on the
// lab, 30.8 s after the join in 2 of 2 restarts). The manager's engine shows both halves of that in the
// overlay's verbose inspect: its gossip peers (each node's address) and its endpoint table. Once a node is a
// peer again while its instances are still missing from the table, leaving the overlay and joining it
// again syncs it at once (answers 1.1 s after the rejoin, 2 of 2 on the lab; 2 of 2 in bench/swarm-density).
// So for a while after the sandbox is made, each overlay with instances on other nodes is read every
// second, and rejoined when an instance there has been missing two reads in a row (a task just started
// takes a moment to be gossiped) although its node is a peer. Not an overlay an instance on the manager
// holds: the manager stays on it whatever the sandbox does, and the rejoin syncs nothing (edge-swarm: 4
// rejoins, none synced). An earlier watch rejoined when probes through the overlay failed, without knowing
// whether the gossip was back, nor whether the sandbox alone held the overlay (session 18): taken out.
import type Docker from "dockerode";
import { LABEL, labelFilter, ROLE } from "../../core/labels.js";

/** An instance on an overlay the sandbox is on. */
export interface OverlayInstance {
  network: string;
  /** Its address on the overlay. */
  address: string;
  /** Its node's address (what the overlay lists its gossip peers by). */
  nodeAddress: string;
  /**
   * It runs (or is being started) on the manager itself: the overlay then stays joined on the manager
   * whatever the sandbox does, and a rejoin of the sandbox syncs nothing.
   */
  local?: boolean;
}

/** An overlay as the manager's engine sees it: its gossip peers, and the addresses in its endpoint table. */
export interface OverlayTable {
  peers: ReadonlySet<string>;
  endpoints: ReadonlySet<string>;
}

/** What one read of an overlay tells. */
export type OverlayState =
  /** Every instance on another node is in the table. */
  | "synced"
  /** Some are missing, and their nodes are peers again: a rejoin would sync it. */
  | "stale"
  /** Some are missing, but not every one of their nodes is a peer yet: the gossip is not back. */
  | "waiting"
  /**
   * Some are missing, and an instance on the manager holds the overlay joined there: leaving and joining
   * it again would not make the manager sync it (measured in edge-swarm: 4 rejoins, none synced); the
   * periodic sync will.
   */
  | "held";

/** An instance of the overlay runs on the manager: the manager stays on it whatever the sandbox does. */
const heldOnManager = (instances: readonly OverlayInstance[]) => instances.some((r) => r.local);

/** One overlay's state from its table and the instances the swarm lists on it. */
export function overlayState(instances: readonly OverlayInstance[], table: OverlayTable): OverlayState {
  const missing = instances.filter((r) => !r.local && !table.endpoints.has(r.address));
  if (missing.length === 0) return "synced";
  if (heldOnManager(instances)) return "held";
  return missing.every((r) => table.peers.has(r.nodeAddress)) ? "stale" : "waiting";
}

export interface OverlaySyncDeps {
  /**
   * The instances on the overlays the sandbox is on: those running on the other ready nodes, and those
   * on the manager (`local`) (null: not known).
   */
  instances(): Promise<OverlayInstance[] | null>;
  /** The overlay's verbose inspect on the manager (null: not known). */
  table(network: string): Promise<OverlayTable | null>;
  /** The sandbox leaves the overlay and joins it again. */
  rejoin(network: string): Promise<void>;
  /** Goes up each time the sandbox is made again: the watch then starts over. */
  generation(): number;
  sleep(ms: number): Promise<void>;
  now(): number;
  logger?: { warn: (o: object, m?: string) => void };
}

export const OVERLAY_SYNC = {
  /** How long after the sandbox is made its overlays are watched. */
  windowMs: 120_000,
  /** The pause before each read. */
  periodMs: 1_000,
  /** Reads in a row an overlay must be stale in before it is rejoined. */
  confirmReads: 2,
  /** An overlay rejoined is not rejoined again before this (its sync takes ~1 s). */
  settleMs: 5_000,
  /** Reads in a row with instances on other nodes listed and every overlay synced (or held) that end it. */
  doneReads: 3,
};

/** The instances by overlay. */
function byNetwork(remote: readonly OverlayInstance[]): Map<string, OverlayInstance[]> {
  const out = new Map<string, OverlayInstance[]>();
  for (const r of remote) {
    const list = out.get(r.network);
    if (list) list.push(r);
    else out.set(r.network, [r]);
  }
  return out;
}

/** One read of every overlay with instances on other nodes: each one's state (unknown tables left out). */
async function readAll(
  deps: OverlaySyncDeps,
  remote: readonly OverlayInstance[],
): Promise<Map<string, OverlayState>> {
  const states = new Map<string, OverlayState>();
  for (const [network, instances] of byNetwork(remote)) {
    if (heldOnManager(instances)) {
      states.set(network, "held"); // nothing a read could change
      continue;
    }
    const table = await deps.table(network).catch(() => null);
    if (table) states.set(network, overlayState(instances, table));
  }
  return states;
}

/**
 * Watches the overlays for `windowMs` after the sandbox was made, rejoining each one stale for
 * `confirmReads` reads in a row (not more often than every `settleMs`); ends after `doneReads` reads in a
 * row where instances on other nodes were listed and every overlay was synced. The overlays rejoined, in
 * order.
 */
export async function syncOverlays(deps: OverlaySyncDeps, opts = OVERLAY_SYNC): Promise<string[]> {
  let start = deps.now();
  let generation = deps.generation();
  let streak = new Map<string, number>();
  let last = new Map<string, number>();
  let clean = 0;
  const rejoined: string[] = [];
  while (deps.now() - start < opts.windowMs) {
    await deps.sleep(opts.periodMs);
    if (deps.generation() !== generation) {
      // The sandbox was made again: its overlays were all joined anew.
      [start, generation, streak, last, clean] = [deps.now(), deps.generation(), new Map(), new Map(), 0];
      continue;
    }
    const remote = await deps.instances().catch(() => null);
    // Not known, or none on another node listed yet (right after the restart the nodes are `unknown`).
    if (!remote?.some((r) => !r.local)) continue;
    const states = await readAll(deps, remote);
    const stale = [...states].filter(([, s]) => s === "stale").map(([n]) => n);
    const synced = [...states.values()].every((s) => s === "synced" || s === "held") && states.size > 0;
    clean = synced ? clean + 1 : 0;
    if (clean >= opts.doneReads) return rejoined;
    streak = new Map(stale.map((n) => [n, (streak.get(n) ?? 0) + 1]));
    for (const network of stale) {
      if ((streak.get(network) ?? 0) < opts.confirmReads) continue;
      if (deps.now() - (last.get(network) ?? -Infinity) < opts.settleMs) continue;
      last.set(network, deps.now());
      if (await rejoin(deps, network)) rejoined.push(network);
    }
  }
  return rejoined;
}

async function rejoin(deps: OverlaySyncDeps, network: string): Promise<boolean> {
  deps.logger?.warn(
    { network },
    "edge: the manager's table of this app's network lacks instances on nodes that are its peers again: leaving and joining it again",
  );
  return deps.rejoin(network).then(
    () => true,
    (e: Error) => {
      deps.logger?.warn({ network, err: e.message }, "edge: rejoining the network failed");
      return false;
    },
  );
}

// What the watch reads from the manager's engine.

/** The fields of a swarm task the watch reads. */
interface TaskRead {
  NodeID?: string;
  Status?: { State?: string };
  NetworksAttachments?: { Network?: { Spec?: { Name?: string } }; Addresses?: string[] }[];
}

/** The fields of an overlay's verbose inspect the watch reads. */
export interface VerboseNetwork {
  Peers?: { IP?: string }[] | null;
  Services?: Record<string, { Tasks?: { EndpointIP?: string }[] | null }> | null;
}

/** An overlay's gossip peers and endpoint table, from its verbose inspect on the manager. */
export function overlayTable(n: VerboseNetwork): OverlayTable {
  return {
    peers: new Set((n.Peers ?? []).flatMap((p) => (p.IP ? [p.IP] : []))),
    endpoints: new Set(
      Object.values(n.Services ?? {}).flatMap((s) =>
        (s.Tasks ?? []).flatMap((t) => (t.EndpointIP ? [t.EndpointIP] : [])),
      ),
    ),
  };
}

/** The overlay's table on the manager (dockerode passes `verbose` through; its types omit it). */
export async function readTable(docker: Docker, network: string): Promise<OverlayTable> {
  const n = docker.getNetwork(network) as unknown as { inspect(o: object): Promise<VerboseNetwork> };
  return overlayTable(await n.inspect({ verbose: true }));
}

/**
 * The scope's instances (`own`: its labels) on the overlays the sandbox has an address on (`networks`:
 * its inspect's): running on the other ready nodes, and any on the manager itself (`managerNodeId`).
 */
export async function instancesOnOverlays(
  docker: Docker,
  own: Record<string, string>,
  networks: Record<string, { IPAddress?: string }>,
  managerNodeId: string,
): Promise<OverlayInstance[]> {
  const label = labelFilter(own, { [LABEL.role]: ROLE.instance });
  const [nodes, tasks] = await Promise.all([
    docker.listNodes() as Promise<{ ID: string; Status?: { State?: string; Addr?: string } }[]>,
    docker.listTasks({ filters: { label, "desired-state": ["running"] } }) as Promise<TaskRead[]>,
  ]);
  const addressOf = new Map(
    nodes
      .filter((n) => n.Status?.State === "ready" && n.Status.Addr)
      .map((n) => [n.ID, n.Status?.Addr ?? ""]),
  );
  const on = new Set(
    Object.entries(networks)
      .filter(([, n]) => (n.IPAddress ?? "") !== "")
      .map(([name]) => name),
  );
  return tasks.flatMap((t) => {
    const local = t.NodeID === managerNodeId;
    // Elsewhere, a running one on a ready node; here, any the swarm runs or brings back (it joins soon).
    const nodeAddress = local ? "" : addressOf.get(t.NodeID ?? "");
    if (nodeAddress === undefined || (!local && t.Status?.State !== "running")) return [];
    return (t.NetworksAttachments ?? []).flatMap((a) => {
      const network = a.Network?.Spec?.Name ?? "";
      const address = a.Addresses?.[0]?.replace(/\/\d+$/, "") ?? "";
      if (!on.has(network) || (!local && !address)) return [];
      return [{ network, address, nodeAddress, ...(local ? { local } : {}) }];
    });
  });
}

/** The manager's own node id (the engine's `info`): it does not change, so a watch reads it once. */
export async function managerNodeId(docker: Docker): Promise<string> {
  const info = (await docker.info()) as { Swarm?: { NodeID?: string } };
  return info.Swarm?.NodeID ?? "";
}
