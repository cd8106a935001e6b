import { randomUUID } from "node:crypto";
import { type App, FLAVOR_MEMORY_MIB } from "../core/model.js";
import type { Edge, Engine, InstanceInfo, InstanceSpec, Route, Store } from "../core/ports.js";

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
      engine: Engine;
      edge: Edge;
      store: Store;
      domain: string;
      stopGraceMs: number;
    },
  ) {}

  async start(r: ReleaseToRun, onLine: (line: string) => void): Promise<InstanceInfo[]> {
    const network = appNetworkName(r.appId, r.ipv6Subnet);
    await this.deps.engine.ensureNetwork(network, { "pier.app": r.appId }, r.ipv6Subnet);
    const started: InstanceInfo[] = [];
    try {
      for (let n = 0; n < r.instances; n++) {
        const instanceId = randomUUID();
        const spec: InstanceSpec = {
          name: `pier-${r.appName}-${r.deploymentId.slice(-8)}-${n}`,
          image: r.image,
          env: { ...r.env, INSTANCE_NUMBER: String(n), INSTANCE_ID: instanceId },
          labels: {
            "pier.app": r.appId,
            "pier.deployment": r.deploymentId,
            "pier.instance": String(n),
            "pier.instance-id": instanceId,
            "pier.network": network,
          },
          cmd: r.cmd,
          httpPort: r.httpPort,
          tcpPort: r.tcpPort,
          memoryBytes: FLAVOR_MEMORY_MIB[r.flavor] * 2 ** 20,
          network: { name: network, ipv6Subnet: r.ipv6Subnet },
          mountDockerSocket: r.mountDockerSocket,
          restart: r.restart,
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
    }
    return started;
  }

  /** Removes the app's networks that no instance uses any more (after a change of IPv6 subnet). */
  async pruneNetworks(appId: string): Promise<void> {
    const inUse = new Set((await this.list(appId)).map((i) => i.labels["pier.network"]));
    const keep = [...inUse][0];
    if (inUse.size <= 1) await this.deps.engine.removeNetworks({ "pier.app": appId }, keep);
  }

  /**
   * Stops the instances of a previous release (SIGTERM, then SIGKILL after the grace period) and keeps the
   * stopped containers until the next deploy, so their last output (a SIGTERM handler's) stays readable
   * with `pier logs`.
   */
  async retire(instances: readonly InstanceInfo[]): Promise<void> {
    await Promise.all(instances.map((i) => this.deps.engine.stopInstance(i.id, this.deps.stopGraceMs)));
  }

  async remove(instances: readonly InstanceInfo[]): Promise<void> {
    await Promise.all(instances.map((i) => this.deps.engine.removeInstance(i.id, this.deps.stopGraceMs)));
  }

  list(appId: string): Promise<InstanceInfo[]> {
    return this.deps.engine.listInstances({ "pier.app": appId });
  }

  /** Instances of the app that belong to any deployment other than `keepDeploymentId`. */
  async others(appId: string, keepDeploymentId: string | null): Promise<InstanceInfo[]> {
    return (await this.list(appId)).filter((i) => i.labels["pier.deployment"] !== keepDeploymentId);
  }

  /** The route table: every app's hostname to the running instances of its current release. */
  async routes(): Promise<Route[]> {
    const routes: Route[] = [];
    // One engine call for every app's instances: a deploy refreshes the edge on its critical path.
    const all = await this.deps.engine.listRoutable({});
    for (const app of await this.deps.store.listApps()) {
      if (app.task) continue;
      const release = await this.deps.store.currentRelease(app.id);
      const serving =
        release && !app.stopped
          ? all.filter(
              (i) =>
                i.labels["pier.app"] === app.id &&
                i.labels["pier.deployment"] === release.deploymentId &&
                i.http,
            )
          : [];
      routes.push({
        appId: app.id,
        hostname: `${app.name}.${this.deps.domain}`,
        targets: serving.flatMap((i) => (i.http ? [i.http] : [])),
      });
    }
    return routes;
  }

  async refreshEdge(): Promise<void> {
    await this.deps.edge.apply(await this.routes());
  }
}
