import { randomUUID } from "node:crypto";
import type { BucketMount } from "../core/buckets.js";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import { type App, FLAVOR_MEMORY_MIB } from "../core/model.js";
import type {
  BuildSlot,
  Edge,
  InstanceInfo,
  InstanceSlots,
  InstanceSpec,
  ReleaseInstances,
  RoutableInstance,
  Route,
  Store,
} from "../core/ports.js";
import type { Networks } from "./networks.js";

/**
 * Runs `start` on each item, all together: a swarm's starts each wait on its scheduler and a node (ADR
 * 0030), and one dockerd creates and starts containers side by side too (three in ready slots: ~0.17 s
 * together, ~0.28 s one after the other; bench/RESULTS.md, session 28). A failure is thrown once every
 * start under way has ended. The results are in the items' order.
 */
export async function startEach<T, R>(items: readonly T[], start: (item: T) => Promise<R>): Promise<R[]> {
  const all = await Promise.allSettled(items.map(start));
  const failed = all.find((x) => x.status === "rejected");
  if (failed) throw failed.reason;
  return all.flatMap((x) => (x.status === "fulfilled" ? [x.value] : []));
}

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
  /** The fs add-ons every instance mounts (CC_FS_BUCKET, core/buckets.ts). */
  buckets: readonly BucketMount[];
}

/** Starts, lists and retires the instances of releases, and keeps the edge's routes in step with them. */
export class Instances {
  constructor(
    private readonly deps: {
      engine: ReleaseInstances & InstanceSlots;
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

  /**
   * Keeps the instance slots of an app's next deploy ready ahead of it (at creation, and after a deploy
   * retired the previous instances): two per instance, so a deploy always finds the new instances' slots
   * ready (the engine makes missing ones, and removes those of other ports and the surplus after a
   * scale-down).
   */
  async prepare(
    appId: string,
    want: { httpPort: number | null; tcpPort: number | null; ipv6Subnet: string | null },
    instances: number,
  ): Promise<void> {
    const network = appNetworkName(appId, want.ipv6Subnet);
    await this.deps.networks.ensure(network, appId, want.ipv6Subnet);
    await this.deps.engine.prepareSlots(
      appId,
      {
        httpPort: want.httpPort,
        tcpPort: want.tcpPort,
        network: { name: network, ipv6Subnet: want.ipv6Subnet },
      },
      instances,
    );
  }

  /**
   * Where the app's builds run: on PIER_BUILD_NETWORK when set, else on the app's own network (made here),
   * so one tenant's build never shares a network with another's.
   */
  async buildSlot(appId: string, buildNetwork: string | null): Promise<BuildSlot> {
    const network = buildNetwork ?? appNetworkName(appId, null);
    if (!buildNetwork) await this.deps.networks.ensure(network, appId, null);
    return { appId, network };
  }

  /** Makes the app's build slot ready ahead of its first build (at creation). */
  async prepareBuildSlot(appId: string, buildNetwork: string | null): Promise<void> {
    await this.deps.engine.prepareBuildSlot(await this.buildSlot(appId, buildNetwork));
  }

  /** What each app serves now (its current release's deployment), for the apps that run. */
  private async serving(apps: readonly (App | null)[]): Promise<Map<string, string>> {
    const serving = new Map<string, string>();
    for (const app of apps) {
      const release = app && !app.stopped ? await this.deps.store.currentRelease(app.id) : null;
      if (app && release) serving.set(app.id, release.deploymentId);
    }
    return serving;
  }

  /**
   * A slot of the app started again (it stopped, or the engine restarted; `slot` is its engine event's
   * id): instances of the current release that joined its earlier network have lost it, and are restarted
   * into the new one; stopped ones are started. How many.
   */
  async rejoin(appId: string, slot: string): Promise<number> {
    const serving = await this.serving([await this.deps.store.findApp(appId)]);
    if (serving.size === 0) return 0;
    const n = await this.deps.engine.rejoinSlots(serving, { graceMs: this.deps.stopGraceMs, slot });
    return n.get(appId) ?? 0;
  }

  /** After the engine's return: every app's slots, as `rejoin` does for one (one engine list for all). */
  async rejoinAll(): Promise<Map<string, number>> {
    const serving = await this.serving(await this.deps.store.listApps());
    if (serving.size === 0) return new Map();
    return this.deps.engine.rejoinSlots(serving, { graceMs: this.deps.stopGraceMs });
  }

  /** Removes every slot of the app (it is deleted). */
  removeSlots(appId: string): Promise<void> {
    return this.deps.engine.removeSlots(appId);
  }

  /**
   * Starts the release's instances, all together (`startEach`). A failed start removes those that started,
   * and fails it.
   */
  async start(r: ReleaseToRun, onLine: (line: string) => void): Promise<InstanceInfo[]> {
    const network = appNetworkName(r.appId, r.ipv6Subnet);
    const started: InstanceInfo[] = [];
    const run = async (n: number): Promise<InstanceInfo> => {
      const info = await this.deps.engine.runInstance(instanceSpec(r, n, network));
      onLine(
        `Instance ${n} started (${info.name}${info.http ? `, ${info.http.host}:${info.http.port}` : ""})`,
      );
      started.push(info);
      return info;
    };
    try {
      await this.deps.networks.ensure(network, r.appId, r.ipv6Subnet);
      return await startEach(
        Array.from({ length: r.instances }, (_, n) => n),
        run,
      );
    } catch (e) {
      await this.remove(started);
      throw e;
    }
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

/** Instance `n` of a release, on its network. Web instances start in ready slots; tasks get their own. */
function instanceSpec(r: ReleaseToRun, n: number, network: string): InstanceSpec {
  const instanceId = randomUUID();
  return {
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
    slot: r.restart && r.httpPort !== null ? { appId: r.appId } : null,
    buckets: r.buckets,
  };
}
