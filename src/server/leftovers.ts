import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { AppVolumes, EngineEvents, ReleaseImages, ReleaseRegistry, Store } from "../core/ports.js";
import { forgetReleases } from "./forget-releases.js";

/**
 * What deleted apps left behind (a delete that could not finish its clean-up, a crash in the middle of
 * one): their networks, volumes, images and repositories go. Instances and slots of unknown apps are
 * the reconciler's. Runs at start, off the path that brings routes back.
 */
export async function removeLeftovers(deps: {
  store: Store;
  engine: ReleaseImages & AppVolumes & EngineEvents;
  reposDir: string;
  /** Removes an app's networks and frees their subnets. */
  removeNetworks: (appId: string) => Promise<void>;
  logger: Logger;
  /** The swarm's registry (ADR 0030): a deleted app's images are forgotten there. None: one dockerd. */
  registry?: ReleaseRegistry | null;
}): Promise<number> {
  const { store, engine, logger } = deps;
  // What exists is read before which apps exist: an app created meanwhile is never taken for a gone one.
  const owners = await engine.ownerAppIds();
  const dirs = await readdir(deps.reposDir).catch(() => [] as string[]);
  const known = new Set((await store.listApps()).map((a) => a.id));
  const gone = [...owners].filter((id) => !known.has(id));
  const repos = dirs
    .filter((f) => f.endsWith(".git") && !known.has(f.slice(0, -4)))
    .map((f) => f.slice(0, -4));
  for (const appId of gone) {
    try {
      for (const tag of await engine.releaseImages(appId)) await engine.removeImage(tag);
      await forgetReleases(deps.registry, logger, appId, []);
      await engine.removeAppVolumes(appId);
      await deps.removeNetworks(appId);
    } catch (err) {
      logger.warn({ appId, err: (err as Error).message }, "could not remove what a deleted app left");
    }
  }
  for (const appId of repos) await rm(join(deps.reposDir, `${appId}.git`), { recursive: true, force: true });
  const n = new Set([...gone, ...repos]).size;
  if (n > 0) logger.info({ apps: n }, "removed what deleted apps left behind");
  return n;
}
