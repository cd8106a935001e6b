// The Engine of `PIER_ENGINE=swarm` (ADR 0030): one object over two drivers. Builds, release images, the
// apps' volumes, the build slot and builds' events stay on the manager's own dockerd (the Docker adapter);
// add-ons on the node each is pinned to (swarm-addons.ts); instances run as swarm services (their events
// from the swarm's task list), apps' networks are overlays, and instance slots are nothing to keep (the Swarm
// driver). Which port goes where is decided here and nowhere else.

import { LABEL } from "../../core/labels.js";
import type {
  AddonServerSpec,
  AddonServers,
  AppNetworks,
  BuildSlot,
  ContainerBuild,
  Engine,
  EngineEvent,
  EngineEvents,
  ImageBuild,
  InstanceInfo,
  InstanceLogLine,
  InstanceSlots,
  InstanceSpec,
  LogRange,
  PreparedBuild,
  ReleaseInstances,
  SlotShape,
} from "../../core/ports.js";

/** What the swarm side answers (the Swarm driver, swarm.ts): instances, their networks, no slots. */
export type InstanceDriver = AppNetworks &
  InstanceSlots &
  ReleaseInstances &
  Pick<EngineEvents, "ping" | "ownerAppIds" | "events">;

/** The edge's sandbox on the manager (edge-sandbox.ts): it joins each app's overlay before it is routed. */
export interface OverlayMember {
  join(network: string): Promise<void>;
  leave(labels: Record<string, string>, keep?: string): Promise<void>;
}

/** The label the swarm puts on a task's container (its events are the swarm side's, by service). */
const SWARM_TASK_LABEL = "com.docker.swarm.task.id";

export class SwarmComposite implements Engine {
  constructor(
    /** The manager's own dockerd (the Docker adapter): builds, images, volumes, add-ons, events. */
    private readonly manager: Engine,
    private readonly swarm: InstanceDriver,
    private readonly edge?: OverlayMember,
    /** Add-on servers pinned to nodes (swarm-addons.ts); absent: the manager's dockerd. */
    addons?: AddonServers,
  ) {
    this.addons = addons ?? manager;
  }

  private readonly addons: AddonServers;

  // ReleaseImages, AppVolumes: the manager's dockerd (builds run there, ADR 0030).
  buildImage(build: ImageBuild, onLine: (line: string) => void, signal: AbortSignal) {
    return this.manager.buildImage(build, onLine, signal);
  }
  buildRelease(build: ContainerBuild, onLine: (l: string) => void, signal: AbortSignal, p?: PreparedBuild) {
    return this.manager.buildRelease(build, onLine, signal, p);
  }
  prepareBuild(build: Parameters<Engine["prepareBuild"]>[0]) {
    return this.manager.prepareBuild(build);
  }
  preparedBuildAlive(prepared: PreparedBuild) {
    return this.manager.preparedBuildAlive(prepared);
  }
  discardPreparedBuild(prepared: PreparedBuild) {
    return this.manager.discardPreparedBuild(prepared);
  }
  imageFromFiles(build: ContainerBuild) {
    return this.manager.imageFromFiles(build);
  }
  imageExists(tag: string) {
    return this.manager.imageExists(tag);
  }
  imageInfo(tag: string) {
    return this.manager.imageInfo(tag);
  }
  removeImage(tag: string) {
    return this.manager.removeImage(tag);
  }
  releaseImages(appId: string) {
    return this.manager.releaseImages(appId);
  }
  /** Volumes are made on the manager, instances run on any node: a release keeps its files in its image. */
  readonly instancesShareVolumes = false;
  dropDependencyCache(appId: string) {
    return this.manager.dropDependencyCache(appId);
  }
  releaseVolumes(appId: string) {
    return this.manager.releaseVolumes(appId);
  }
  removeReleaseVolume(name: string) {
    return this.manager.removeReleaseVolume(name);
  }
  removeAppVolumes(appId: string) {
    return this.manager.removeAppVolumes(appId);
  }

  // AddonServers: on their nodes (swarm-addons.ts), or the manager's dockerd.
  addonNode(requested: string | null) {
    return this.addons.addonNode(requested);
  }
  runAddonServer(spec: AddonServerSpec) {
    return this.addons.runAddonServer(spec);
  }
  addonServer(id: string) {
    return this.addons.addonServer(id);
  }
  restartAddonServer(id: string, graceMs: number) {
    return this.addons.restartAddonServer(id, graceMs);
  }
  removeAddonServer(id: string) {
    return this.addons.removeAddonServer(id);
  }
  connectAddonServer(id: string, network: string) {
    return this.addons.connectAddonServer(id, network);
  }
  disconnectAddonServer(id: string, network: string) {
    return this.addons.disconnectAddonServer(id, network);
  }
  execInAddonServer(id: string, argv: string[], stdout?: NodeJS.WritableStream) {
    return this.addons.execInAddonServer(id, argv, stdout);
  }
  copyToAddonServer(id: string, file: string, path: string) {
    return this.addons.copyToAddonServer(id, file, path);
  }
  addonServerLog(id: string, tail: number) {
    return this.addons.addonServerLog(id, tail);
  }

  // AppNetworks: overlays, which the manager's build containers join too (they are attachable).
  networkExists(name: string) {
    return this.swarm.networkExists(name);
  }
  networksWithSubnets() {
    return this.swarm.networksWithSubnets();
  }
  async ensureNetwork(
    name: string,
    labels: Record<string, string>,
    subnets: Parameters<Engine["ensureNetwork"]>[2],
  ) {
    await this.swarm.ensureNetwork(name, labels, subnets);
    // An app's overlay, not an add-on's: the edge routes to apps only, and has no business near a database.
    if (labels[LABEL.app]) await this.edge?.join(name);
  }
  /** The edge leaves them first: a network an endpoint is still on is not removed. */
  async removeNetworks(labels: Record<string, string>, keep?: string) {
    await this.edge?.leave(labels, keep);
    return this.swarm.removeNetworks(labels, keep);
  }

  // InstanceSlots: none for instances (the swarm driver's no-ops); the build slot is the manager's.
  prepareSlots(appId: string, shape: SlotShape, count: number) {
    return this.swarm.prepareSlots(appId, shape, count);
  }
  prepareBuildSlot(slot: BuildSlot) {
    return this.manager.prepareBuildSlot(slot);
  }
  rejoinSlots(serving: ReadonlyMap<string, string>, opts: { graceMs: number; slot?: string }) {
    return this.swarm.rejoinSlots(serving, opts);
  }
  /** The app's build slot goes (the manager's); instances had no slots. */
  removeSlots(appId: string) {
    return this.manager.removeSlots(appId);
  }
  removeStraySlots(known: ReadonlySet<string>) {
    return this.manager.removeStraySlots(known);
  }

  // ReleaseInstances: services on the swarm.
  runInstance(spec: InstanceSpec): Promise<InstanceInfo> {
    return this.swarm.runInstance(spec);
  }
  inspectInstance(id: string) {
    return this.swarm.inspectInstance(id);
  }
  removeInstance(id: string, graceMs: number) {
    return this.swarm.removeInstance(id, graceMs);
  }
  stopInstance(id: string, graceMs: number) {
    return this.swarm.stopInstance(id, graceMs);
  }
  startInstance(id: string) {
    return this.swarm.startInstance(id);
  }
  restartInstance(id: string, graceMs: number) {
    return this.swarm.restartInstance(id, graceMs);
  }
  listInstances(labels: Record<string, string>) {
    return this.swarm.listInstances(labels);
  }
  listRoutable(labels: Record<string, string>) {
    return this.swarm.listRoutable(labels);
  }
  waitInstance(id: string, signal: AbortSignal) {
    return this.swarm.waitInstance(id, signal);
  }
  execInInstance(id: string, argv: string[], onLine: (line: string) => void) {
    return this.swarm.execInInstance(id, argv, onLine);
  }
  /** A user's command beside an instance (hooks): a one-off service like it, where the driver has that. */
  runLike(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    return this.swarm.runLike
      ? this.swarm.runLike(id, argv, onLine)
      : this.swarm.execInInstance(id, argv, onLine);
  }
  logs(
    id: string,
    opts: LogRange,
    onLine: (l: InstanceLogLine) => void | Promise<void>,
    signal: AbortSignal,
  ) {
    return this.swarm.logs(id, opts, onLine, signal);
  }

  // EngineEvents: the manager's containers' (builds, add-ons) and the swarm's instances' (their tasks, on any
  // node). A task's container on the manager is the swarm's to tell of (by its service, the instance's id).
  ping() {
    return this.swarm.ping();
  }
  /** Both sides' events until either ends (the engine loop then waits for the manager and reconciles). */
  async events(onEvent: (e: EngineEvent) => void, signal: AbortSignal): Promise<void> {
    const both = new AbortController();
    const stop = () => both.abort();
    signal.addEventListener("abort", stop, { once: true });
    const fromManager = (e: EngineEvent) => {
      if (!e.labels[SWARM_TASK_LABEL]) onEvent(e);
    };
    try {
      await Promise.race([
        this.manager.events(fromManager, both.signal),
        this.swarm.events(onEvent, both.signal),
      ]);
    } finally {
      both.abort();
      signal.removeEventListener("abort", stop);
    }
  }
  /** Apps owning an overlay (the swarm) or a volume or network on the manager. */
  async ownerAppIds(): Promise<Set<string>> {
    const [onManager, onSwarm] = await Promise.all([this.manager.ownerAppIds(), this.swarm.ownerAppIds()]);
    return new Set([...onManager, ...onSwarm]);
  }
}
