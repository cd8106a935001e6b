/**
 * An app's state as `pier status`, `pier apps` and the console show it: one rule for the status of one app
 * and for the list of all of them. Pure.
 */

export type AppState = "stopped" | "not deployed" | "deploying" | "running" | "down";

export interface AppStateFacts {
  /** Stopped by the user. */
  stopped: boolean;
  /** The app has a current release. */
  released: boolean;
  /** The state of its newest deployment, if any. */
  latestDeployment: string | null;
  /** How many instances of the current release run. */
  running: number;
}

export function appState(f: AppStateFacts): AppState {
  if (f.stopped) return "stopped";
  if (!f.released)
    return f.latestDeployment !== null && !["failed", "cancelled"].includes(f.latestDeployment)
      ? "deploying"
      : "not deployed";
  return f.running > 0 ? "running" : "down";
}

/**
 * Whether an app's release is a task (it runs once to completion: no HTTP, no health gate, no restart):
 * created with `--task "<command>"`, or `CC_TASK=true` among its variables. The one rule: the deploy
 * records it on the release, and everything after (the reconciler, the console) reads it there.
 */
export function isTask(app: { task: string | null }, vars: Readonly<Record<string, string>>): boolean {
  return app.task !== null || vars.CC_TASK === "true";
}
