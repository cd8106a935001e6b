import Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { instanceFilesystem } from "../../core/instance-fs.js";
import { LABEL, labelFilter, labelTarget, ROLE } from "../../core/labels.js";
import { INSTANCE_PIDS } from "../../core/limits.js";
import { LineReader } from "../../core/lines.js";
import { cpuLimits, releaseRepository } from "../../core/model.js";
import { DockerAddonServers } from "./docker-addons.js";
import {
  buildImage,
  buildInContainer,
  DROPPED_CAPABILITIES,
  engineCpus,
  imageExists,
  imageFromFiles,
  isNotFound,
  startBuildContainer,
} from "./docker-build.js";
import {
  freeLoopbackPort,
  infoOf,
  isSandbox,
  listedTarget,
  runExec,
  targetText,
  unlessGone,
} from "./docker-common.js";
import { type LogSink, logLines, noteLine, pumpLogs } from "./docker-logs.js";
import { DockerNetworks } from "./docker-networks.js";
import { DockerSandboxes } from "./docker-sandboxes.js";
import { DockerVolumes } from "./docker-volumes.js";
import { type SandboxInfo, SlotKeeper } from "./slot-keeper.js";

export { cleanBuildLine } from "./docker-build.js";

import type {
  AddonServerInfo,
  AddonServerSpec,
  BuildContainer,
  BuildSlot,
  ContainerBuild,
  Engine,
  EngineEvent,
  ImageBuild,
  InstanceInfo,
  InstanceSpec,
  LogRange,
  NetworkSubnets,
  PreparedBuild,
  ReleaseVolume,
  RoutableInstance,
  SlotShape,
} from "../../core/ports.js";

/** Every object Pier creates carries this label; Pier touches nothing without it. */
export const MANAGED_LABEL = LABEL.managed;

/** Which Pier installation (data dir) owns an object: two installations can share one engine. */
export const SCOPE_LABEL = LABEL.scope;

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

export class DockerEngine implements Engine {
  private readonly docker: Docker;
  /** The add-on servers' verbs (src/adapters/engine/docker-addons.ts), on the same client. */
  private readonly addons: DockerAddonServers;

  constructor(
    private readonly opts: {
      socketPath: string;
      scope: string;
      /** The image sandboxes run (`sleep infinity`): Pier's base image. */
      sandboxImage: string;
    },
  ) {
    this.docker = new Docker({ socketPath: opts.socketPath });
    this.addons = new DockerAddonServers(this.docker, opts.scope);
    this.sandboxes = new DockerSandboxes(this.docker, this, {
      own: this.ownLabels,
      filters: (labels) => this.labelFilters(labels),
      image: opts.sandboxImage,
    });
    this.slots = new SlotKeeper(this.sandboxes);
    this.volumes = new DockerVolumes(this.docker, this.ownLabels);
    this.networks = new DockerNetworks(this.docker, this.ownLabels);
  }

  /** Pier's volumes on this engine (docker-volumes.ts). */
  private readonly volumes: DockerVolumes;
  /** The app networks (docker-networks.ts). */
  private readonly networks: DockerNetworks;

  /** The containers that hold the network of instance slots and build slots. */
  private readonly sandboxes: DockerSandboxes;
  /** Which sandbox an instance or a build joins (the InstanceSlots port). */
  private readonly slots: SlotKeeper;

  private get ownLabels(): Record<string, string> {
    return { [MANAGED_LABEL]: "true", [SCOPE_LABEL]: this.opts.scope };
  }

  private labelFilters(labels: Record<string, string>): string[] {
    return labelFilter(this.ownLabels, labels);
  }

  async ping(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (e) {
      throw new PierError(
        "ENGINE_ERROR",
        `The Docker engine does not answer at ${this.opts.socketPath}: ${(e as Error).message}`,
        "Start dockerd (scripts/setup.sh does) or set PIER_DOCKER_SOCKET.",
      );
    }
  }

  async buildImage(b: ImageBuild, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
    return buildImage(this.docker, this.ownLabels, b, onLine, signal, await this.cpus());
  }

  /** A prepared build is a build container started ahead (its id): it waits on its stdin for the files. */
  async buildRelease(
    b: ContainerBuild,
    onLine: (line: string) => void,
    signal: AbortSignal,
    prepared?: PreparedBuild,
  ): Promise<void> {
    const cpus = await this.cpus();
    // A prepared build is in its sandbox already.
    const holder = prepared || !b.slot ? null : await this.slots.buildHolder(b.slot);
    return buildInContainer(this.docker, this.ownLabels, b, onLine, signal, cpus, holder, prepared?.ref);
  }

  async imageFromFiles(b: ContainerBuild): Promise<void> {
    return imageFromFiles(this.docker, this.ownLabels, b);
  }

  async prepareBuild(b: BuildContainer & { scriptPath: string }): Promise<PreparedBuild> {
    const holder = b.slot ? await this.slots.buildHolder(b.slot) : null;
    return { ref: await startBuildContainer(this.docker, this.ownLabels, b, await this.cpus(), holder) };
  }

  async preparedBuildAlive(prepared: PreparedBuild): Promise<boolean> {
    try {
      const c = await this.docker.getContainer(prepared.ref).inspect();
      if (!c.State.Running || c.Config.Labels?.[LABEL.role] !== ROLE.build) return false;
      // Its network is its sandbox's: one that stopped (an engine restart) left it without one.
      const holder = c.Config.Labels[LABEL.sandbox];
      return !holder || (await this.sandboxes.sandboxState(holder))?.running === true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }

  async discardPreparedBuild(prepared: PreparedBuild): Promise<void> {
    await unlessGone(this.docker.getContainer(prepared.ref).remove({ force: true }));
  }

  /** Every instance runs on this dockerd, beside its volumes. */
  readonly instancesShareVolumes = true;

  dropDependencyCache(appId: string): Promise<void> {
    return this.volumes.dropDependencyCache(appId);
  }

  releaseVolumes(appId: string): Promise<ReleaseVolume[]> {
    return this.volumes.releaseVolumes(appId);
  }

  removeReleaseVolume(name: string): Promise<boolean> {
    return this.volumes.removeReleaseVolume(name);
  }

  removeAppVolumes(appId: string): Promise<void> {
    return this.volumes.removeAppVolumes(appId);
  }

  imageExists(tag: string): Promise<boolean> {
    return imageExists(this.docker, tag);
  }

  async imageInfo(tag: string): Promise<{ id: string; labels: Record<string, string> } | null> {
    try {
      const i = await this.docker.getImage(tag).inspect();
      return { id: i.Id, labels: i.Config?.Labels ?? {} };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async releaseImages(appId: string): Promise<string[]> {
    const repo = releaseRepository(appId);
    const images = await this.docker.listImages({ filters: { reference: [repo] } });
    return images.flatMap((i) => i.RepoTags ?? []).filter((t) => t.startsWith(`${repo}:`));
  }

  async removeImage(tag: string): Promise<void> {
    await unlessGone(this.docker.getImage(tag).remove({ force: true }));
  }

  networkExists(name: string): Promise<boolean> {
    return this.networks.networkExists(name);
  }

  networksWithSubnets(): Promise<NetworkSubnets[]> {
    return this.networks.networksWithSubnets();
  }

  ensureNetwork(
    name: string,
    labels: Record<string, string>,
    subnets: { ipv4: string | null; ipv6: string | null },
  ): Promise<void> {
    return this.networks.ensureNetwork(name, labels, subnets);
  }

  removeNetworks(labels: Record<string, string>, keep?: string): Promise<string[]> {
    return this.networks.removeNetworks(labels, keep);
  }

  /** The engine host's CPU count (asked once): flavors' CPU shares are capped at it. */
  private readonly cpus = engineCpus(() => this.docker);

  /** The CPU limits of a flavor's memory. */
  private async cpuHostConfig(memoryBytes: number): Promise<{ NanoCpus: number; CpuShares: number }> {
    const { nanoCpus, cpuShares } = cpuLimits(memoryBytes, await this.cpus());
    return { NanoCpus: nanoCpus, CpuShares: cpuShares };
  }

  async runInstance(s: InstanceSpec): Promise<InstanceInfo> {
    if (!s.slot) return this.runIn(s, null);
    const shape = { httpPort: s.httpPort, tcpPort: s.tcpPort, network: s.network };
    return this.slots.withSlot(s.slot.appId, shape, (sandbox) => this.runIn(s, sandbox));
  }

  /** Creates and starts the instance, in `sandbox`'s network namespace or on its own on its network. */
  private async runIn(s: InstanceSpec, sandbox: SandboxInfo | null): Promise<InstanceInfo> {
    const ports: Record<string, { HostIp: string; HostPort: string }[]> = {};
    const exposed: Record<string, object> = {};
    // Its own role, over the one its image may carry (a committed build's, before ADR 0021).
    const labels: Record<string, string> = { ...s.labels, ...this.ownLabels, [LABEL.role]: ROLE.instance };
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
    const imageLabels = (await this.imageInfo(s.image))?.labels ?? {};
    const fs = instanceFilesystem(imageLabels, s.memoryBytes);
    const mounts = [
      ...(await this.volumes.releaseMount(s.image, imageLabels, s.labels[LABEL.app], fs)),
      ...(await this.addons.bucketBinds(s.buckets)),
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

  // Instance slots: the choice is the SlotKeeper's, the sandboxes DockerSandboxes'.

  prepareSlots(appId: string, shape: SlotShape, count: number): Promise<void> {
    return this.slots.prepare(appId, shape, count);
  }

  async prepareBuildSlot(slot: BuildSlot): Promise<void> {
    await this.slots.buildHolder(slot);
  }

  rejoinSlots(
    serving: ReadonlyMap<string, string>,
    opts: { graceMs: number; slot?: string },
  ): Promise<Map<string, number>> {
    return this.slots.rejoin(serving, opts);
  }

  removeSlots(appId: string): Promise<void> {
    return this.slots.removeAll(appId);
  }

  removeStraySlots(known: ReadonlySet<string>): Promise<void> {
    return this.slots.removeStrays(known);
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
    if (holder && c.Config.Labels?.[LABEL.role] === ROLE.instance) await this.sandboxes.startSandbox(holder);
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
      filters: { label: this.labelFilters(labels) },
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
      filters: { label: this.labelFilters(labels) },
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

  async ownerAppIds(): Promise<Set<string>> {
    const filters = { label: this.labelFilters({}) };
    // Images carry no scope label (another Pier on this engine has pier-app/ images too): not listed.
    const [nets, vols] = await Promise.all([
      this.docker.listNetworks({ filters }),
      this.docker.listVolumes({ filters }),
    ]);
    const ids = new Set<string>();
    for (const o of [...nets, ...(vols.Volumes ?? [])]) {
      const id = o.Labels?.[LABEL.app];
      if (id) ids.add(id);
    }
    return ids;
  }

  async events(onEvent: (e: EngineEvent) => void, signal: AbortSignal): Promise<void> {
    const stream = (await this.docker.getEvents({
      filters: { type: ["container"], event: ["die", "start"], label: this.labelFilters({}) },
      abortSignal: signal,
    })) as NodeJS.ReadableStream;
    const reader = new LineReader();
    stream.on("data", (c: Buffer) => {
      for (const l of reader.push(c)) {
        if (!l.trim()) continue;
        try {
          const ev = JSON.parse(l) as {
            Action: string;
            id: string;
            time: number;
            Actor: { Attributes: Record<string, string> };
          };
          const attrs = ev.Actor.Attributes;
          onEvent({
            type: ev.Action === "die" ? "die" : "start",
            containerId: ev.id,
            slot: isSandbox(attrs),
            labels: attrs,
            exitCode: attrs.exitCode !== undefined ? Number(attrs.exitCode) : null,
            at: new Date(ev.time * 1000).toISOString(),
          });
        } catch {
          // A partial or unknown event: ignore it.
        }
      }
    });
    await new Promise<void>((resolve) => {
      stream.on("end", () => resolve());
      stream.on("error", () => resolve());
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  // Add-on servers (AddonServers): src/adapters/engine/docker-addons.ts.

  addonNode(requested: string | null): Promise<string | null> {
    return this.addons.addonNode(requested);
  }

  runAddonServer(spec: AddonServerSpec): Promise<void> {
    return this.addons.runAddonServer(spec);
  }

  addonServer(id: string): Promise<AddonServerInfo | null> {
    return this.addons.addonServer(id);
  }

  restartAddonServer(id: string, graceMs: number): Promise<void> {
    return this.addons.restartAddonServer(id, graceMs);
  }

  removeAddonServer(id: string): Promise<void> {
    return this.addons.removeAddonServer(id);
  }

  connectAddonServer(id: string, network: string): Promise<void> {
    return this.addons.connectAddonServer(id, network);
  }

  disconnectAddonServer(id: string, network: string): Promise<void> {
    return this.addons.disconnectAddonServer(id, network);
  }

  execInAddonServer(
    id: string,
    argv: string[],
    stdout?: NodeJS.WritableStream,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return this.addons.execInAddonServer(id, argv, stdout);
  }

  copyToAddonServer(id: string, file: string, path: string): Promise<void> {
    return this.addons.copyToAddonServer(id, file, path);
  }

  addonServerLog(id: string, tail: number): Promise<string[]> {
    return this.addons.addonServerLog(id, tail);
  }
}
