// What runs when a push arrives (the pre-receive hook handed it over, ADR 0002): the push becomes a
// deployment, its log streams to the pusher at the pusher's pace, and the outcome accepts or refuses the push.
import { droppedLine, isDropped } from "../core/bounded-queue.js";
import { PierError } from "../core/errors.js";
import type { App, Deployment } from "../core/model.js";
import type { Store } from "../core/ports.js";
import type { DeployLogs } from "./deploy-logs.js";
import type { Deployer } from "./deployer.js";
import type { PushHandler, PushRequest } from "./ssh/hook.js";

export interface PushHandlerDeps {
  store: Pick<Store, "findApp">;
  deployer: Pick<Deployer, "enqueue" | "cancel">;
  logs: Pick<DeployLogs, "follower">;
  /** The app's URL, told to the pusher when the deploy succeeded. */
  appUrl: (app: App) => Promise<string>;
  /** How long the log's last lines may take to reach a pusher that stopped reading (30 s). */
  drainMs?: number;
}

type Outcome = { ok: boolean; message: string };

/** The push handler the SSH server calls once per push of master. */
export function pushHandler(deps: PushHandlerDeps): PushHandler {
  return async (req) => {
    const app = await deps.store.findApp(req.appId);
    if (!app) return { ok: false, message: `App ${req.appId} not found.` };
    const queued = await enqueuePush(deps, app, req);
    if ("message" in queued) return queued;
    const end = await followDeployment(deps, app, req, queued);
    return end.state === "succeeded"
      ? { ok: true, message: `Deployed ${app.name}: ${await deps.appUrl(app)}` }
      : {
          ok: false,
          message: `Push rejected: deployment ${end.id} ${end.state}; the previous release, if any, keeps serving.`,
        };
  };
}

/** The push's deployment, or why it is refused (APP_BUSY: the pusher reads why, not "internal error"). */
async function enqueuePush(
  deps: PushHandlerDeps,
  app: App,
  req: PushRequest,
): Promise<{ deployment: Deployment; done: Promise<Deployment> } | Outcome> {
  try {
    return await deps.deployer.enqueue(app, {
      commit: req.newSha,
      cause: `git push by key ${req.keyFingerprint}`,
      withoutCache: false,
      gitEnv: req.gitEnv,
    });
  } catch (e) {
    if (!(e instanceof PierError)) throw e;
    return { ok: false, message: `Push rejected: ${e.message}${e.hint ? ` (${e.hint})` : ""}` };
  }
}

/**
 * The deploy log to the pusher until the deployment ends; a pusher that disconnects cancels it. The pusher
 * reads at its own pace: what it does not keep up with is dropped for it, with a marker line
 * (deploy-logs.ts); the deploy and the log's other followers never wait for it.
 */
async function followDeployment(
  deps: PushHandlerDeps,
  app: App,
  req: PushRequest,
  queued: { deployment: Deployment; done: Promise<Deployment> },
): Promise<Deployment> {
  const { deployment, done } = queued;
  const { lines, stop } = await deps.logs.follower(deployment.id);
  const pumped = (async () => {
    for await (const l of lines) await req.log(isDropped(l) ? droppedLine(l.dropped) : l.line);
  })();
  const onAbort = () => {
    stop();
    void deps.deployer.cancel(app.id, deployment.id).catch(() => undefined);
  };
  req.signal.addEventListener("abort", onAbort, { once: true });
  const end = await done;
  req.signal.removeEventListener("abort", onAbort);
  // The log's last lines go before the outcome; a pusher that stopped reading gets it 30 s later.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([pumped, new Promise((r) => (timer = setTimeout(r, deps.drainMs ?? 30_000)))]);
  clearTimeout(timer);
  stop();
  return end;
}
