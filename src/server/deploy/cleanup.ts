import type { Engine, InstanceInfo, ReleaseRegistry, Store } from "../../core/ports.js";
import { unnamedVolumes } from "../../core/release-volumes.js";
import { type ForgetLog, forgetReleases } from "../forget-releases.js";
import type { Instances } from "../instances.js";
import { KEPT_RELEASES } from "./build.js";
import type { NextShape, Plan, Started, StepContext } from "./context.js";

/** After a failure past the start: this deployment's instances go; nothing else was changed. */
export async function undoStart(ctx: StepContext, started: Started): Promise<void> {
  ctx.write("Removing the instances of this deployment; the previous release keeps serving.");
  await ctx.deps.instances.remove(started.instances).catch(() => undefined);
}

/** The instances of earlier releases, to retire once the deployment is recorded, and the next deploy's shape. */
export async function previousInstances(
  ctx: StepContext,
  plan: Plan,
  started: Started,
): Promise<{ retiring: InstanceInfo[]; next: NextShape | null }> {
  const serving = await ctx.deps.instances.others(plan.app.id, ctx.deployment.id);
  if (serving.length > 0) {
    ctx.write(`Retiring the previous release's instances (SIGTERM, ${ctx.deps.stopGraceMs / 1000} s grace).`);
  }
  const { toRun } = started;
  return {
    retiring: serving,
    next: plan.task
      ? null
      : {
          httpPort: toRun.httpPort,
          tcpPort: toRun.tcpPort,
          ipv6Subnet: toRun.ipv6Subnet,
          instances: toRun.instances,
        },
  };
}

export interface CleanUpDeps {
  store: Store;
  engine: Engine;
  instances: Instances;
  /** The swarm's registry (ADR 0030): pruned releases are forgotten there too. None: one dockerd. */
  registry?: ReleaseRegistry | null;
  logger: ForgetLog;
}

/**
 * After a success, off the pusher's path: the previous release's instances stop (SIGTERM, grace) while those retired
 * by an earlier deploy (stopped, kept for their logs) go; unused networks go; the next deploy's instance slots
 * are made ready (the retired instances' are free again); then the images no kept release needs.
 * The stop neither waits for the removal nor is skipped when it fails: a previous release left running would
 * hold its memory, serving no one, until the next deploy.
 * `active` names the app's deployment under way when the images are pruned (its image is kept).
 */
export async function retirePrevious(
  deps: CleanUpDeps,
  appId: string,
  retiring: InstanceInfo[],
  next: NextShape | null,
  active: () => string | null,
): Promise<void> {
  const stopped = retiring.filter((i) => !i.running && i.state !== "restarting");
  await Promise.all([
    deps.instances.retire(retiring.filter((i) => !stopped.includes(i))),
    deps.instances.remove(stopped),
  ]);
  await deps.instances.pruneNetworks(appId);
  if (next) await deps.instances.prepare(appId, next, next.instances);
  await pruneImages(deps, appId, active);
}

/**
 * The images rollbacks can go back to: the newest KEPT_RELEASES distinct images of the app's releases, newest
 * first. A scale or a restart is a release of its own with the current image: it does not use up a place.
 */
export function keptImages(releases: readonly { image: string }[]): string[] {
  const kept: string[] = [];
  for (const r of releases) {
    if (kept.length === KEPT_RELEASES) break;
    if (!kept.includes(r.image)) kept.push(r.image);
  }
  return kept;
}

/**
 * Keeps the images of the releases rollbacks can go back to (`keptImages`); removes the rest, then the release
 * volumes (a PHP release's vendor/) that no remaining image names; on a swarm, the registry forgets the
 * rest too.
 */
export async function pruneImages(
  deps: Pick<CleanUpDeps, "store" | "engine" | "registry" | "logger">,
  appId: string,
  active: () => string | null,
): Promise<void> {
  const { engine } = deps;
  const keep = new Set(keptImages(await deps.store.listReleases(appId)));
  const busy = active();
  for (const tag of await engine.releaseImages(appId)) {
    if (keep.has(tag) || (busy && tag.endsWith(`:${busy}`))) continue;
    await engine.removeImage(tag).catch(() => undefined);
  }
  // Forgotten only while no deployment of the app is under way (asked again): its tasks may be pulling its
  // image on the nodes, whose unused images of the app the forget prunes; the next clean-up forgets them.
  if (!active()) await forgetReleases(deps.registry, deps.logger, appId, [...keep]);
  // Volumes first, then images: a volume whose image a deploy commits meanwhile is that deploy's (busy).
  const volumes = await engine.releaseVolumes(appId);
  if (volumes.length === 0) return;
  const images: Record<string, string>[] = [];
  for (const tag of await engine.releaseImages(appId)) {
    const info = await engine.imageInfo(tag);
    if (info) images.push(info.labels);
  }
  // One still mounted (a retired instance kept for its logs) stays, and goes with a later prune.
  for (const name of unnamedVolumes(volumes, images, active()))
    await engine.removeReleaseVolume(name).catch(() => undefined);
}
