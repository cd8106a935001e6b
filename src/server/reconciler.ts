import type { Logger } from "pino";
import { isBuildContainer, LABEL } from "../core/labels.js";
import type { App, Release } from "../core/model.js";
import type {
  InstanceSlots,
  ReleaseImages,
  ReleaseInstances,
  RoutableInstance,
  Store,
} from "../core/ports.js";
import type { Deployer } from "./deployer.js";
import { type Instances, startEach } from "./instances.js";
import type { Networks } from "./networks.js";

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++] as T);
  });
  await Promise.all(lanes);
}

const byApp = <T extends { labels: Record<string, string> }>(list: readonly T[]) => {
  const m = new Map<string, T[]>();
  for (const x of list) {
    const id = x.labels[LABEL.app] ?? "";
    const l = m.get(id);
    if (l) l.push(x);
    else m.set(id, [x]);
  }
  return m;
};

/**
 * Starts the stopped ones of an app's serving instances (the engine starts a stopped slot first), together
 * as a deploy starts them (`startEach`); a failed start is logged, the others go on.
 */
async function startStopped(
  engine: ReleaseInstances,
  logger: Logger,
  appId: string,
  serving: readonly RoutableInstance[],
): Promise<void> {
  const start = (i: RoutableInstance) => {
    logger.info({ appId, instance: i.id }, "starting a stopped instance");
    return engine.startInstance(i.id).catch((err) => logger.warn({ err, instance: i.id }, "could not start"));
  };
  await startEach(
    serving.filter((i) => !i.running),
    start,
  );
}

/** An app as the store and the engine's one list show it: its current release, and what of it serves. */
interface AppView {
  app: App;
  release: Release | null;
  /** The instances of the current release (none for a stopped app); the app's others are leftovers. */
  serving: RoutableInstance[];
  leftovers: RoutableInstance[];
}

async function viewOf(store: Store, app: App, all: readonly RoutableInstance[]): Promise<AppView> {
  const release = await store.currentRelease(app.id);
  // A build container is never an instance (one left by a crash between its commit and its removal
  // carries the release's deployment id): it goes with the leftovers. An instance that inherited its
  // image's build role (made by Pier before ADR 0021) is an instance: adopted, not redeployed. So do the
  // instances of a stopped app (`pier stop` records the stop, then removes them: a kill or an engine error
  // in between left them).
  const serving = all.filter(
    (i) =>
      release &&
      !app.stopped &&
      !isBuildContainer(i.labels) &&
      i.labels[LABEL.deployment] === release.deploymentId,
  );
  return { app, release, serving, leftovers: all.filter((i) => !serving.includes(i)) };
}

export interface ReconcileDeps {
  /** Told once what runs is routed, before any instance is started or redeployed (pier server's start). */
  onRouted?: () => void;
  store: Store;
  engine: ReleaseInstances & Pick<InstanceSlots, "removeStraySlots"> & Pick<ReleaseImages, "imageExists">;
  instances: Instances;
  networks: Pick<Networks, "reconcile">;
  /** Only asked to deploy an app whose release has no instance and no image left. */
  deployer: Pick<Deployer, "enqueue">;
  logger: Logger;
}

/**
 * Brings one app's current release up: its stopped instances started, then its route read again; a release
 * with no instance left is redeployed from its image.
 */
async function bringUp(deps: ReconcileDeps, view: AppView): Promise<void> {
  const { engine, instances, deployer, logger } = deps;
  const { app, release, serving } = view;
  if (!release || app.stopped || release.task) return;
  if (serving.some((i) => !i.running)) {
    await startStopped(engine, logger, app.id, serving);
    await instances
      .refreshEdge(app.id)
      .catch((err: Error) =>
        logger.warn({ err: err.message, appId: app.id }, "the edge did not route a started app"),
      );
  }
  if (serving.length === 0 && (await engine.imageExists(release.image))) {
    logger.warn(
      { appId: app.id, release: release.number },
      "no instance of the current release runs: redeploying it",
    );
    await deployer.enqueue(app, {
      commit: release.commit,
      cause: `reconcile: release v${release.number} had no instance`,
      withoutCache: false,
      reuseCurrentImage: true,
    });
  }
}

/**
 * On start, makes what runs match what the store says: the current release's instances run (stopped ones
 * are started, a release with none left is redeployed from its image), the edge routes exactly the serving
 * instances, and leftovers of other deployments and of deleted apps are removed. The cost is two engine
 * list calls for all apps plus one call per thing to change (ADR 0007: at 100 apps, routes are served
 * again within seconds of `pier server` starting).
 */
export async function reconcile(deps: ReconcileDeps): Promise<void> {
  const { store, engine, instances, networks, logger } = deps;
  const apps = await store.listApps();
  const known = new Set(apps.map((a) => a.id));
  const containers = await engine.listRoutable({});
  const containersOf = byApp(containers);
  const views: AppView[] = [];
  await eachLimited(apps, 8, async (app) => {
    views.push(await viewOf(store, app, containersOf.get(app.id) ?? []));
  });
  // Routes first: what runs now is served before any start, so an instance slow to start (a swarm task the
  // engine is still bringing back waits up to minutes) holds no other app's route; each started app is
  // routed again as its start ends (bringUp). An edge that cannot take the table now (HAProxy refusing it,
  // its socket gone) must not stop pier server from starting: the watchdog and the next change of routes
  // try again.
  await instances
    .refreshEdge()
    .catch((err: Error) =>
      logger.warn({ err: err.message }, "the edge did not take the route table at start"),
    );
  deps.onRouted?.();
  await eachLimited(views, 8, (v) => bringUp(deps, v));

  const leftovers = views.flatMap((v) => v.leftovers);
  if (leftovers.length > 0) {
    logger.info({ count: leftovers.length }, "removing instances of other deployments");
    await instances.remove(leftovers);
  }
  // Instances and slots of apps that no longer exist, and their networks.
  const strays = containers.filter((i) => !known.has(i.labels[LABEL.app] ?? ""));
  if (strays.length > 0) {
    logger.info({ count: strays.length }, "removing instances of deleted apps");
    await instances.remove(strays);
  }
  await engine.removeStraySlots(known);
  await networks.reconcile(known);
}
