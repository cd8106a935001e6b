// The instances of releases on one dockerd (the ReleaseInstances port of the Docker adapter, docker.ts):
// run one (in a prepared slot's network namespace, or on its own on its app's network), inspect, stop,
// start, restart, remove, list, wait, exec, and its log.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { instanceFilesystem } from "../../core/instance-fs.js";
import { LABEL, labelTarget, ROLE } from "../../core/labels.js";
import { INSTANCE_PIDS } from "../../core/limits.js";
import { cpuLimits } from "../../core/model.js";
import type {
  InstanceInfo,
  InstanceSpec,
  LogRange,
  ReleaseInstances,
  RoutableInstance,
} from "../../core/ports.js";
import type { DockerAddonServers } from "./docker-addons.js";
import {
  DROPPED_CAPABILITIES,
  freeLoopbackPort,
  infoOf,
  isNotFound,
  isSandbox,
  listedTarget,
  runExec,
  targetText,
} from "./docker-common.js";
import { type LogSink, logLines, noteLine, pumpLogs } from "./docker-logs.js";
import type { DockerSandboxes } from "./docker-sandboxes.js";
import type { DockerVolumes } from "./docker-volumes.js";
import type { SandboxInfo, SlotKeeper } from "./slot-keeper.js";

/**
 * Waits for an engine call on an instance that must exist: the engine's 404 becomes NOT_FOUND (and its
 * 409, an instance that does not run, CONFLICT), so that callers can tell an unknown id from a failure.
 */
async function onInstance<T>(id: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (isNotFound(e)) throw new PierError("NOT_FOUND", `There is no instance ${id} on the engine.`);
    if ((e as { statusCode?: number }).statusCode === 409)
      throw new PierError("CONFLICT", `The instance ${id} does not run: ${(e as Error).message}`);
    throw e;
  }
}

/**
 * A create request that carries `spec` in its body only. dockerode also copies a create's options into the
 * query string: an instance's variables went into the URL (percent-encoded, up to three times their size),
 * and the engine answered "431 Request Header Fields Too Large" once the URL passed 1 MiB (ADR 0022).
 * docker-modem sends `_query` as the query string and `_body` as the body when they are given.
 */
function bodyOnly(
  name: string,
  spec: Docker.ContainerCreateOptions,
): Docker.ContainerCreateOptions & { _query: { name: string }; _body: Docker.ContainerCreateOptions } {
  return { name, _query: { name }, _body: { ...spec, name } };
}

/** What the instances take from the rest of the adapter. */
export interface DockerInstanceDeps {
  /** The labels of Pier's objects in this scope. */
  own: Record<string, string>;
  /** The engine's label filters for Pier's objects with these labels. */
  filters: (labels: Record<string, string>) => string[];
  /** The mount of a release's volume (its `vendor/`, say). */
  volumes: Pick<DockerVolumes, "releaseMount">;
  /** The mounts of fs add-ons' buckets. */
  addons: Pick<DockerAddonServers, "bucketBinds">;
  /** Which prepared slot an instance starts in. */
  slots: Pick<SlotKeeper, "withSlot">;
  /** A slot's sandbox started before the instance in it. */
  sandboxes: Pick<DockerSandboxes, "startSandbox">;
  imageInfo(tag: string): Promise<{ id: string; labels: Record<string, string> } | null>;
  /** The engine host's CPU count. */
  cpus(): Promise<number>;
}

export class DockerInstances implements Omit<ReleaseInstances, "runLike"> {
  constructor(
    private readonly docker: Docker,
    private readonly deps: DockerInstanceDeps,
  ) {}

  /** The CPU limits of a flavor's memory. */
  private async cpuHostConfig(memoryBytes: number): Promise<{ NanoCpus: number; CpuShares: number }> {
    const { nanoCpus, cpuShares } = cpuLimits(memoryBytes, await this.deps.cpus());
    return { NanoCpus: nanoCpus, CpuShares: cpuShares };
  }

  async runInstance(s: InstanceSpec): Promise<InstanceInfo> {
    if (!s.slot) return this.runIn(s, null);
    const shape = { httpPort: s.httpPort, tcpPort: s.tcpPort, network: s.network };
    return this.deps.slots.withSlot(s.slot.appId, shape, (sandbox) => this.runIn(s, sandbox));
  }

  /** Creates and starts the instance, in `sandbox`'s network namespace or on its own on its network. */
  private async runIn(s: InstanceSpec, sandbox: SandboxInfo | null): Promise<InstanceInfo> {
    const ports: Record<string, { HostIp: string; HostPort: string }[]> = {};
    const exposed: Record<string, object> = {};
    // Its own role, over the one its image may carry (a committed build's, before ADR 0021).
    const labels: Record<string, string> = { ...s.labels, ...this.deps.own, [LABEL.role]: ROLE.instance };
    if (sandbox) {
      labels[LABEL.sandbox] = sandbox.id;
      labels[LABEL.httpTarget] = targetText(sandbox.http);
      labels[LABEL.tcpTarget] = targetText(sandbox.tcp);
      labels[LABEL.address] = sandbox.networkAddress ?? "";
      if (s.httpPort !== null) labels[LABEL.httpPort] = String(s.httpPort);
      if (s.tcpPort !== null) labels[LABEL.tcpPort] = String(s.tcpPort);
    } else if (s.httpPort !== null) {
      exposed[`${s.httpPort}/tcp`] = {};
      ports[`${s.httpPort}/tcp`] = [{ HostIp: "127.0.0.1", HostPort: String(await freeLoopbackPort()) }];
      labels[LABEL.httpPort] = String(s.httpPort);
    }
    if (!sandbox && s.tcpPort !== null && s.tcpPort !== s.httpPort) {
      exposed[`${s.tcpPort}/tcp`] = {};
      ports[`${s.tcpPort}/tcp`] = [{ HostIp: "0.0.0.0", HostPort: "" }];
      labels[LABEL.tcpPort] = String(s.tcpPort);
    }
    const imageLabels = (await this.deps.imageInfo(s.image))?.labels ?? {};
    const fs = instanceFilesystem(imageLabels, s.memoryBytes);
    const mounts = [
      ...(await this.deps.volumes.releaseMount(s.image, imageLabels, s.labels[LABEL.app], fs)),
      ...(await this.deps.addons.bucketBinds(s.buckets)),
    ];
    const container = await this.docker.createContainer(
      bodyOnly(s.name, {
        Image: s.image,
        // The engine's init (tini) sends SIGTERM to the whole process group: `npm start` does not pass it
        // on to the app, so without this an app's SIGTERM handler would never run.
        Env: Object.entries({ ...s.env, TINI_KILL_PROCESS_GROUP: "1" }).map(([k, v]) => `${k}=${v}`),
        Labels: labels,
        ExposedPorts: exposed,
        ...(s.cmd ? { Cmd: s.cmd } : {}),
        HostConfig: {
          PortBindings: ports,
          Memory: s.memoryBytes,
          MemorySwap: s.memoryBytes,
          ...(await this.cpuHostConfig(s.memoryBytes)),
          CapDrop: [...DROPPED_CAPABILITIES],
          PidsLimit: INSTANCE_PIDS,
          Init: true,
          RestartPolicy: s.restart ? { Name: "unless-stopped" } : { Name: "no" },
          NetworkMode: sandbox ? `container:${sandbox.id}` : s.network.name,
          SecurityOpt: ["no-new-privileges"],
          LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
          Binds: [...mounts, ...(s.mountDockerSocket ? ["/var/run/docker.sock:/var/run/docker.sock"] : [])],
          // The writable layer has no size bound on this storage (overlay2 on ext4): ADR 0023.
          ...(fs.readOnlyRoot ? { ReadonlyRootfs: true, Tmpfs: fs.tmpfs } : {}),
        },
      }),
    );
    try {
      await container.start();
    } catch (e) {
      await container.remove({ force: true }).catch(() => undefined);
      throw new PierError("ENGINE_ERROR", `The instance ${s.name} did not start: ${(e as Error).message}`);
    }
    const info = await this.inspectInstance(container.id);
    if (!info) throw new PierError("ENGINE_ERROR", `The instance ${s.name} vanished after start.`);
    return info;
  }

  async inspectInstance(id: string): Promise<InstanceInfo | null> {
    try {
      return infoOf(await this.docker.getContainer(id).inspect());
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async stopInstance(id: string, graceMs: number): Promise<void> {
    try {
      await this.docker.getContainer(id).stop({ t: Math.ceil(graceMs / 1000) });
    } catch (e) {
      const code = (e as { statusCode?: number }).statusCode;
      if (code !== 304 && code !== 404) throw e;
    }
  }

  async restartInstance(id: string, graceMs: number): Promise<void> {
    await onInstance(id, () => this.docker.getContainer(id).restart({ t: Math.ceil(graceMs / 1000) }));
  }

  async startInstance(id: string): Promise<void> {
    const c = await onInstance(id, () => this.docker.getContainer(id).inspect());
    if (c.State.Running) return;
    // An instance in a sandbox needs it running first (both restart with the engine, in no set order).
    const holder = c.Config.Labels?.[LABEL.sandbox];
    if (holder && c.Config.Labels?.[LABEL.role] === ROLE.instance)
      await this.deps.sandboxes.startSandbox(holder);
    try {
      await onInstance(id, () => this.docker.getContainer(id).start());
    } catch (e) {
      // Running already: nothing to do.
      if ((e as { statusCode?: number }).statusCode !== 304) throw e;
    }
  }

  async removeInstance(id: string, graceMs: number): Promise<void> {
    await this.stopInstance(id, graceMs);
    try {
      await this.docker.getContainer(id).remove({ force: true, v: true });
    } catch (e) {
      const code = (e as { statusCode?: number }).statusCode;
      if (code !== 404 && code !== 409) throw e;
    }
  }

  async listInstances(labels: Record<string, string>): Promise<InstanceInfo[]> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: this.deps.filters(labels) },
    });
    // One inspect per container, side by side (a deploy lists an app's instances on its critical path).
    const infos = await Promise.all(
      list.filter((c) => !isSandbox(c.Labels)).map((c) => this.inspectInstance(c.Id)),
    );
    return infos.filter((i): i is InstanceInfo => i !== null);
  }

  async listRoutable(labels: Record<string, string>): Promise<RoutableInstance[]> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: this.deps.filters(labels) },
    });
    return list
      .filter((c) => !isSandbox(c.Labels))
      .map((c) => {
        const own = c.Labels ?? {};
        return {
          id: c.Id,
          labels: own,
          running: c.State === "running",
          http:
            own[LABEL.sandbox] !== undefined
              ? labelTarget(own, LABEL.httpTarget)
              : listedTarget(c, own[LABEL.httpPort]),
        };
      });
  }

  async waitInstance(id: string, signal: AbortSignal): Promise<number> {
    const r = (await onInstance(id, () => this.docker.getContainer(id).wait({ abortSignal: signal }))) as {
      StatusCode: number;
    };
    return r.StatusCode;
  }

  async execInInstance(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    const ex = await onInstance(id, () =>
      this.docker.getContainer(id).exec({ Cmd: argv, AttachStdout: true, AttachStderr: true }),
    );
    return runExec(this.docker, ex, onLine);
  }

  async logs(id: string, opts: LogRange, onLine: LogSink, signal: AbortSignal): Promise<void> {
    const c = this.docker.getContainer(id);
    const base = {
      stdout: true,
      stderr: true,
      timestamps: true,
      ...(opts.since ? { since: Math.floor(opts.since.getTime() / 1000) } : {}),
      ...(opts.until ? { until: Math.ceil(opts.until.getTime() / 1000) } : {}),
      ...(opts.tail !== undefined ? { tail: opts.tail } : {}),
    };
    if (!opts.follow) {
      const buf = await onInstance(id, () => c.logs({ ...base, follow: false }));
      const notes: string[] = [];
      for (const l of logLines(buf, (n) => notes.push(n))) await onLine(l);
      for (const n of notes) await onLine(noteLine(n));
      return;
    }
    const stream = (await onInstance(id, () =>
      c.logs({ ...base, follow: true, abortSignal: signal }),
    )) as NodeJS.ReadableStream;
    await pumpLogs(stream, onLine, signal, (n) => void onLine(noteLine(n)));
  }
}
