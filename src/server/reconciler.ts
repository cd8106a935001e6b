import type { Logger } from "pino";
import type { Engine, Store } from "../core/ports.js";
import type { Deployer } from "./deployer.js";
import type { Instances } from "./instances.js";

/**
 * On start, makes what runs match what the store says: the current release's instances run (stopped ones
 * are started, a release with none left is redeployed from its image), leftovers of other deployments are
 * removed, and the edge routes exactly the serving instances.
 */
export async function reconcile(deps: {
  store: Store;
  engine: Engine;
  instances: Instances;
  deployer: Deployer;
  logger: Logger;
}): Promise<void> {
  const { store, engine, instances, deployer, logger } = deps;
  const known = new Set<string>();
  for (const app of await store.listApps()) {
    known.add(app.id);
    const release = await store.currentRelease(app.id);
    const all = await instances.list(app.id);
    const serving = all.filter((i) => release && i.labels["pier.deployment"] === release.deploymentId);
    const leftovers = all.filter((i) => !serving.includes(i));
    if (leftovers.length > 0) {
      logger.info({ appId: app.id, count: leftovers.length }, "removing instances of other deployments");
      await instances.remove(leftovers);
    }
    if (!release || app.stopped || app.task || release.env.CC_TASK === "true") continue;
    // An instance in a sandbox needs it running first (both restart with the engine, in no set order).
    const sandboxes = await engine.listSandboxes({ "pier.app": app.id });
    for (const s of sandboxes) {
      if (!s.running && serving.some((i) => i.labels["pier.sandbox"] === s.id))
        await engine.startSandbox(s.id).catch((err) => logger.warn({ err }, "could not start a sandbox"));
    }
    for (const i of serving) {
      if (!i.running) {
        logger.info({ appId: app.id, instance: i.name }, "starting a stopped instance");
        await engine
          .startInstance(i.id)
          .catch((err) => logger.warn({ err, instance: i.name }, "could not start"));
      }
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
  // Instances of apps that no longer exist.
  const strays = (await engine.listInstances({})).filter((i) => !known.has(i.labels["pier.app"] ?? ""));
  if (strays.length > 0) {
    logger.info({ count: strays.length }, "removing instances of deleted apps");
    await instances.remove(strays);
  }
  for (const s of await engine.listSandboxes({})) {
    if (!known.has(s.labels["pier.app"] ?? "")) await engine.removeSandbox(s.id);
  }
  await instances.refreshEdge();
}
