// The engine's events for as long as Pier runs, and what brings the apps back when the engine returns:
// instances' exits are recorded, a restarted instance slot gets its instances back, and when the stream
// ends (dockerd restarted) Pier waits for the engine, follows it again, reconciles, then rejoins instances to
// their slots.
import type { Logger } from "pino";
import { instanceNumber, isBuildContainer, LABEL } from "../core/labels.js";
import type { Engine, EngineEvent, Store } from "../core/ports.js";
import type { Instances } from "./instances.js";
import type { InstanceStarts } from "./log-follow.js";

export interface EngineLoopDeps {
  engine: Pick<Engine, "events" | "ping">;
  store: Pick<Store, "recordExit">;
  instances: Pick<Instances, "rejoin" | "rejoinAll" | "refreshEdge">;
  /** Told of each instance's start, and of the engine's return: the followers of runtime logs. */
  starts: Pick<InstanceStarts, "started" | "startedAll">;
  /** The reconciler over every app (src/server/reconciler.ts). */
  reconcileAll: () => Promise<void>;
  logger: Logger;
  /** How often the engine is asked whether it is back (1 s). */
  pollMs?: number;
}

/** One event: a slot's start rejoins its instances; an instance's death is recorded (builds' are not). */
export async function onEngineEvent(deps: EngineLoopDeps, e: EngineEvent): Promise<void> {
  const { store, instances, logger } = deps;
  const appId = e.labels[LABEL.app];
  if (!appId) return;
  if (e.slot) {
    if (e.type !== "start") return;
    const n = await instances.rejoin(appId, e.containerId).catch((err) => {
      logger.warn({ err, appId }, "could not restart the instances of a restarted sandbox");
      return 0;
    });
    if (n > 0) logger.info({ appId, instances: n }, "sandbox restarted: its instances rejoined it");
    return;
  }
  if (isBuildContainer(e.labels)) return;
  if (e.type === "start") {
    // A swarm task that replaced another (a lost node's, a crash's) answers at a new address.
    if (!e.readdressed) return;
    logger.info({ appId, instance: instanceNumber(e.labels), node: e.node }, "instance started again");
    await instances
      .refreshEdge(appId)
      .catch((err) => logger.warn({ err, appId }, "the edge could not follow a restarted instance"));
    return;
  }
  if (e.reason)
    logger.warn(
      { appId, instance: instanceNumber(e.labels), node: e.node, reason: e.reason },
      "instance lost: the engine places it again",
    );
  await store
    .recordExit({
      appId,
      containerId: e.containerId,
      instance: instanceNumber(e.labels),
      exitCode: e.exitCode ?? -1,
      at: e.at,
    })
    .catch(() => undefined);
}

/** Resolves once the engine answers again, or the loop is stopped. */
async function waitForEngine(deps: EngineLoopDeps, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    await new Promise((r) => setTimeout(r, deps.pollMs ?? 1000));
    const up = await deps.engine.ping().then(
      () => true,
      () => false,
    );
    if (up) return;
  }
}

/**
 * After the engine's return: the reconciler first, then the slots' instances. The slots' "start" events of
 * the engine's restart came before the new stream: an instance the engine started before its slot sits in
 * a stale network namespace. Those restart into the new one (one engine list for all apps).
 */
export async function afterEngineReturn(deps: EngineLoopDeps): Promise<void> {
  const { instances, logger } = deps;
  await deps
    .reconcileAll()
    .catch((err) => logger.warn({ err }, "reconcile after the engine came back failed"));
  const rejoined = await instances.rejoinAll().catch(() => new Map<string, number>());
  for (const [appId, n] of rejoined)
    if (n > 0) logger.info({ appId, instances: n }, "instances rejoined their restarted sandbox");
  // Every followed log ended with the engine: each follower looks for what runs now.
  deps.starts.startedAll();
  logger.info("engine back: reconciled");
}

/** An instance's start, whoever made it (a deploy, the recovery, the engine): its app's log followers follow it. */
export function tellFollowers(starts: Pick<InstanceStarts, "started">, e: EngineEvent): void {
  const appId = e.labels[LABEL.app];
  if (e.type === "start" && !e.slot && appId && !isBuildContainer(e.labels)) starts.started(appId);
}

/** A task the engine placed again at a new address, or an instance lost with its node: not Pier's doing. */
export function byEngineAlone(e: EngineEvent): boolean {
  return !e.slot && (e.readdressed === true || (e.type === "die" && e.reason !== undefined));
}

/**
 * Follows the engine's events until stopped; each time the stream ends, waits for the engine and recovers.
 * The stream is followed again as soon as the engine answers, while the recovery runs: on a swarm the
 * reconciler waits for the tasks the swarm brings back (30 s and more after a manager's restart), and an
 * instance moved meanwhile must be routed at once, not when it ends. Only what the engine does by itself is
 * acted on during the recovery (`byEngineAlone`); the rest is the recovery's own doing (slots started,
 * instances restarted into them: it rejoins every app's instances once the reconciler is done), as it was
 * when the stream waited for it. A recovery still under way when the engine goes again ends before the
 * next begins.
 */
export function startEngineLoop(deps: EngineLoopDeps): { stop(): void } {
  const events = new AbortController();
  const { signal } = events;
  let recovering: Promise<void> | null = null;
  const handle = (e: EngineEvent) => {
    tellFollowers(deps.starts, e);
    if (recovering && !byEngineAlone(e)) return;
    void onEngineEvent(deps, e);
  };
  void (async () => {
    while (!signal.aborted) {
      await deps.engine
        .events(handle, signal)
        .catch((err) => deps.logger.warn({ err }, "engine events stream failed"));
      if (signal.aborted) return;
      deps.logger.warn("engine events stream ended: waiting for the engine, then reconciling");
      await waitForEngine(deps, signal);
      if (signal.aborted) return;
      const previous = recovering;
      const run: Promise<void> = (async () => {
        await previous;
        if (!signal.aborted) await afterEngineReturn(deps);
      })().finally(() => {
        if (recovering === run) recovering = null;
      });
      recovering = run;
    }
  })();
  return { stop: () => events.abort() };
}
