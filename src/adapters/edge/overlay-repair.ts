// The edge's overlays after its sandbox is made again (ADR 0030). When the manager's dockerd restarts, the
// sandbox joins every app's overlay again at once, often before the manager's gossip has rejoined the
// other nodes: the overlay then lacks their endpoints until the next periodic sync, ~30 s later, and every
// instance on another node is out of the edge's reach (measured on the lab, a container joined to an
// overlay as the sandbox is: 7 of 9 restarts, although the network's peers were all listed again 2-5 s
// after the join). Leaving the overlay and joining it again makes the manager ask its peers for the
// network's state: the instances answered 1.6-1.7 s later (3 of 3; without it, 15-16 s later: ~30 s
// after the join). So for a while after a sandbox is made, the instances on other nodes are probed (one
// TCP connection each, a few per overlay), and an overlay none of whose probed instances could be reached
// in two rounds in a row (a fresh join takes a moment to learn its peers) is left and joined again (not
// more often than every `settleMs`). A sandbox made again meanwhile starts the watch over.
import type { Socket } from "node:net";
import { eachLimited } from "../../core/concurrency.js";

/** What a probe of an instance told: it answered (a refusal is an answer), it is out of reach, or unknown. */
export type Reach = "reached" | "unreached" | "unknown";

/** A probe's outcome from its error (null: connected). */
export function reachOf(err: NodeJS.ErrnoException | null): Reach {
  if (!err) return "reached";
  if (err.code === "ECONNREFUSED" || err.code === "ECONNRESET") return "reached";
  if (err.code === "ETIMEDOUT" || err.code === "EHOSTUNREACH" || err.code === "ENETUNREACH")
    return "unreached";
  return "unknown";
}

/** The overlays whose every probe was out of reach: one answer (or one probe that could not tell) spares it. */
export function unreachedNetworks(results: ReadonlyMap<string, readonly Reach[]>): string[] {
  return [...results]
    .filter(([, r]) => r.length > 0 && r.every((x) => x === "unreached"))
    .map(([network]) => network);
}

/** An instance on another node, on an overlay the sandbox has an address on. */
export interface RemoteTarget {
  network: string;
  host: string;
  port: number;
}

export interface OverlayRepairDeps {
  /** The running instances on other (ready) nodes, on the overlays the sandbox is on. */
  remoteTargets(): Promise<RemoteTarget[]>;
  /** A TCP connection from the sandbox (the dialer's). */
  dial(host: string, port: number, timeoutMs: number): Promise<Socket>;
  /** The sandbox leaves the overlay and joins it again. */
  rejoin(network: string): Promise<void>;
  /** Goes up each time the sandbox is made again: the watch then starts over. */
  generation(): number;
  sleep(ms: number): Promise<void>;
  now(): number;
  logger?: { warn: (o: object, m?: string) => void };
}

export const REPAIR = {
  /** How long after the sandbox is made its overlays are watched. */
  windowMs: 90_000,
  /** The pause before each round of probes. */
  periodMs: 2_000,
  /** Rounds in a row an overlay must be out of reach in before it is rejoined. */
  confirmRounds: 2,
  /**
   * Rounds in a row in which every overlay answered that end the watch. Rounds that list no instance on
   * another node do not count: after the manager's restart its nodes are `unknown` for a while.
   */
  doneRounds: 3,
  /** One probe's connect timeout. */
  probeMs: 1_000,
  /** Instances probed per overlay per round. */
  perNetwork: 2,
  /** An overlay rejoined is not rejoined again before this. */
  settleMs: 6_000,
  /** Probes at a time. */
  concurrency: 16,
};

/** One round: up to `perNetwork` targets of each overlay probed; what each told, by overlay. */
async function probeRound(
  deps: OverlayRepairDeps,
  targets: readonly RemoteTarget[],
  opts: typeof REPAIR,
): Promise<Map<string, Reach[]>> {
  const picked: RemoteTarget[] = [];
  const per = new Map<string, number>();
  for (const t of targets) {
    const n = per.get(t.network) ?? 0;
    if (n < opts.perNetwork) picked.push(t);
    per.set(t.network, n + 1);
  }
  const results = new Map<string, Reach[]>();
  await eachLimited(picked, opts.concurrency, async (t) => {
    const reach = await deps.dial(t.host, t.port, opts.probeMs).then(
      (s) => {
        s.destroy();
        return reachOf(null);
      },
      (e: NodeJS.ErrnoException) => reachOf(e),
    );
    results.set(t.network, [...(results.get(t.network) ?? []), reach]);
  });
  return results;
}

/**
 * Watches the overlays for `windowMs` after the sandbox was made: each round probes the instances on other
 * nodes and rejoins the overlays out of reach for `confirmRounds` rounds in a row; it ends after
 * `doneRounds` rounds in a row where instances elsewhere were listed and every overlay answered. The
 * overlays rejoined, in order.
 */
export async function repairOverlays(deps: OverlayRepairDeps, opts = REPAIR): Promise<string[]> {
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
    const targets = await deps.remoteTargets().catch(() => null);
    if (!targets || targets.length === 0) continue; // the engine did not answer, or lists none yet
    const out = unreachedNetworks(await probeRound(deps, targets, opts));
    clean = out.length === 0 ? clean + 1 : 0;
    if (clean >= opts.doneRounds) return rejoined;
    streak = new Map(out.map((n) => [n, (streak.get(n) ?? 0) + 1]));
    for (const network of out) {
      if ((streak.get(network) ?? 0) < opts.confirmRounds) continue;
      if (deps.now() - (last.get(network) ?? -Infinity) < opts.settleMs) continue;
      last.set(network, deps.now());
      if (await rejoin(deps, network)) rejoined.push(network);
    }
  }
  return rejoined;
}

async function rejoin(deps: OverlayRepairDeps, network: string): Promise<boolean> {
  deps.logger?.warn(
    { network },
    "edge: no instance on another node is reachable on this app's network since the sandbox was made again: leaving and joining it again",
  );
  return deps.rejoin(network).then(
    () => true,
    (e: Error) => {
      deps.logger?.warn({ network, err: e.message }, "edge: rejoining the network failed");
      return false;
    },
  );
}
