import Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL, labelFilter, ROLE } from "../../core/labels.js";
import { LineReader } from "../../core/lines.js";
import { releaseRepository } from "../../core/model.js";
import { DockerAddonServers } from "./docker-addons.js";
import { buildInContainer, imageExists, imageFromFiles, startBuildContainer } from "./docker-build.js";
import { engineCpus, isNotFound, isSandbox, unlessGone } from "./docker-common.js";
import { buildImage } from "./docker-image-build.js";
import { DockerInstances } from "./docker-instances.js";
import type { LogSink } from "./docker-logs.js";
import { DockerNetworks } from "./docker-networks.js";
import { DockerSandboxes } from "./docker-sandboxes.js";
import { DockerVolumes } from "./docker-volumes.js";
import { SlotKeeper } from "./slot-keeper.js";

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
    this.instances = new DockerInstances(this.docker, {
      own: this.ownLabels,
      filters: (labels) => this.labelFilters(labels),
      volumes: this.volumes,
      addons: this.addons,
      slots: this.slots,
      sandboxes: this.sandboxes,
      imageInfo: (tag) => this.imageInfo(tag),
      cpus: () => this.cpus(),
    });
  }

  /** The instances of releases (docker-instances.ts). */
  private readonly instances: DockerInstances;

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

  // Instances (ReleaseInstances): src/adapters/engine/docker-instances.ts.

  runInstance(s: InstanceSpec): Promise<InstanceInfo> {
    return this.instances.runInstance(s);
  }

  inspectInstance(id: string): Promise<InstanceInfo | null> {
    return this.instances.inspectInstance(id);
  }

  stopInstance(id: string, graceMs: number): Promise<void> {
    return this.instances.stopInstance(id, graceMs);
  }

  restartInstance(id: string, graceMs: number): Promise<void> {
    return this.instances.restartInstance(id, graceMs);
  }

  startInstance(id: string): Promise<void> {
    return this.instances.startInstance(id);
  }

  removeInstance(id: string, graceMs: number): Promise<void> {
    return this.instances.removeInstance(id, graceMs);
  }

  listInstances(labels: Record<string, string>): Promise<InstanceInfo[]> {
    return this.instances.listInstances(labels);
  }

  listRoutable(labels: Record<string, string>): Promise<RoutableInstance[]> {
    return this.instances.listRoutable(labels);
  }

  waitInstance(id: string, signal: AbortSignal): Promise<number> {
    return this.instances.waitInstance(id, signal);
  }

  execInInstance(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    return this.instances.execInInstance(id, argv, onLine);
  }

  logs(id: string, opts: LogRange, onLine: LogSink, signal: AbortSignal): Promise<void> {
    return this.instances.logs(id, opts, onLine, signal);
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
