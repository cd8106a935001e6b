// An app that serves, as the rebalancer reads it (src/server/rebalancer.ts): in any Store, its current
// release (deployment `d-<name>`), and its instances on these nodes in the fake engine. Shared by the
// rebalancer's unit tests and bench/rebalance-look.
import type { AppStore, DeploymentStore, ReleaseStore } from "../../src/core/ports.js";
import { newApp } from "../conformance/store.js";
import type { FakeEngine } from "./fake-engine.js";

/** Seeds `name` (id `app-<name>`) serving with an instance on each of `nodes`; its id. */
export async function servingApp(
  store: AppStore & DeploymentStore & ReleaseStore,
  engine: FakeEngine,
  name: string,
  nodes: readonly string[],
  extra: { task?: string; stopped?: boolean } = {},
): Promise<string> {
  const appId = `app-${name}`;
  await store.createApp(newApp(name, { id: appId, task: extra.task ?? null }));
  if (extra.stopped) await store.updateApp(appId, { stopped: true });
  await store.createDeployment({ id: `d-${name}`, appId, commit: "c1", cause: "push", withoutCache: false });
  const release = {
    id: `r-${name}`,
    appId,
    deploymentId: `d-${name}`,
    image: "img",
    commit: "c1",
    env: {},
    httpPort: 8080,
    tcpPort: null,
    task: false,
  };
  await store.commitRelease(release, {}, new Date().toISOString());
  for (const [n, node] of nodes.entries())
    engine.addInstance({
      id: `${name}-${n}`,
      labels: { "pier.app": appId, "pier.deployment": `d-${name}` },
      node,
    });
  return appId;
}
