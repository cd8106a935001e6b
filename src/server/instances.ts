import { randomUUID } from "node:crypto";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import { type App, FLAVOR_MEMORY_MIB } from "../core/model.js";
import type {
  Edge,
  InstanceInfo,
  InstanceSpec,
  ReleaseInstances,
  RoutableInstance,
  Route,
  Sandboxes,
  SandboxInfo,
  Store,
} from "../core/ports.js";
import type { Networks } from "./networks.js";

export const appNetworkName = (appId: string, ipv6Subnet: string | null) =>
  ipv6Subnet ? `pier-${appId}-v6-${Buffer.from(ipv6Subnet).toString("hex").slice(0, 16)}` : `pier-${appId}`;

export interface ReleaseToRun {
  appId: string;
  appName: string;
  deploymentId: string;
  image: string;
  env: Record<string, string>;
  httpPort: number | null;
  tcpPort: number | null;
  cmd: string[] | null;
  flavor: App["flavor"];
  instances: number;
  ipv6Subnet: string | null;
  mountDockerSocket: boolean;
  restart: boolean;
}

/** Starts, lists and retires the instances of releases, and keeps the edge's routes in step with them. */
export class Instances {
  constructor(
    private readonly deps: {
      engine: ReleaseInstances & Sandboxes;
      edge: Edge;
      store: Store;
      /** Makes and removes the app networks, each with a subnet of Pier's pool. */
      networks: Pick<Networks, "ensure" | "remove">;
      domain: string;
      stopGraceMs: number;
      /** The custom domains of each app, by app id (ADR 0018). */
      aliases?: () => Promise<Map<string, string[]>>;
    },
  ) {}

  /** Sandbox preparations under way, per app: a deploy waits for them instead of making its own. */
  private readonly preparing = new Map<string, Promise<SandboxInfo[]>>();

  /**
   * Sandboxes handed to a start that has not finished yet: busy, though no instance runs in them yet. A
   * preparation running meanwhile (the previous deploy's, after its release went live) must neither hand
   * them out again nor remove them as surplus (the start would fail: "cannot join network of a non running
   * container").
   */
  private readonly claimed = new Set<string>();

  /**
   * Free sandboxes for `count` new instances of the app with these ports and network, made when missing.
   * A sandbox is free when no running instance is in it. Sandboxes for other ports or networks go.
   */
  sandboxes(
    appId: string,
    want: { httpPort: number | null; tcpPort: number | null; ipv6Subnet: string | null },
    count: number,
    pruneSurplus = false,
    claim = false,
  ): Promise<SandboxInfo[]> {
    const run = (this.preparing.get(appId) ?? Promise.resolve([]))
      .catch(() => [])
      .then(() => this.sandboxesNow(appId, want, count, pruneSurplus))
      .then((free) => {
        if (claim) for (const s of free) this.claimed.add(s.id);
        return free;
      });
    this.preparing.set(appId, run);
    const forget = () => {
      if (this.preparing.get(appId) === run) this.preparing.delete(appId);
    };
    run.then(forget, forget);
    return run;
  }

  private async sandboxesNow(
    appId: string,
    want: { httpPort: number | null; tcpPort: number | null; ipv6Subnet: string | null },
    count: number,
    pruneSurplus: boolean,
  ): Promise<SandboxInfo[]> {
    const { engine } = this.deps;
    const network = appNetworkName(appId, want.ipv6Subnet);
    const [all, instances] = await Promise.all([
      engine.listSandboxes({ [LABEL.app]: appId, [LABEL.sandboxFor]: "instances" }),
      this.list(appId),
    ]);
    const busy = new Set([
      ...instances.filter((i) => i.running || i.state === "restarting").map((i) => i.labels[LABEL.sandbox]),
      ...this.claimed,
    ]);
    const fits = (s: SandboxInfo) =>
      s.labels[LABEL.network] === network &&
      s.labels[LABEL.httpPort] === (want.httpPort === null ? "" : String(want.httpPort)) &&
      s.labels[LABEL.tcpPort] === (want.tcpPort === null ? "" : String(want.tcpPort));
    // Sandboxes of other settings, with no instance running in them, are not needed any more.
    await Promise.all(all.filter((s) => !fits(s) && !busy.has(s.id)).map((s) => engine.removeSandbox(s.id)));
    const ready = all.filter((s) => fits(s) && s.running && !busy.has(s.id));
    // After a scale-down, the sandboxes of instance slots that are gone.
    if (pruneSurplus) await Promise.all(ready.slice(count).map((s) => engine.removeSandbox(s.id)));
    const free = ready.slice(0, count);
    if (free.length < count) {
      await this.deps.networks.ensure(network, appId, want.ipv6Subnet);
      const made = await Promise.all(
        Array.from({ length: count - free.length }, () =>
          engine.createSandbox({
            name: `pier-sandbox-${appId}-${randomUUID().slice(0, 8)}`,
            labels: { [LABEL.app]: appId, [LABEL.sandboxFor]: "instances" },
            network: { name: network, ipv6Subnet: want.ipv6Subnet },
            httpPort: want.httpPort,
            tcpPort: want.tcpPort,
          }),
        ),
      );
      free.push(...made);
    }
    return free;
  }

  /**
   * Makes the sandboxes of an app's next deploy ahead of it (at creation, and after a deploy retired the
   * previous instances): two per instance, so a deploy always finds the new instances' sandboxes ready.
   */
  prepare(
    appId: string,
    want: { httpPort: number | null; tcpPort: number | null; ipv6Subnet: string | null },
    instances: number,
  ): Promise<void> {
    return this.sandboxes(appId, want, instances, true).then(() => undefined);
  }

  /** Build sandboxes under way, per app. */
  private readonly buildSandboxes = new Map<string, Promise<string>>();

  /**
   * The sandbox an app's build containers join, made once: a build container then starts without network
   * set-up. It is on PIER_BUILD_NETWORK when set, else on the app's own network, so one tenant's build
   * never shares a network with another's. One build runs at a time per app. Returns the container id.
   */
  buildSandbox(appId: string, buildNetwork: string | null): Promise<string> {
    const network = buildNetwork ?? appNetworkName(appId, null);
    const run = (this.buildSandboxes.get(appId) ?? Promise.resolve(""))
      .catch(() => "")
      .then(async () => {
        const { engine } = this.deps;
        const all = await engine.listSandboxes({ [LABEL.app]: appId, [LABEL.sandboxFor]: "build" });
        const ready = all.find((s) => s.running && s.labels[LABEL.network] === network);
        await Promise.all(all.filter((s) => s !== ready).map((s) => engine.removeSandbox(s.id)));
        if (ready) return ready.id;
        if (!buildNetwork) await this.deps.networks.ensure(network, appId, null);
        const made = await engine.createSandbox({
          name: `pier-build-sandbox-${appId}-${randomUUID().slice(0, 8)}`,
          labels: { [LABEL.app]: appId, [LABEL.sandboxFor]: "build" },
          network: { name: network, ipv6Subnet: null },
          httpPort: null,
          tcpPort: null,
        });
        return made.id;
      });
    this.buildSandboxes.set(appId, run);
    const forget = () => {
      if (this.buildSandboxes.get(appId) === run) this.buildSandboxes.delete(appId);
    };
    run.then(forget, forget);
    return run;
  }

  /**
   * A sandbox started again (it stopped, or the engine restarted): instances that joined its earlier
   * network namespace have lost their network, and are restarted into the new one; stopped instances of
   * the current release are started.
   */
  async rejoin(appId: string, sandboxId: string): Promise<number> {
    const sandbox = await this.deps.engine.inspectInstance(sandboxId);
    if (!sandbox?.running || !sandbox.startedAt) return 0;
    const release = await this.deps.store.currentRelease(appId);
    const app = await this.deps.store.findApp(appId);
    if (!release || !app || app.stopped) return 0;
    const mine = (await this.list(appId)).filter(
      (i) => i.labels[LABEL.sandbox] === sandboxId && i.labels[LABEL.deployment] === release.deploymentId,
    );
    const stale = mine.filter(
      (i) => !i.running || (i.startedAt !== null && i.startedAt < sandbox.startedAt!),
    );
    await Promise.all(
      stale.map((i) =>
        i.running
          ? this.deps.engine.restartInstance(i.id, this.deps.stopGraceMs)
          : this.deps.engine.startInstance(i.id),
      ),
    );
    return stale.length;
  }

  /** Removes every sandbox of the app (it is deleted). */
  async removeSandboxes(appId: string): Promise<void> {
    await (this.preparing.get(appId) ?? Promise.resolve()).catch(() => undefined);
    await (this.buildSandboxes.get(appId) ?? Promise.resolve()).catch(() => undefined);
    const all = await this.deps.engine.listSandboxes({ [LABEL.app]: appId });
    await Promise.all(all.map((s) => this.deps.engine.removeSandbox(s.id)));
  }

  async start(r: ReleaseToRun, onLine: (line: string) => void): Promise<InstanceInfo[]> {
    const network = appNetworkName(r.appId, r.ipv6Subnet);
    // Web instances start in ready sandboxes (no network set-up on the critical path); tasks get their own.
    const sandboxes =
      r.restart && r.httpPort !== null
        ? await this.sandboxes(
            r.appId,
            { httpPort: r.httpPort, tcpPort: r.tcpPort, ipv6Subnet: r.ipv6Subnet },
            r.instances,
            false,
            true,
          )
        : null;
    const started: InstanceInfo[] = [];
    try {
      if (!sandboxes) await this.deps.networks.ensure(network, r.appId, r.ipv6Subnet);
      for (let n = 0; n < r.instances; n++) {
        const instanceId = randomUUID();
        const spec: InstanceSpec = {
          name: `pier-${r.appName}-${r.deploymentId.slice(-8)}-${n}`,
          image: r.image,
          env: { ...r.env, INSTANCE_NUMBER: String(n), INSTANCE_ID: instanceId },
          labels: {
            [LABEL.app]: r.appId,
            [LABEL.deployment]: r.deploymentId,
            [LABEL.instance]: String(n),
            [LABEL.instanceId]: instanceId,
            [LABEL.network]: network,
            // The edge redirects HTTP to HTTPS for the instances of a release with CC_FORCE_HTTPS=true.
            ...(r.env.CC_FORCE_HTTPS === "true" ? { [LABEL.forceHttps]: "true" } : {}),
          },
          cmd: r.cmd,
          httpPort: r.httpPort,
          tcpPort: r.tcpPort,
          memoryBytes: FLAVOR_MEMORY_MIB[r.flavor] * 2 ** 20,
          network: { name: network, ipv6Subnet: r.ipv6Subnet },
          mountDockerSocket: r.mountDockerSocket,
          restart: r.restart,
          sandbox: sandboxes?.[n] ?? null,
        };
        const info = await this.deps.engine.runInstance(spec);
        onLine(
          `Instance ${n} started (${info.name}${info.http ? `, ${info.http.host}:${info.http.port}` : ""})`,
        );
        started.push(info);
      }
    } catch (e) {
      await this.remove(started);
      throw e;
    } finally {
      // Running now (busy by their instances), or free again.
      for (const s of sandboxes ?? []) this.claimed.delete(s.id);
    }
    return started;
  }

  /** Removes the app's networks that no instance uses any more (after a change of IPv6 subnet). */
  async pruneNetworks(appId: string): Promise<void> {
    const inUse = new Set((await this.list(appId)).map((i) => i.labels[LABEL.network]));
    const keep = [...inUse][0];
    if (inUse.size <= 1) await this.deps.networks.remove(appId, keep);
  }

  /** Removes the app's networks and frees their subnets (it is deleted). */
  removeNetworks(appId: string): Promise<void> {
    return this.deps.networks.remove(appId);
  }

  /**
   * Stops the instances of a previous release (SIGTERM, then SIGKILL after the grace period) and keeps the
   * stopped containers until the next deploy, so their last output (a SIGTERM handler's) stays readable
   * with `pier logs`.
   */
  async retire(instances: readonly InstanceInfo[]): Promise<void> {
    await Promise.all(instances.map((i) => this.deps.engine.stopInstance(i.id, this.deps.stopGraceMs)));
  }

  async remove(instances: readonly { id: string }[]): Promise<void> {
    await Promise.all(instances.map((i) => this.deps.engine.removeInstance(i.id, this.deps.stopGraceMs)));
  }

  list(appId: string): Promise<InstanceInfo[]> {
    return this.deps.engine.listInstances({ [LABEL.app]: appId });
  }

  /** Instances of the app that belong to any deployment other than `keepDeploymentId`. */
  async others(appId: string, keepDeploymentId: string | null): Promise<InstanceInfo[]> {
    return (await this.list(appId)).filter((i) => i.labels[LABEL.deployment] !== keepDeploymentId);
  }

  /**
   * What the edge serves of an app while a change is under way and not yet recorded in the store: the
   * instances of a deployment (a deploy's switch), or nothing (stop, delete).
   */
  private readonly pending = new Map<string, { deploymentId: string | null }>();

  /** Routes the edge could not take at the last refresh, by app id (shown by `pier status`). */
  private skipped = new Map<string, string>();

  /** The last route table, by app: a deploy refreshes its own app's entry only. */
  private table: Map<string, Route> | null = null;

  private async routeOf(
    app: App,
    listed: readonly RoutableInstance[],
    aliases: Map<string, string[]>,
  ): Promise<Route> {
    const pending = this.pending.get(app.id);
    const serving = pending
      ? pending.deploymentId
      : app.stopped
        ? null
        : ((await this.deps.store.currentRelease(app.id))?.deploymentId ?? null);
    const mine = listed.filter(
      (i) => serving !== null && i.labels[LABEL.app] === app.id && i.labels[LABEL.deployment] === serving,
    );
    return {
      appId: app.id,
      hostname: `${app.name}.${this.deps.domain}`,
      targets: mine.flatMap((i) => (i.http ? [i.http] : [])),
      aliases: aliases.get(app.id) ?? [],
      forceHttps: mine.some((i) => i.labels[LABEL.forceHttps] === "true"),
    };
  }

  private aliases(): Promise<Map<string, string[]>> {
    return this.deps.aliases?.() ?? Promise.resolve(new Map());
  }

  /**
   * The route table: every app's hostname to the running instances of its current release (or of its
   * pending change). With `appId`, only that app's route is read again (one engine call for its
   * containers, not for every app's: a deploy at the 100th app costs what it did at the first); without,
   * all of them (one engine call).
   */
  async routes(appId?: string): Promise<Route[]> {
    const { engine, store } = this.deps;
    if (appId && this.table) {
      const app = await store.findApp(appId);
      if (!app || app.task) this.table.delete(appId);
      else
        this.table.set(
          appId,
          await this.routeOf(app, await engine.listRoutable({ [LABEL.app]: appId }), await this.aliases()),
        );
      return [...this.table.values()];
    }
    const byApp = new Map<string, RoutableInstance[]>();
    for (const i of await engine.listRoutable({})) {
      const id = i.labels[LABEL.app] ?? "";
      byApp.set(id, [...(byApp.get(id) ?? []), i]);
    }
    const table = new Map<string, Route>();
    const aliases = await this.aliases();
    for (const app of await store.listApps()) {
      if (!app.task) table.set(app.id, await this.routeOf(app, byApp.get(app.id) ?? [], aliases));
    }
    this.table = table;
    return [...table.values()];
  }

  /**
   * Makes the edge serve the route table; with `appId`, after reading only that app's route again. A
   * route the edge cannot take is skipped (see routeProblem), never fatal for the others.
   */
  async refreshEdge(appId?: string): Promise<void> {
    const { skipped } = await this.deps.edge.apply(await this.routes(appId));
    this.skipped = new Map(skipped.map((s) => [s.appId, s.reason]));
  }

  /** Why the edge does not route this app, or null. */
  routeProblem(appId: string): string | null {
    return this.skipped.get(appId) ?? null;
  }

  /**
   * Changes what the edge serves of an app, then records it: the edge first serves `serving` (a
   * deployment's instances, or null: nothing), then `record` writes the store. If either fails, the edge
   * goes back to what the store says and the error is thrown: nothing is recorded before it is done,
   * and a failed step leaves the app as it was. Other apps' route refreshes meanwhile keep this app's
   * pending view, so they never undo the switch half-way.
   */
  async transition(appId: string, serving: string | null, record: () => Promise<void>): Promise<void> {
    this.pending.set(appId, { deploymentId: serving });
    try {
      await this.refreshEdge(appId);
      const refused = serving !== null ? this.routeProblem(appId) : null;
      if (refused)
        throw new PierError(
          "EDGE_ERROR",
          `The edge cannot route this app: ${refused}.`,
          "Create an app with a valid name and deploy it there.",
        );
      await record();
    } catch (e) {
      this.pending.delete(appId);
      await this.refreshEdge(appId).catch(() => undefined);
      throw e;
    }
    this.pending.delete(appId);
  }
}
