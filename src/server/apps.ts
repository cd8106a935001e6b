import { rm } from "node:fs/promises";
import type { Logger } from "pino";
import { revParse } from "../adapters/git.js";
import { appState } from "../core/app-state.js";
import { PierError } from "../core/errors.js";
import { instanceNumber, LABEL } from "../core/labels.js";
import { smallerFlavor } from "../core/limits.js";
import { type App, type Deployment, type Flavor, parseReleaseNumber, type Runtime } from "../core/model.js";
import { appNameProblem } from "../core/names.js";
import type { Engine, ReleaseRegistry, Store } from "../core/ports.js";
import { appListStatuses } from "./app-list.js";
import { type Deployer, newId } from "./deployer.js";
import { forgetReleases } from "./forget-releases.js";
import type { Instances } from "./instances.js";
import type { AppLimits } from "./limits.js";
import { type FollowRange, followAppLogs, type InstanceStarts, type RuntimeLogLine } from "./log-follow.js";
import { parsePrivateKey, type SshPrivateKeyInfo } from "./ssh-keys.js";

export type { RuntimeLogLine } from "./log-follow.js";
export { parsePrivateKey, parsePublicKey, type SshPrivateKeyInfo } from "./ssh-keys.js";

const SSH_PRIVATE_KEY = "ssh_private_key";

/** What the API and the git server do to apps: one place, so both behave alike. */
export class AppService {
  constructor(
    private readonly deps: {
      store: Store;
      engine: Engine;
      deployer: Deployer;
      instances: Instances;
      logger: Logger;
      repoDir: (appId: string) => string;
      gitUrl: (appId: string) => string;
      appUrl: (name: string) => string;
      stopGraceMs: number;
      /** Each app's ceiling (ADR 0022): checked before its size changes. */
      limits: AppLimits;
      /** Tells the followers of an app's log that it is deleted (server/log-follow.ts). */
      starts: InstanceStarts;
      /** PIER_DOMAIN: apps answer at <name>.<domain>. */
      domain: string;
      /** PIER_BUILD_NETWORK, or null (the app's network): where the app's build slot sits. */
      buildNetwork: string | null;
      /** Add-ons leave a deleted app's networks (ADR 0015). */
      detachAddons?: (appId: string) => Promise<void>;
      /** Takes the certificates of domains gone with the app off the edge (DomainService.removeOrphans). */
      dropCertificates?: () => Promise<void>;
      /** The swarm's registry (ADR 0030): a deleted app's images are forgotten there. None: one dockerd. */
      registry?: ReleaseRegistry | null;
    },
  ) {}

  async get(ref: string): Promise<App> {
    const app = await this.deps.store.findApp(ref);
    if (!app) throw new PierError("APP_NOT_FOUND", `No app named or numbered '${ref}'.`, "See `pier apps`.");
    return app;
  }

  async view(app: App): Promise<App & { gitUrl: string; url: string }> {
    return { ...app, gitUrl: this.deps.gitUrl(app.id), url: this.deps.appUrl(app.name) };
  }

  /**
   * The apps (all, or the one app `only`), each with its status for the list: one engine call for them all
   * (appListStatuses), never one per app.
   */
  async list(only?: string) {
    const apps = (await this.deps.store.listApps()).filter((a) => only === undefined || a.id === only);
    const statuses = await appListStatuses(apps, this.deps);
    return Promise.all(
      apps.map(async (a) => ({ ...(await this.view(a)), status: statuses.get(a.id) ?? null })),
    );
  }

  async create(input: {
    name: string;
    type: Runtime;
    flavor?: Flavor;
    buildFlavor?: Flavor;
    instances?: number;
    task?: string;
  }): Promise<App> {
    const nameProblem = appNameProblem(input.name, this.deps.domain);
    if (nameProblem) throw new PierError("INVALID_INPUT", nameProblem, "Use a DNS label like my-app.");
    const flavor = input.flavor ?? (input.type === "phpserver" ? "XS" : "nano");
    if (input.type === "phpserver" && flavor === "pico") {
      throw new PierError(
        "INVALID_INPUT",
        "flavor: a phpserver app cannot run on pico.",
        "Use XS (the default) or larger.",
      );
    }
    // Builds default to M, or the largest flavor the server allows an app if that is smaller.
    const buildFlavor = input.buildFlavor ?? smallerFlavor("M", this.deps.limits.defaults.maxFlavor);
    const instances = input.instances ?? 1;
    this.deps.limits.checkNew(input.name, { flavor, instances, buildFlavor });
    const app = await this.deps.store.createApp({
      id: newId("app"),
      name: input.name,
      type: input.type,
      flavor,
      buildFlavor,
      instances,
      task: input.task ?? null,
    });
    this.deps.logger.info({ appId: app.id, name: app.name, type: app.type }, "app created");
    // The edge learns the app now (its host answers "not running" until the first deploy), so that
    // deploy switches servers at run time instead of reloading HAProxy on its critical path.
    if (!app.task) {
      await this.deps.instances
        .refreshEdge(app.id)
        .catch((err: Error) =>
          this.deps.logger.warn({ err: err.message }, "edge not updated for the new app"),
        );
      // Instance slots for the first deploy (default ports), made while the user prepares the first push;
      // the second deploy's are made after the first.
      void this.deps.instances
        .prepare(app.id, { httpPort: 8080, tcpPort: null, ipv6Subnet: null }, app.instances)
        .then(() =>
          app.type === "node" || app.type === "phpserver"
            ? this.deps.instances.prepareBuildSlot(app.id, this.deps.buildNetwork)
            : null,
        )
        .catch((err: Error) => this.deps.logger.warn({ err: err.message }, "instance slots not prepared"));
    }
    return app;
  }

  async patch(
    app: App,
    p: { instances?: number; flavor?: Flavor; buildFlavor?: Flavor; allowDockerSocket?: boolean },
  ): Promise<{ app: App; deployment: Deployment | null }> {
    if (app.type === "phpserver" && p.flavor === "pico") {
      throw new PierError("INVALID_INPUT", "flavor: a phpserver app cannot run on pico.");
    }
    if (p.instances !== undefined || p.flavor !== undefined || p.buildFlavor !== undefined) {
      await this.deps.limits.check(app, {
        instances: p.instances ?? app.instances,
        flavor: p.flavor ?? app.flavor,
        buildFlavor: p.buildFlavor ?? app.buildFlavor,
      });
    }
    const resized =
      (p.instances !== undefined && p.instances !== app.instances) ||
      (p.flavor !== undefined && p.flavor !== app.flavor);
    const current = await this.deps.store.currentRelease(app.id);
    if (!resized || !current || app.stopped) {
      // A deploy under way runs the size it read when it began, and would record it with its release.
      if (resized && this.deps.deployer.isBusy(app.id)) {
        throw new PierError(
          "APP_BUSY",
          `${app.name} has a deployment under way: a new size would be recorded but not run.`,
          "Scale once it has ended (`pier deployments` shows it).",
        );
      }
      // Nothing runs at the old size: the new one applies from the next deploy.
      return { app: await this.deps.store.updateApp(app.id, p), deployment: null };
    }
    // The size is recorded with the redeploy's release, only if that deploy succeeds: a failed scale
    // leaves the app as it was, in the store as on the engine.
    const { instances, flavor, ...rest } = p;
    const updated = await this.deps.store.updateApp(app.id, rest);
    const target = { instances: instances ?? app.instances, flavor: flavor ?? app.flavor };
    const { deployment } = await this.deps.deployer.enqueue(updated, {
      commit: current.commit,
      cause: `scale to ${target.instances} x ${target.flavor}`,
      withoutCache: false,
      reuseCurrentImage: true,
      resize: target,
    });
    return { app: updated, deployment };
  }

  async redeploy(app: App, o: { withoutCache: boolean; cause: string }): Promise<Deployment> {
    const current = await this.deps.store.currentRelease(app.id);
    const commit =
      current?.commit ?? (await revParse(this.deps.repoDir(app.id), "refs/heads/master").catch(() => null));
    if (!commit) {
      throw new PierError(
        "NOTHING_TO_DEPLOY",
        `${app.name} has never been pushed.`,
        "Push first: git push pier master.",
      );
    }
    const { deployment } = await this.deps.deployer.enqueue(app, {
      commit,
      cause: o.cause,
      withoutCache: o.withoutCache,
    });
    return deployment;
  }

  async releases(app: App) {
    const current = await this.deps.store.currentRelease(app.id);
    return (await this.deps.store.listReleases(app.id)).map(({ env: _env, ...r }) => ({
      ...r,
      current: r.id === current?.id,
    }));
  }

  async rollback(app: App, ref: string): Promise<Deployment> {
    const n = parseReleaseNumber(ref);
    if (n === null) {
      throw new PierError(
        "INVALID_INPUT",
        `'${ref}' is not a release number: write it in plain decimal, like 3 or v3.`,
        "See `pier releases`.",
      );
    }
    const release = (await this.deps.store.listReleases(app.id)).find((r) => r.number === n);
    if (!release) {
      throw new PierError(
        "RELEASE_NOT_FOUND",
        `${app.name} has no release '${ref}'.`,
        "See `pier releases`.",
      );
    }
    const { deployment } = await this.deps.deployer.enqueue(app, {
      commit: release.commit,
      cause: `rollback to v${release.number}`,
      withoutCache: false,
      rollbackTo: release,
    });
    return deployment;
  }

  cancel(app: App, ref: string): Promise<Deployment> {
    return this.deps.deployer.cancel(app.id, ref);
  }

  /**
   * Stops every instance. The edge stops routing to the app first, then the store records it; if either
   * fails, the app keeps serving as before. A deploy under way is cancelled (it would start it again).
   */
  async stop(app: App): Promise<App> {
    return this.deps.deployer.exclusively(app, "stopped", async () => {
      const running = await this.deps.instances.list(app.id);
      let updated = app;
      await this.deps.instances.transition(app.id, null, async () => {
        updated = await this.deps.store.updateApp(app.id, { stopped: true });
      });
      await this.deps.instances.remove(running);
      this.deps.logger.info({ appId: app.id }, "app stopped");
      return updated;
    });
  }

  /**
   * Deletes the app: the edge stops routing it, the store forgets it (if either fails, nothing changed),
   * then everything it had on the engine and on disk goes. A leftover that cannot go now is logged, and
   * the next start of pier server removes what belongs to no app.
   */
  remove(app: App): Promise<void> {
    // A second delete of the app while the first runs (a user's second try, an HTTP client's retry) waits
    // for that one and succeeds with it, as a DELETE may be repeated: it is not refused as a change.
    const under = this.removing.get(app.id);
    if (under) return under;
    const run = this.removeNow(app).finally(() => this.removing.delete(app.id));
    this.removing.set(app.id, run);
    return run;
  }

  /** Deletions under way, by app id. */
  private readonly removing = new Map<string, Promise<void>>();

  private async removeNow(app: App): Promise<void> {
    const instances = await this.deps.deployer.exclusively(app, "deleted", async () => {
      const listed = await this.deps.instances.list(app.id);
      await this.deps.instances.transition(app.id, null, () => this.deps.store.deleteApp(app.id));
      return listed;
    });
    this.deps.starts.gone(app.id);
    const { engine } = this.deps;
    const steps: [string, () => Promise<unknown>][] = [
      ["edge", () => this.deps.instances.refreshEdge(app.id)],
      ["certificates", () => this.deps.dropCertificates?.() ?? Promise.resolve()],
      ["instances", () => this.deps.instances.remove(instances)],
      ["instance slots", () => this.deps.instances.removeSlots(app.id)],
      [
        "images",
        async () => {
          for (const tag of await engine.releaseImages(app.id)) await engine.removeImage(tag);
        },
      ],
      ["registry images", () => forgetReleases(this.deps.registry, this.deps.logger, app.id, [])],
      ["volumes", () => engine.removeAppVolumes(app.id)],
      ["add-on connections", () => this.deps.detachAddons?.(app.id) ?? Promise.resolve()],
      ["networks", () => this.deps.instances.removeNetworks(app.id)],
      ["repository", () => rm(this.deps.repoDir(app.id), { recursive: true, force: true })],
    ];
    for (const [what, step] of steps) {
      await step().catch((err: Error) =>
        this.deps.logger.warn(
          { appId: app.id, err: err.message },
          `deleted app: its ${what} could not be removed yet`,
        ),
      );
    }
    this.deps.logger.info({ appId: app.id, name: app.name }, "app deleted");
  }

  async status(app: App) {
    const release = await this.deps.store.currentRelease(app.id);
    const deployment = (await this.deps.store.listDeployments(app.id, 1))[0] ?? null;
    const exits = await this.deps.store.lastExits(app.id);
    const all = await this.deps.instances.list(app.id);
    const serving = all.filter((i) => i.labels[LABEL.deployment] === release?.deploymentId);
    const instances = serving
      .map((i) => ({
        number: instanceNumber(i.labels),
        id: i.id.slice(0, 12),
        state: i.state,
        startedAt: i.startedAt,
        restarts: i.restarts,
        lastExit: exits.get(i.id) ? { code: exits.get(i.id)!.code, at: exits.get(i.id)!.at } : null,
        address: i.http ? `${i.http.host}:${i.http.port}` : null,
        // On a swarm: its node, and how it came there when the swarm moved it (ADR 0030).
        ...(i.node ? { node: i.node } : {}),
        ...(i.moved ? { moved: i.moved } : {}),
      }))
      .sort((a, b) => a.number - b.number);
    const tcp = serving.find((i) => i.tcp)?.tcp ?? null;
    const state = appState({
      stopped: app.stopped,
      released: release !== null,
      latestDeployment: deployment?.state ?? null,
      running: instances.filter((i) => i.state === "running").length,
    });
    return {
      app: await this.view(app),
      state,
      release: release
        ? {
            id: release.id,
            number: release.number,
            commit: release.commit,
            image: release.image,
            createdAt: release.createdAt,
            task: release.task,
          }
        : null,
      deployment,
      instances,
      tcp,
      routeProblem: this.deps.instances.routeProblem(app.id),
    };
  }

  async runtimeLogs(app: App, o: { since?: Date; until?: Date; tail?: number }): Promise<RuntimeLogLine[]> {
    const out: RuntimeLogLine[] = [];
    const ac = new AbortController();
    for (const i of await this.deps.instances.list(app.id)) {
      const instance = instanceNumber(i.labels);
      await this.deps.engine
        .logs(i.id, { ...o, follow: false }, (l) => void out.push({ ...l, instance }), ac.signal)
        .catch(goneMeanwhile);
    }
    out.sort((a, b) => a.at.localeCompare(b.at));
    return o.tail !== undefined ? out.slice(-o.tail) : out;
  }

  /** The app's runtime log followed until `signal` aborts or the app is deleted (server/log-follow.ts). */
  followRuntimeLogs(
    app: App,
    o: FollowRange,
    onLine: (l: RuntimeLogLine) => void | Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    return followAppLogs(this.deps, app.id, o, onLine, signal);
  }

  /** The app's private SSH key for builds (section 5.2), stored encrypted; the next deploy uses it. */
  async setSshPrivateKey(ref: string, privateKey: string): Promise<SshPrivateKeyInfo> {
    const app = await this.get(ref);
    const info = parsePrivateKey(privateKey);
    await this.deps.store.setAppSecret(
      app.id,
      SSH_PRIVATE_KEY,
      privateKey.endsWith("\n") ? privateKey : `${privateKey}\n`,
    );
    return info;
  }

  async sshPrivateKey(ref: string): Promise<SshPrivateKeyInfo | null> {
    const app = await this.get(ref);
    const key = await this.deps.store.getAppSecret(app.id, SSH_PRIVATE_KEY);
    return key === null ? null : parsePrivateKey(key);
  }

  async removeSshPrivateKey(ref: string): Promise<void> {
    const app = await this.get(ref);
    await this.deps.store.setAppSecret(app.id, SSH_PRIVATE_KEY, null);
  }
}

/** An instance removed between the listing and the reading of its log (a deploy retired it): it has none. */
function goneMeanwhile(e: unknown): void {
  if (!(e instanceof PierError && e.code === "NOT_FOUND")) throw e;
}
