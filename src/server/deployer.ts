import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { archiveCommit } from "../adapters/git.js";
import { type LinkedEnvironment, linkedLines } from "../core/addons.js";
import { healthCheckPaths, instanceEnvironment, platformVariables } from "../core/env.js";
import { ENV_CAP_HINT, instanceEnvProblem } from "../core/env-limits.js";
import { PierError } from "../core/errors.js";
import { healthReport, notListeningLines } from "../core/health.js";
import { LABEL } from "../core/labels.js";
import { type App, type Deployment, FLAVOR_MEMORY_MIB, type Release } from "../core/model.js";
import type { Engine, InstanceInfo, Store } from "../core/ports.js";
import { RELEASE_VOLUME_ROLE, unnamedVolumes } from "../core/release-volumes.js";
import type { DeployLogs } from "./deploy-logs.js";
import { probe, waitListening } from "./health-gate.js";
import { appNetworkName, type Instances, type ReleaseToRun } from "./instances.js";
import type { AppLimits } from "./limits.js";
import { maskedError } from "./logging.js";
import type { Runtime } from "./runtimes/runtime.js";

export interface DeployRequest {
  commit: string;
  cause: string;
  withoutCache: boolean;
  /** The pushed objects live in git's quarantine until the push is accepted. */
  gitEnv?: Record<string, string>;
  /** Redeploy the current release's image with the app's new size (scale): no build. */
  reuseCurrentImage?: boolean;
  /** The app's new size (scale): recorded with the release, only if the deploy succeeds. */
  resize?: { instances?: number; flavor?: App["flavor"] };
  /** Redeploy this release's image (rollback): no build. */
  rollbackTo?: Release;
}

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

/** How many releases keep their image, so a rollback needs no rebuild. */
export const KEPT_RELEASES = 5;

export const newId = (prefix: string) => `${prefix}-${randomBytes(6).toString("hex")}`;
const now = () => new Date().toISOString();

/**
 * The deploy queue and the deploy itself: one deployment at a time per app, a newer request supersedes a
 * queued one, each can be cancelled and has a time limit, and on any failure the previous release keeps
 * serving.
 */
export class Deployer {
  private readonly queues = new Map<string, AppQueue>();

  /** Apps being stopped or deleted, with what is under way: no deployment may start meanwhile. */
  private readonly exclusive = new Map<string, string>();

  constructor(
    private readonly deps: {
      store: Store;
      engine: Engine;
      instances: Instances;
      logs: DeployLogs;
      logger: Logger;
      repoDir: (appId: string) => string;
      runtimes: Partial<Record<App["type"], Runtime>>;
      deployTimeoutMs: number;
      listenTimeoutMs: number;
      stopGraceMs: number;
      /** Each app's ceiling (ADR 0022). */
      limits: Pick<AppLimits, "check">;
      /**
       * Add-ons and links (ADR 0015): the app's environment with its links' variables, and the linked
       * add-ons joining the app's networks before its build and instances start. None: no links.
       */
      links?: {
        environment(appId: string, own: Record<string, string>): Promise<LinkedEnvironment>;
        attach(appId: string, network: { name: string; ipv6Subnet: string | null }): Promise<string[]>;
      };
    },
  ) {}

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

  /**
   * Keeps the images of the last KEPT_RELEASES releases (for rollbacks); removes the rest, then the release
   * volumes (a PHP release's vendor/) that no remaining image names.
   */
  private async pruneImages(appId: string): Promise<void> {
    const { engine } = this.deps;
    const keep = new Set(
      (await this.deps.store.listReleases(appId)).slice(0, KEPT_RELEASES).map((r) => r.image),
    );
    const busy = this.queues.get(appId)?.active;
    for (const tag of await engine.imageTags(`pier-app/${appId}`)) {
      if (keep.has(tag) || (busy && tag.endsWith(`:${busy.deployment.id}`))) continue;
      await engine.removeImage(tag).catch(() => undefined);
    }
    // Volumes first, then images: a volume whose image a deploy commits meanwhile is that deploy's (busy).
    const volumes = await engine.listVolumes({ [LABEL.app]: appId, [LABEL.role]: RELEASE_VOLUME_ROLE });
    if (volumes.length === 0) return;
    const images: Record<string, string>[] = [];
    for (const tag of await engine.imageTags(`pier-app/${appId}`)) {
      const info = await engine.imageInfo(tag);
      if (info) images.push(info.labels);
    }
    const running = this.queues.get(appId)?.active?.deployment.id ?? null;
    // One still mounted (a retired instance kept for its logs) stays, and goes with a later prune.
    for (const name of unnamedVolumes(volumes, images, running))
      await engine.removeVolume(name).catch(() => undefined);
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
      // Instances retired by an earlier deploy (stopped, kept for their logs) go now; the running ones stop.
      const stopped = retiring.filter((i) => !i.running && i.state !== "restarting");
      void this.deps.instances
        .remove(stopped)
        .then(() => this.deps.instances.retire(retiring.filter((i) => !stopped.includes(i))))
        .then(() => this.deps.instances.pruneNetworks(appId))
        // The next deploy's sandboxes: the retired instances' are free again (made if scaled up).
        .then(() => (next ? this.deps.instances.prepare(appId, next, next.instances) : undefined))
        .then(() => this.pruneImages(appId))
        .catch((err) => log.warn({ err }, "could not retire an instance of the previous release"));
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

  private async execute(
    appId: string,
    job: Job,
  ): Promise<{
    retiring: InstanceInfo[];
    next: {
      httpPort: number | null;
      tcpPort: number | null;
      ipv6Subnet: string | null;
      instances: number;
    } | null;
  }> {
    const { store, engine, instances, logs } = this.deps;
    const signal = job.controller.signal;
    const d = job.deployment;
    const app = await store.findApp(appId);
    if (!app) throw new PierError("APP_NOT_FOUND", `App ${appId} no longer exists.`);
    const own = await store.getEnv(app.id);
    const linked = this.deps.links ? await this.deps.links.environment(app.id, own) : null;
    // The app's own variables and its links' (its own win): builds and instances get them all.
    const vars = linked?.vars ?? own;
    // The log masks every line with the app's secrets and its links': the variables this deploy uses.
    await logs.refreshMasker(d.id, vars);
    const write = (line: string) => logs.write(d.id, line);
    const check = () => {
      if (signal.aborted) throw signal.reason;
    };

    write(`Deploying ${app.name} (${app.type}), commit ${d.commit.slice(0, 12)}: ${d.cause}.`);
    await store.updateDeployment(d.id, { state: "building", buildingAt: now() });

    const runtime = this.deps.runtimes[app.type];
    if (!runtime) {
      throw new PierError(
        "INVALID_INPUT",
        `The ${app.type} runtime is not available yet on this Pier.`,
        "Use docker or node.",
      );
    }
    const settingsResult = runtime.settings(vars);
    if (settingsResult.errors.length > 0) {
      throw new PierError(
        "INVALID_VARIABLE",
        `Invalid settings: ${settingsResult.errors.join("; ")}`,
        "Fix them with `pier env set`.",
      );
    }
    const settings = settingsResult.settings;
    // A task runs once to completion: created with --task "<command>", or CC_TASK=true (its start command).
    const task = app.task !== null || vars.CC_TASK === "true";
    const health = healthCheckPaths(vars);
    if (health.errors.length > 0) throw new PierError("INVALID_VARIABLE", health.errors.join("; "));
    if (settings.mountDockerSocket && !app.allowDockerSocket) {
      throw new PierError(
        "FORBIDDEN",
        "CC_MOUNT_DOCKER_SOCKET=true, but no admin allowed this app to use the engine socket.",
        'An admin can allow it (PATCH /v1/apps/<app> {"allowDockerSocket": true}); unset the variable otherwise.',
      );
    }
    const appHome = "/app";
    const common = platformVariables({
      appId: app.id,
      appName: app.name,
      appHome,
      instanceNumber: 0,
      instanceId: "",
      instanceType: "build",
      port: settings.httpPort,
      deploymentId: d.id,
      commitId: d.commit,
    });
    // The app's ceiling and the caps on an instance's environment, before anything is built or started.
    await this.checkLimits(app, job.request, instanceEnvironment(vars, common, appHome), task);
    let addonNetwork: string | null = null;
    if (linked && this.deps.links) {
      for (const line of linkedLines(linked)) write(line);
      const network = { name: appNetworkName(app.id, settings.ipv6Subnet), ipv6Subnet: settings.ipv6Subnet };
      for (const line of await this.deps.links.attach(app.id, network)) write(line);
      if (linked.linked.some((v) => v.source.kind === "addon")) addonNetwork = network.name;
    }

    let image: string;
    const current = await store.currentRelease(app.id);
    const target = job.request.rollbackTo;
    if (target) {
      if (!(await engine.imageExists(target.image))) {
        throw new PierError(
          "RELEASE_NOT_FOUND",
          `The image of release v${target.number} is no longer kept (the last ${KEPT_RELEASES} releases keep theirs).`,
          `Redeploy its commit ${target.commit.slice(0, 12)} with git push instead.`,
        );
      }
      image = target.image;
      write(
        `Rolling back to release v${target.number} (commit ${target.commit.slice(0, 12)}): its image, today's variables.`,
      );
    } else if (job.request.reuseCurrentImage) {
      if (!current) throw new PierError("NOTHING_TO_DEPLOY", "This app has no release yet: push first.");
      image = current.image;
      write(`Reusing the image of release v${current.number}.`);
    } else {
      const sourceDir = await mkdtemp(join(tmpdir(), "pier-build-"));
      try {
        await archiveCommit(this.deps.repoDir(app.id), d.commit, sourceDir, job.request.gitEnv);
        image = await runtime.build(
          {
            app,
            deployment: d,
            vars,
            platformVars: common,
            sourceDir,
            sshPrivateKey: await this.deps.store.getAppSecret(app.id, "ssh_private_key"),
            previousImage: current?.image ?? null,
            write,
            signal,
            addonNetwork,
          },
          settings,
        );
      } finally {
        await rm(sourceDir, { recursive: true, force: true });
      }
    }
    check();

    await store.updateDeployment(d.id, { state: "deploying", deployingAt: now() });
    const env = instanceEnvironment(vars, { ...common, INSTANCE_TYPE: "production" }, appHome);
    delete env.INSTANCE_NUMBER;
    delete env.INSTANCE_ID;
    if (settings.mountDockerSocket) {
      write(
        "WARNING: CC_MOUNT_DOCKER_SOCKET=true: the engine socket is mounted in the instances; isolation is broken, never run untrusted code in this app.",
      );
    }
    // A scale deploys the new size; the app records it only when this deploy succeeds.
    const size = { instances: app.instances, flavor: app.flavor, ...job.request.resize };
    const toRun: ReleaseToRun = {
      appId: app.id,
      appName: app.name,
      deploymentId: d.id,
      image,
      env,
      httpPort: task ? null : settings.httpPort,
      tcpPort: settings.tcpPort,
      cmd: app.task ? ["/bin/sh", "-c", app.task] : settings.cmd,
      flavor: size.flavor,
      instances: task ? 1 : size.instances,
      ipv6Subnet: settings.ipv6Subnet,
      mountDockerSocket: settings.mountDockerSocket,
      restart: !task,
    };
    write(
      `Starting ${toRun.instances} instance(s) of flavor ${size.flavor} (${FLAVOR_MEMORY_MIB[size.flavor]} MiB).`,
    );
    const started = await instances.start(toRun, write);
    try {
      check();
      if (task) {
        write("Task started: it runs once to completion (no HTTP, no health check).");
        const code = await engine.waitInstance(started[0]!.id, signal);
        await engine.logs(started[0]!.id, { follow: false }, (l) => write(l.line), signal);
        if (code !== 0) throw new PierError("BUILD_FAILED", `The task exited with code ${code}.`);
        write("Task finished with exit code 0.");
      } else {
        try {
          await Promise.all(
            started.map((inst) => this.gate(app, inst, settings.httpPort, health.paths, write, signal)),
          );
        } catch (e) {
          await this.runHook("CC_RUN_FAILED_HOOK", vars, started, write);
          throw e;
        }
        await this.runHook("CC_RUN_SUCCEEDED_HOOK", vars, started, write);
      }
      check();
      // The switch: the edge serves the new instances first, then the store records the release, the
      // app's size and the deployment's success in one transaction. If either step fails, the edge goes
      // back to what the store says and nothing of this deploy is recorded.
      let release: Release | null = null;
      await instances.transition(app.id, d.id, async () => {
        release = await store.commitRelease(
          {
            id: newId("rel"),
            appId: app.id,
            deploymentId: d.id,
            image,
            commit: d.commit,
            env,
            httpPort: settings.httpPort,
            tcpPort: settings.tcpPort,
          },
          { stopped: false, ...job.request.resize },
          now(),
        );
      });
      write(`Release v${(release as Release | null)?.number} is live at the edge.`);
    } catch (e) {
      write("Removing the instances of this deployment; the previous release keeps serving.");
      await instances.remove(started).catch(() => undefined);
      throw e;
    }
    const serving = await instances.others(app.id, d.id);
    if (serving.length > 0) {
      write(`Retiring the previous release's instances (SIGTERM, ${this.deps.stopGraceMs / 1000} s grace).`);
    }
    return {
      retiring: serving,
      next: task
        ? null
        : {
            httpPort: toRun.httpPort,
            tcpPort: toRun.tcpPort,
            ipv6Subnet: toRun.ipv6Subnet,
            instances: toRun.instances,
          },
    };
  }

  /**
   * The deploy's size within the app's ceiling (an admin may have lowered it since the last scale) and the
   * instances' environment (the app's variables with its links' and the platform's) within its cap. Either
   * fails the deploy before anything is built or started: the app stays as it was.
   */
  private async checkLimits(
    app: App,
    req: DeployRequest,
    env: Record<string, string>,
    task: boolean,
  ): Promise<void> {
    const size = { instances: app.instances, flavor: app.flavor, ...req.resize };
    const building = !req.reuseCurrentImage && !req.rollbackTo;
    await this.deps.limits.check(app, {
      instances: task ? 1 : size.instances,
      flavor: size.flavor,
      ...(building ? { buildFlavor: app.buildFlavor } : {}),
    });
    const problem = instanceEnvProblem(env, app.name);
    if (problem) throw new PierError("ENV_LIMIT_EXCEEDED", problem, ENV_CAP_HINT);
  }

  /**
   * CC_RUN_SUCCEEDED_HOOK / CC_RUN_FAILED_HOOK: the user's command, by a shell inside instance 0, after
   * the health gate. Its output and exit code are logged; it never changes the deployment's outcome.
   */
  private async runHook(
    name: "CC_RUN_SUCCEEDED_HOOK" | "CC_RUN_FAILED_HOOK",
    vars: Record<string, string>,
    started: InstanceInfo[],
    write: (l: string) => void,
  ): Promise<void> {
    const hook = vars[name]?.trim();
    const target = started[0];
    if (!hook || !target) return;
    write(`-----> Running ${name} in instance 0`);
    try {
      const code = await this.deps.engine.execInInstance(target.id, ["/bin/sh", "-c", hook], (l) => write(l));
      write(`${name} exited with code ${code}${code === 0 ? "" : " (logged only)"}.`);
    } catch (e) {
      write(`${name} could not run: ${(e as Error).message} (logged only).`);
    }
  }

  private async gate(
    app: App,
    inst: InstanceInfo,
    port: number,
    paths: string[],
    write: (l: string) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const n = inst.labels[LABEL.instance] ?? "?";
    const listening = await waitListening(this.deps.engine, inst, port, this.deps.listenTimeoutMs, signal);
    if (!listening.ok) {
      const tail: string[] = [];
      await this.deps.engine
        .logs(inst.id, { follow: false, tail: 20 }, (l) => void tail.push(l.line), signal)
        .catch(() => undefined);
      if (tail.length > 0) {
        write(`Last output of instance ${n}:`);
        for (const l of tail) write(`  ${l}`);
      }
      const why = listening.loopbackOnly
        ? `Instance ${n} listens on ${listening.loopbackOnly.map((a) => `${a}:${port}`).join(", ")} only: nothing outside the instance can reach it. Listen on 0.0.0.0:${port} (all interfaces), e.g. server.listen(process.env.PORT, "0.0.0.0").`
        : listening.exited !== null
          ? `Instance ${n} exited with code ${listening.exited} before it listened on port ${port}.`
          : notListeningLines(port, this.deps.listenTimeoutMs / 1000, app.type).join(" ");
      throw new PierError("HEALTH_CHECK_FAILED", why);
    }
    if (!inst.http) throw new PierError("ENGINE_ERROR", `Instance ${n} has no published HTTP port.`);
    const results: { path: string; status: number | string }[] = [];
    for (const path of paths) results.push({ path, status: await probe(inst.http, path) });
    const report = healthReport(results);
    write(`Health check of instance ${n}:`);
    for (const l of report.lines) write(l);
    if (!report.ok) throw new PierError("HEALTH_CHECK_FAILED", `The health check of instance ${n} failed.`);
  }
}
