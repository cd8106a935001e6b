import type { Logger } from "pino";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import type { App, Deployment } from "../core/model.js";
import type { InstanceInfo } from "../core/ports.js";
import { buildImage, KEPT_RELEASES } from "./deploy/build.js";
import { previousInstances, retirePrevious, undoStart } from "./deploy/cleanup.js";
import {
  type DeployRequest,
  type NextShape,
  newId,
  now,
  type StepContext,
  type StepDeps,
} from "./deploy/context.js";
import { gateRelease } from "./deploy/gate.js";
import { startInstances } from "./deploy/start.js";
import { recordRelease, switchEdge } from "./deploy/switch.js";
import { planRelease, readVariables } from "./deploy/variables.js";
import { maskedError } from "./logging.js";

export { type DeployRequest, KEPT_RELEASES, newId };

interface Job {
  deployment: Deployment;
  request: DeployRequest;
  controller: AbortController;
  done: Promise<Deployment>;
  resolve: (d: Deployment) => void;
}

interface AppQueue {
  active: Job | null;
  queued: Job | null;
}

class Cancelled extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** How much of the app a request decides: it may supersede a queued request of less or equal weight. */
function weight(r: DeployRequest): number {
  if (r.rollbackTo || r.gitEnv) return 2; // picks the code
  return r.reuseCurrentImage ? 0 : 1; // reuses the current image, or builds it again
}

/**
 * The deploy queue and the deploy itself: one deployment at a time per app, a newer request supersedes a
 * queued one, each can be cancelled and has a time limit, and on any failure the previous release keeps
 * serving.
 */
export class Deployer {
  private readonly queues = new Map<string, AppQueue>();

  /** Apps being stopped or deleted, with what is under way: no deployment may start meanwhile. */
  private readonly exclusive = new Map<string, string>();

  constructor(private readonly deps: StepDeps & { logger: Logger; deployTimeoutMs: number }) {}

  /**
   * After a restart of the control plane: nothing stays "queued", "building" or "deploying" forever, and
   * each interrupted deployment ends as what serves says. A deployment whose release the store records as
   * current went live (the store records it once the edge switched; the reconciler routes it): it
   * succeeded. Any other failed. Then the edge is brought in step with the store before any instance goes:
   * a switch the store never recorded is undone while the old instances still answer, and one it recorded
   * is completed before the reconciler retires the old instances.
   */
  async recover(): Promise<void> {
    const { store, instances, logs, logger } = this.deps;
    const orphans: InstanceInfo[] = [];
    const unfinished = await store.unfinishedDeployments();
    for (const d of unfinished) {
      const current = await store.currentRelease(d.appId);
      const write = (line: string) => logs.write(d.id, line);
      if (current && current.deploymentId === d.id) {
        write(`pier server stopped after release v${current.number} went live; it serves.`);
        write("Deployment succeeded.");
        await store.updateDeployment(d.id, {
          state: "succeeded",
          reason: null,
          releaseId: current.id,
          finishedAt: now(),
        });
        logger.info({ appId: d.appId, deploymentId: d.id }, "interrupted deployment had gone live");
        continue;
      }
      const step =
        d.state === "queued"
          ? "before it started"
          : d.state === "building"
            ? "during the build"
            : "before its release went live";
      const reason = `Interrupted ${step}: pier server stopped. ${
        current ? `Release v${current.number} keeps serving.` : "Nothing was released."
      } Push again or run \`pier restart\`.`;
      write(reason);
      write("Deployment failed.");
      await store.updateDeployment(d.id, { state: "failed", reason, finishedAt: now() });
      logger.info({ appId: d.appId, deploymentId: d.id, state: d.state }, "interrupted deployment failed");
      orphans.push(...(await instances.list(d.appId)).filter((i) => i.labels[LABEL.deployment] === d.id));
    }
    if (unfinished.length === 0) return;
    // The edge follows the store first: then neither these instances nor those the reconciler removes next
    // (the previous release's, when the new one had gone live) are routed when they go.
    await instances
      .refreshEdge()
      .catch((err) => logger.warn({ err }, "could not bring the edge in step with the current releases"));
    await instances.remove(orphans);
  }

  /**
   * Runs `work` (a stop, a delete) with the app's deployments cancelled and none accepted until it ends: a
   * deploy started half-way would run instances the stop never sees, or record a release of a deleted app.
   * A second such operation on the app meanwhile is refused (APP_BUSY).
   */
  async exclusively<T>(app: App, what: string, work: () => Promise<T>): Promise<T> {
    const busy = this.refusal(app, null);
    if (busy) throw busy;
    this.exclusive.set(app.id, what);
    try {
      await this.cancelAll(app.id);
      return await work();
    } finally {
      this.exclusive.delete(app.id);
    }
  }

  /**
   * Why this request (or, null, a stop or delete) cannot be taken now, or null: the app is being stopped
   * or deleted, or the request would supersede a queued one that does more (losesQueued).
   */
  private refusal(app: App, req: DeployRequest | null): PierError | null {
    const what = this.exclusive.get(app.id);
    if (what) {
      return new PierError(
        "APP_BUSY",
        `${app.name} is being ${what}: nothing else can change it until that ends.`,
        "Try again in a few seconds; `pier status` shows its state.",
      );
    }
    const lost = req ? this.losesQueued(app.id, req) : null;
    if (!lost) return null;
    return new PierError(
      "APP_BUSY",
      `${app.name}: ${lost}.`,
      "Try again once it has started (`pier deployments` shows it), or cancel it first.",
    );
  }

  async enqueue(
    app: App,
    req: DeployRequest,
  ): Promise<{ deployment: Deployment; done: Promise<Deployment> }> {
    const refused = this.refusal(app, req);
    if (refused) throw refused;
    const deployment = await this.deps.store.createDeployment({
      id: newId("dep"),
      appId: app.id,
      commit: req.commit,
      cause: req.cause,
      withoutCache: req.withoutCache,
    });
    await this.deps.logs.open(deployment.id, app.id);
    let resolve!: (d: Deployment) => void;
    const done = new Promise<Deployment>((r) => {
      resolve = r;
    });
    const job: Job = { deployment, request: req, controller: new AbortController(), done, resolve };
    // Stopped, deleted or given a push meanwhile (the awaits above): this one never runs.
    const late = this.refusal(app, req);
    if (late) {
      await this.finish(job, "cancelled", late.message);
      throw late;
    }
    const q = this.queues.get(app.id) ?? { active: null, queued: null };
    this.queues.set(app.id, q);
    if (q.queued) {
      const old = q.queued;
      q.queued = null;
      // A queued scale is not lost: the newer deployment applies its size too (unless it has its own).
      const resize = old.request.resize;
      if (resize && !req.resize) {
        job.request = { ...req, resize };
        this.deps.logs.write(deployment.id, `Also applies the queued ${old.deployment.cause}.`);
      }
      await this.finish(
        old,
        "cancelled",
        `Superseded by the newer deployment ${deployment.id}${resize && !req.resize ? ", which applies this scale too" : ""}.`,
      );
    }
    if (q.active) {
      q.queued = job;
      this.deps.logs.write(deployment.id, `Queued behind deployment ${q.active.deployment.id}.`);
    } else {
      q.active = job;
      void this.run(app.id, job);
    }
    return { deployment, done };
  }

  /**
   * What a newer request would lose by superseding the queued deployment, or null. A newer request replaces
   * a queued one only if it does at least as much: a push or a rollback picks the code, a restart builds
   * again, a scale or the reconciler's redeploy reuses the current image (a queued scale's size is carried
   * over, see enqueue).
   */
  private losesQueued(appId: string, req: DeployRequest): string | null {
    const queued = this.queues.get(appId)?.queued;
    if (!queued || weight(req) >= weight(queued.request)) return null;
    return `deployment ${queued.deployment.id} (${queued.deployment.cause}) is queued, and this would supersede it`;
  }

  /** Cancels the given deployment, or with "current" the running one else the queued one. */
  async cancel(appId: string, ref: string): Promise<Deployment> {
    const q = this.queues.get(appId);
    const jobs = [q?.active, q?.queued].filter((j): j is Job => !!j);
    const job = ref === "current" ? jobs[0] : jobs.find((j) => j.deployment.id === ref);
    if (!job) {
      const d = ref === "current" ? null : await this.deps.store.getDeployment(ref);
      if (d && d.appId === appId) {
        throw new PierError("CONFLICT", `Deployment ${d.id} already ended (${d.state}).`);
      }
      throw new PierError("DEPLOYMENT_NOT_FOUND", "No deployment of this app is queued or running.");
    }
    if (q?.queued === job) {
      q.queued = null;
      return this.finish(job, "cancelled", "Cancelled by the user before it started.");
    }
    job.controller.abort(new Cancelled("Cancelled by the user."));
    return job.done;
  }

  /** Cancels everything of an app (before it is deleted) and waits for it to stop. */
  async cancelAll(appId: string): Promise<void> {
    const q = this.queues.get(appId);
    if (!q) return;
    if (q.queued) {
      const j = q.queued;
      q.queued = null;
      await this.finish(j, "cancelled", "The app is being deleted.");
    }
    if (q.active) {
      q.active.controller.abort(new Cancelled("The app is being deleted."));
      await q.active.done;
    }
  }

  isBusy(appId: string): boolean {
    return !!this.queues.get(appId)?.active;
  }

  private async finish(
    job: Job,
    state: "succeeded" | "failed" | "cancelled",
    reason: string | null,
  ): Promise<Deployment> {
    // The reason is masked as its log line is: it may quote a failed command or a URL with credentials.
    // The log's masker holds the app's secrets since enqueue, and its links' since the deploy ran.
    const masked = reason === null ? null : this.deps.logs.mask(job.deployment.id, reason);
    const d = await this.deps.store.updateDeployment(job.deployment.id, {
      state,
      reason: masked,
      finishedAt: now(),
    });
    if (state !== "succeeded" && masked) this.deps.logs.write(d.id, masked, { final: true });
    this.deps.logs.write(d.id, `Deployment ${state}.`, { final: true });
    this.deps.logs.close(d.id);
    job.resolve(d);
    return d;
  }

  private async run(appId: string, job: Job): Promise<void> {
    const id = job.deployment.id;
    const log = this.deps.logger.child({ appId, deploymentId: id });
    const timer = setTimeout(
      () =>
        job.controller.abort(
          new PierError(
            "DEPLOY_TIMEOUT",
            `The deployment exceeded its time limit (${this.deps.deployTimeoutMs / 1000} s).`,
          ),
        ),
      this.deps.deployTimeoutMs,
    );
    try {
      const { retiring, next } = await this.execute(appId, job);
      await this.finish(job, "succeeded", null);
      // The new release serves already: the old instances drain (SIGTERM, grace) while the pusher moves on.
      void retirePrevious(this.deps, appId, retiring, next, () => this.activeDeployment(appId)).catch((err) =>
        log.warn({ err }, "could not retire an instance of the previous release"),
      );
    } catch (e) {
      const reason = job.controller.signal.aborted
        ? ((job.controller.signal.reason as Error).message ?? "Cancelled.")
        : e instanceof PierError
          ? e.message + (e.hint ? ` (${e.hint})` : "")
          : `Internal error: ${(e as Error).message}`;
      const state = job.controller.signal.reason instanceof Cancelled ? "cancelled" : "failed";
      if (!(e instanceof PierError) && !job.controller.signal.aborted)
        log.error(
          { err: maskedError(e, (t) => this.deps.logs.mask(job.deployment.id, t)) },
          "deployment crashed",
        );
      await this.finish(job, state, reason).catch((err) =>
        log.error({ err }, "could not record the end of a deployment"),
      );
    } finally {
      clearTimeout(timer);
      const q = this.queues.get(appId);
      if (q) {
        q.active = q.queued;
        q.queued = null;
        if (q.active) void this.run(appId, q.active);
        else this.queues.delete(appId);
      }
    }
  }

  /** The deployment under way for the app, if any: its image and volumes are not pruned. */
  private activeDeployment(appId: string): string | null {
    return this.queues.get(appId)?.active?.deployment.id ?? null;
  }

  /**
   * The deploy, step by step: variables, build, start, gate, switch (the edge) then record (the store).
   * A failure after the start removes this deployment's instances: the previous release keeps serving.
   */
  private async execute(
    appId: string,
    job: Job,
  ): Promise<{ retiring: InstanceInfo[]; next: NextShape | null }> {
    const d = job.deployment;
    const ctx: StepContext = {
      deps: this.deps,
      deployment: d,
      request: job.request,
      signal: job.controller.signal,
      write: (line) => this.deps.logs.write(d.id, line),
    };
    const plan = await planRelease(ctx, await readVariables(ctx, appId));
    const image = await buildImage(ctx, plan);
    const started = await startInstances(ctx, plan, image);
    try {
      await gateRelease(ctx, plan, started.instances);
      await switchEdge(ctx, plan.app.id, () => recordRelease(ctx, plan, started, image));
    } catch (e) {
      await undoStart(ctx, started);
      throw e;
    }
    return previousInstances(ctx, plan, started);
  }
}
