import type { Logger } from "pino";
import { type AppState, appState } from "../core/app-state.js";
import { LABEL } from "../core/labels.js";
import type { App } from "../core/model.js";
import type { Engine, RoutableInstance, Store } from "../core/ports.js";

/** What the app list (`GET /v1/apps`, `pier apps`, the console's home page) shows of each app's status. */
export interface AppListStatus {
  state: AppState;
  release: { id: string; number: number; commit: string; createdAt: string } | null;
  /** The current release's instances that run, and how many it has (running or not). */
  running: number;
  total: number;
}

/**
 * The status of every app in `apps` from ONE engine call (the containers of all apps, listed without an
 * inspect each), however many apps there are: the list costs what one app's status costs. The store
 * answers the rest (releases, newest deployments). When the engine does not answer, each status is null
 * and the list still answers (the store has the apps).
 */
export async function appListStatuses(
  apps: readonly App[],
  deps: { store: Store; engine: Engine; logger: Logger },
): Promise<Map<string, AppListStatus | null>> {
  const out = new Map<string, AppListStatus | null>();
  if (apps.length === 0) return out;
  let containers: RoutableInstance[] | null;
  try {
    containers = await deps.engine.listRoutable({});
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message }, "app list: the engine did not answer");
    containers = null;
  }
  const byDeployment = new Map<string, RoutableInstance[]>();
  for (const c of containers ?? []) {
    const d = c.labels[LABEL.deployment];
    if (d) byDeployment.set(d, [...(byDeployment.get(d) ?? []), c]);
  }
  for (const app of apps) {
    if (!containers) {
      out.set(app.id, null);
      continue;
    }
    const release = await deps.store.currentRelease(app.id);
    const latest = release ? null : ((await deps.store.listDeployments(app.id, 1))[0] ?? null);
    const mine = release
      ? (byDeployment.get(release.deploymentId) ?? []).filter((c) => c.labels[LABEL.app] === app.id)
      : [];
    const running = mine.filter((c) => c.running).length;
    out.set(app.id, {
      state: appState({
        stopped: app.stopped,
        released: release !== null,
        latestDeployment: latest?.state ?? null,
        running,
      }),
      release: release
        ? { id: release.id, number: release.number, commit: release.commit, createdAt: release.createdAt }
        : null,
      running,
      total: mine.length,
    });
  }
  return out;
}
