// The network holders of Docker's instance slots and build slots: a sandbox is a container that runs
// `sleep infinity` on an app's network with the app's ports published; an instance, or a build container,
// joins its network namespace (`container:<id>`), so its start skips the engine's network set-up. Which
// sandbox an instance gets is the SlotKeeper's (slot-keeper.ts).
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import type { InstanceInfo, ReleaseInstances } from "../../core/ports.js";
import {
  DROPPED_CAPABILITIES,
  freeLoopbackPort,
  infoOf,
  isNotFound,
  listedTarget,
  ROLE_SANDBOX,
  unlessGone,
} from "./docker-common.js";
import type { SandboxInfo, SandboxSpec, SlotHolders } from "./slot-keeper.js";

export class DockerSandboxes implements SlotHolders {
  constructor(
    private readonly docker: Docker,
    private readonly instances: Pick<ReleaseInstances, "listInstances" | "startInstance" | "restartInstance">,
    private readonly opts: {
      /** The labels of Pier's objects in this scope. */
      own: Record<string, string>;
      /** The engine's label filters for Pier's objects with these labels. */
      filters: (labels: Record<string, string>) => string[];
      /** The image sandboxes run (`sleep infinity`): Pier's base image. */
      image: string;
    },
  ) {}

  async createSandbox(s: SandboxSpec): Promise<SandboxInfo> {
    const ports: Record<string, { HostIp: string; HostPort: string }[]> = {};
    const exposed: Record<string, object> = {};
    const labels: Record<string, string> = {
      ...s.labels,
      ...this.opts.own,
      [LABEL.role]: ROLE_SANDBOX,
      [LABEL.network]: s.network.name,
      [LABEL.httpPort]: s.httpPort === null ? "" : String(s.httpPort),
      [LABEL.tcpPort]: s.tcpPort === null ? "" : String(s.tcpPort),
    };
    if (s.httpPort !== null) {
      exposed[`${s.httpPort}/tcp`] = {};
      ports[`${s.httpPort}/tcp`] = [{ HostIp: "127.0.0.1", HostPort: String(await freeLoopbackPort()) }];
    }
    if (s.tcpPort !== null && s.tcpPort !== s.httpPort) {
      exposed[`${s.tcpPort}/tcp`] = {};
      ports[`${s.tcpPort}/tcp`] = [{ HostIp: "0.0.0.0", HostPort: "" }];
    }
    const container = await this.docker.createContainer({
      name: s.name,
      Image: this.opts.image,
      Cmd: ["sleep", "infinity"],
      Labels: labels,
      ExposedPorts: exposed,
      HostConfig: {
        PortBindings: ports,
        Memory: 32 * 2 ** 20,
        MemorySwap: 32 * 2 ** 20,
        PidsLimit: 8,
        CapDrop: [...DROPPED_CAPABILITIES],
        Init: true,
        RestartPolicy: { Name: "unless-stopped" },
        NetworkMode: s.network.name,
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
      },
    });
    try {
      await container.start();
    } catch (e) {
      await container.remove({ force: true }).catch(() => undefined);
      throw new PierError("ENGINE_ERROR", `The sandbox ${s.name} did not start: ${(e as Error).message}`);
    }
    const c = await container.inspect();
    const info = infoOf(c);
    return {
      id: c.Id,
      labels,
      running: c.State.Running,
      http: info.http,
      tcp: info.tcp,
      networkAddress: info.networkAddress,
    };
  }

  async listSandboxes(labels: Record<string, string>): Promise<SandboxInfo[]> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: this.opts.filters({ ...labels, [LABEL.role]: ROLE_SANDBOX }) },
    });
    return list.map((c) => ({
      id: c.Id,
      labels: c.Labels ?? {},
      running: c.State === "running",
      http: listedTarget(c, c.Labels?.[LABEL.httpPort]),
      tcp: listedTarget(c, c.Labels?.[LABEL.tcpPort]),
      networkAddress:
        Object.values(c.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress ?? null,
    }));
  }

  async removeSandbox(id: string): Promise<void> {
    await unlessGone(this.docker.getContainer(id).remove({ force: true }));
  }

  async sandboxState(id: string): Promise<{ running: boolean; startedAt: string | null } | null> {
    try {
      return infoOf(await this.docker.getContainer(id).inspect());
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Starts a sandbox that stopped (an instance in it cannot start before it). Running or gone: nothing to do. */
  async startSandbox(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).start();
    } catch (e) {
      const code = (e as { statusCode?: number }).statusCode;
      if (code !== 304 && code !== 404) throw e;
    }
  }

  listInstances(labels: Record<string, string>): Promise<InstanceInfo[]> {
    return this.instances.listInstances(labels);
  }

  startInstance(id: string): Promise<void> {
    return this.instances.startInstance(id);
  }

  restartInstance(id: string, graceMs: number): Promise<void> {
    return this.instances.restartInstance(id, graceMs);
  }
}
