// The one in-memory engine of the unit tests (issue 16): it implements every engine port and passes the
// same conformance suite as the Docker adapter (test/conformance/engine.ts, run by
// test/unit/adapters/fake-engine.test.ts and test/e2e/engine-conformance.test.ts). Tests seed it, read its
// state, count its calls and hold or fail a call with `before`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type SandboxInfo,
  type SandboxSpec,
  type SlotHolders,
  SlotKeeper,
} from "../../src/adapters/engine/slot-keeper.js";
import { PierError } from "../../src/core/errors.js";
import { LABEL, labelTarget, ROLE } from "../../src/core/labels.js";
import { releaseRepository } from "../../src/core/model.js";
import type {
  BuildContainer,
  BuildSlot,
  ContainerBuild,
  Engine,
  EngineEvent,
  ImageBuild,
  InstanceInfo,
  InstanceLogLine,
  InstanceSpec,
  NetworkSubnets,
  PreparedBuild,
  ReleaseVolume,
  RoutableInstance,
  RouteTarget,
  SlotShape,
} from "../../src/core/ports.js";
import { RELEASE_VOLUME_ROLE } from "../../src/core/release-volumes.js";
import { type Cidr, overlaps, parseCidr } from "../../src/core/subnets.js";
import { interpret } from "./fake-shell.js";

type Labels = Record<string, string>;

/** The engine ports, and the network holders of its slots (the same SlotKeeper as the Docker adapter's). */
type Methods = Engine & SlotHolders;

/** Runs before a call of `method` with its arguments: a test holds the call (await) or fails it (throw). */
export type BeforeHooks = {
  [K in keyof Methods]?: (...args: Parameters<Methods[K]>) => void | Promise<void>;
};

/** Where an instance or a sandbox answers: its published HTTP port and its address on its network. */
export interface Served {
  http: RouteTarget | null;
  networkAddress: string | null;
}

export interface FakeEngineOptions {
  /**
   * Where a new sandbox, or an instance outside a sandbox, answers. Default: a loopback port no one listens
   * on, and an address of its own. An instance in a sandbox answers where its sandbox does, unless this
   * gives it its own (`own: true`).
   */
  serve?: (
    kind: "instance" | "sandbox",
    spec: InstanceSpec | SandboxSpec,
  ) => Promise<Served & { own?: boolean }>;
}

const matches = (labels: Labels, filter: Labels) => Object.entries(filter).every(([k, v]) => labels[k] === v);
const tick = () => new Promise<void>((r) => setImmediate(r));
const argText = (a: unknown) => (a === undefined ? "" : typeof a === "string" ? a : JSON.stringify(a));

export class FakeEngine implements Engine, SlotHolders {
  /** Every call, as `method firstArgument` (a string as it is, anything else as JSON). */
  calls: string[] = [];
  before: BeforeHooks = {};
  /** ping and every call after it fail while the engine is down. */
  down = false;
  images = new Map<string, { id: string; labels: Labels }>();
  volumes = new Map<string, Labels>();
  networks: NetworkSubnets[] = [];
  /** Subnets the engine still holds for networks on their way out: refused, yet not listed. */
  heldSubnets: string[] = [];
  instances: InstanceInfo[] = [];
  sandboxes: SandboxInfo[] = [];
  /** Builds prepared ahead (prepareBuild), running until used or discarded. */
  buildContainers: InstanceInfo[] = [];
  /** The specs prepareBuild was given, in order. */
  startedBuilds: (BuildContainer & { scriptPath: string })[] = [];
  /** The spec of each build prepared ahead, by its ref (its script's bind, its volumes). */
  private readonly preparedSpecs = new Map<string, BuildContainer & { scriptPath: string }>();
  /** The specs createSandbox and runInstance were given, in order. */
  sandboxSpecs: SandboxSpec[] = [];
  instanceSpecs: InstanceSpec[] = [];
  /** Containers created so far (instances, sandboxes, build containers). */
  created = 0;
  private readonly logLines = new Map<string, InstanceLogLine[]>();
  private readonly listeners = new Set<(e: EngineEvent) => void>();
  private readonly logWaiters = new Set<() => void>();

  /** When each sandbox started last, by id. */
  private readonly sandboxStarts = new Map<string, string>();
  /** Which sandbox an instance or a build joins: the Docker adapter's choice, over this fake's sandboxes. */
  private readonly slots = new SlotKeeper(this);

  constructor(private readonly opts: FakeEngineOptions = {}) {}

  /** Records the call and runs its `before` hook. */
  private async enter<K extends keyof Methods>(method: K, ...args: Parameters<Methods[K]>): Promise<void> {
    this.calls.push(`${method} ${argText(args[0])}`.trimEnd());
    if (this.down)
      throw new PierError("ENGINE_ERROR", "The fake engine does not answer.", "Set down = false.");
    const hook = this.before[method] as ((...a: Parameters<Methods[K]>) => void | Promise<void>) | undefined;
    await hook?.(...args);
  }

  /** Seeds an instance (as if an earlier Pier had run it). */
  addInstance(i: Partial<InstanceInfo> & { id: string; labels: Labels }): InstanceInfo {
    const info: InstanceInfo = {
      name: i.id,
      state: i.running === false ? "exited" : "running",
      running: true,
      startedAt: null,
      restarts: 0,
      exitCode: null,
      http: null,
      tcp: null,
      networkAddress: null,
      ...i,
    };
    this.instances.push(info);
    return info;
  }

  /** Appends a line to an instance's log (as its process would print it). */
  print(id: string, line: string, stream: "stdout" | "stderr" = "stdout"): void {
    const lines = this.logLines.get(id) ?? [];
    lines.push({ at: new Date().toISOString(), stream, line });
    this.logLines.set(id, lines);
    const waiting = [...this.logWaiters];
    this.logWaiters.clear();
    for (const w of waiting) w();
  }

  /** Seeds an image (a release built earlier, a base image). */
  addImage(tag: string, labels: Labels = {}): void {
    this.images.set(tag, { id: `sha256:${tag}`, labels: { ...labels } });
  }

  /** The instance's process ends with `code` (a crash, or a task's end). */
  exit(id: string, code: number): void {
    const i = this.container(id);
    if (!i?.running) return;
    Object.assign(i, { running: false, state: "exited", exitCode: code });
    this.emit("die", i, code);
  }

  private emit(
    type: "die" | "start",
    c: { id: string; labels: Labels; slot?: boolean },
    exitCode: number | null,
  ): void {
    const at = new Date().toISOString();
    const e = { type, containerId: c.id, slot: c.slot === true, labels: { ...c.labels }, exitCode, at };
    for (const l of this.listeners) l(e);
  }

  private container(id: string): InstanceInfo | undefined {
    return this.instances.find((i) => i.id === id) ?? this.buildContainers.find((b) => b.id === id);
  }

  private known(id: string): InstanceInfo {
    const c = this.container(id);
    if (!c) throw new PierError("NOT_FOUND", `There is no instance ${id} on the engine.`);
    return c;
  }

  private nextId(prefix: string): string {
    this.created++;
    return `${prefix}-${this.created}`;
  }

  private async served(kind: "instance" | "sandbox", spec: InstanceSpec | SandboxSpec) {
    if (this.opts.serve) return this.opts.serve(kind, spec);
    if (spec.httpPort === null) return { http: null, networkAddress: `10.255.0.${this.created % 250}` };
    return {
      http: { host: "127.0.0.1", port: 20_000 + this.created },
      networkAddress: `10.255.0.${this.created % 250}`,
    };
  }

  // Release images.

  async buildImage(b: ImageBuild, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
    await this.enter("buildImage", b, onLine, signal);
    onLine(`Successfully tagged ${b.tag}`);
    this.images.set(b.tag, { id: `sha256:${b.tag}`, labels: { ...b.labels } });
  }

  async buildRelease(
    b: ContainerBuild,
    onLine: (line: string) => void,
    signal: AbortSignal,
    prepared?: PreparedBuild,
  ): Promise<void> {
    await this.enter("buildRelease", b, onLine, signal, prepared);
    if (!prepared && b.slot) await this.slots.buildHolder(b.slot);
    const script = prepared ? this.preparedScript(prepared) : b.script;
    const run = interpret(["sh", "-c", script]);
    for (const l of run.lines) onLine(l);
    if (run.exitCode !== 0 && run.exitCode !== null)
      throw new PierError("BUILD_FAILED", `The build exited with code ${run.exitCode}.`);
    if (b.commit !== false) this.commit(b);
  }

  private commit(b: ContainerBuild): void {
    this.images.set(b.tag, { id: `sha256:${b.tag}`, labels: { ...b.labels, [LABEL.role]: ROLE.release } });
  }

  /**
   * A prepared build is used up; its script is the file at its scriptPath, read through the bind that holds
   * it (as the container reads it). One that is gone, or a script that is not there, fails the build.
   */
  private preparedScript(prepared: PreparedBuild): string {
    const alive = this.buildContainers.some((c) => c.id === prepared.ref && c.running);
    const spec = this.preparedSpecs.get(prepared.ref);
    this.buildContainers = this.buildContainers.filter((c) => c.id !== prepared.ref);
    if (!alive || !spec) throw new PierError("ENGINE_ERROR", `No such container: ${prepared.ref}`);
    const bind = spec.binds.find((m) => spec.scriptPath.startsWith(`${m.target}/`));
    try {
      return readFileSync(
        join(bind?.source ?? "/nonexistent", spec.scriptPath.slice(bind?.target.length ?? 0)),
        "utf8",
      );
    } catch {
      throw new PierError("BUILD_FAILED", `The build failed: ${spec.scriptPath}: not found.`);
    }
  }

  async prepareBuild(b: BuildContainer & { scriptPath: string }): Promise<PreparedBuild> {
    await this.enter("prepareBuild", b);
    const holder = b.slot ? await this.slots.buildHolder(b.slot) : null;
    this.startedBuilds.push(b);
    for (const v of b.volumes) if (!this.volumes.has(v.name)) this.volumes.set(v.name, v.labels ?? b.labels);
    const id = this.nextId("build");
    this.preparedSpecs.set(id, b);
    this.buildContainers.push({
      id,
      name: id,
      labels: { ...b.labels, [LABEL.role]: ROLE.build, ...(holder ? { [LABEL.sandbox]: holder } : {}) },
      state: "running",
      running: true,
      startedAt: new Date().toISOString(),
      restarts: 0,
      exitCode: null,
      http: null,
      tcp: null,
      networkAddress: null,
    });
    return { ref: id };
  }

  async preparedBuildAlive(prepared: PreparedBuild): Promise<boolean> {
    await this.enter("preparedBuildAlive", prepared);
    const c = this.buildContainers.find((x) => x.id === prepared.ref && x.running);
    // Its network is its sandbox's: one that stopped left it without one.
    const holder = c?.labels[LABEL.sandbox];
    return c !== undefined && (!holder || this.sandboxes.some((s) => s.id === holder && s.running));
  }

  async imageFromFiles(b: ContainerBuild): Promise<void> {
    await this.enter("imageFromFiles", b);
    this.commit(b);
  }

  async discardPreparedBuild(prepared: PreparedBuild): Promise<void> {
    await this.enter("discardPreparedBuild", prepared);
    this.buildContainers = this.buildContainers.filter((c) => c.id !== prepared.ref);
  }

  async imageExists(tag: string): Promise<boolean> {
    await this.enter("imageExists", tag);
    return this.images.has(tag);
  }

  async imageInfo(tag: string): Promise<{ id: string; labels: Labels } | null> {
    await this.enter("imageInfo", tag);
    const i = this.images.get(tag);
    return i ? { id: i.id, labels: { ...i.labels } } : null;
  }

  async removeImage(tag: string): Promise<void> {
    await this.enter("removeImage", tag);
    this.images.delete(tag);
  }

  async releaseImages(appId: string): Promise<string[]> {
    await this.enter("releaseImages", appId);
    return [...this.images.keys()].filter((t) => t.startsWith(`${releaseRepository(appId)}:`));
  }

  // Volumes.

  async dropDependencyCache(appId: string): Promise<void> {
    await this.enter("dropDependencyCache", appId);
    this.dropVolumes({ [LABEL.app]: appId, [LABEL.cache]: "deps" });
  }

  async releaseVolumes(appId: string): Promise<ReleaseVolume[]> {
    await this.enter("releaseVolumes", appId);
    return [...this.volumes]
      .filter(([, own]) => matches(own, { [LABEL.app]: appId, [LABEL.role]: RELEASE_VOLUME_ROLE }))
      .map(([name, own]) => ({ name, deploymentId: own[LABEL.deployment] ?? null }));
  }

  async removeReleaseVolume(name: string): Promise<boolean> {
    await this.enter("removeReleaseVolume", name);
    if (this.volumeInUse(name)) return false;
    this.volumes.delete(name);
    return true;
  }

  async removeAppVolumes(appId: string): Promise<void> {
    await this.enter("removeAppVolumes", appId);
    this.dropVolumes({ [LABEL.app]: appId });
  }

  /** Removes the volumes with these labels; one still in use stays (as the engine refuses it). */
  private dropVolumes(labels: Labels): void {
    for (const [name, own] of this.volumes)
      if (matches(own, labels) && !this.volumeInUse(name)) this.volumes.delete(name);
  }

  /** Whether a build container that is still there mounts the volume. */
  private volumeInUse(name: string): boolean {
    return [...this.preparedSpecs].some(
      ([id, b]) => b.volumes.some((v) => v.name === name) && this.buildContainers.some((c) => c.id === id),
    );
  }

  // Networks.

  async networkExists(name: string): Promise<boolean> {
    await this.enter("networkExists", name);
    return this.networks.some((n) => n.name === name);
  }

  async networksWithSubnets(): Promise<NetworkSubnets[]> {
    await this.enter("networksWithSubnets");
    return this.networks.map((n) => ({ ...n, labels: { ...n.labels }, subnets: [...n.subnets] }));
  }

  async ensureNetwork(
    name: string,
    labels: Labels,
    subnets: { ipv4: string | null; ipv6: string | null },
  ): Promise<void> {
    await this.enter("ensureNetwork", name, labels, subnets);
    // The engine answers later: two deploys may race to create the same network.
    await tick();
    if (this.networks.some((n) => n.name === name)) return;
    const held = [...this.networks.flatMap((n) => n.subnets), ...this.heldSubnets];
    const mine = subnets.ipv4 ? (parseCidr(subnets.ipv4) as Cidr) : null;
    const v4 = held.filter((x) => !x.includes(":")).map((x) => parseCidr(x) as Cidr);
    if ((mine && v4.some((x) => overlaps(x, mine))) || (subnets.ipv6 && held.includes(subnets.ipv6))) {
      throw new PierError(
        "SUBNET_OVERLAPS",
        `A subnet of the network ${name} (${[subnets.ipv4, subnets.ipv6].filter(Boolean).join(", ")}) overlaps a network that exists already.`,
      );
    }
    // Asked for none, the engine picks a free one of its own pool (as dockerd does).
    const ipv4 = subnets.ipv4 ?? this.freeSubnet(v4);
    const own = [ipv4, subnets.ipv6].filter((x): x is string => typeof x === "string");
    this.networks.push({ name, labels: { ...labels, [LABEL.managed]: "true" }, subnets: own });
  }

  private freeSubnet(held: Cidr[]): string {
    for (let i = 0; ; i++) {
      const text = `172.${16 + (i >> 8)}.${i & 255}.0/24`;
      const c = parseCidr(text) as Cidr;
      if (!held.some((x) => overlaps(x, c))) return text;
    }
  }

  async removeNetworks(labels: Labels, keep?: string): Promise<string[]> {
    await this.enter("removeNetworks", labels, keep);
    const used = new Set([
      ...this.instanceSpecs
        .filter((s) => this.instances.some((i) => i.name === s.name))
        .map((s) => s.network.name),
      ...this.sandboxes.map((s) => s.labels[LABEL.network]),
    ]);
    const gone = this.networks.filter(
      (n) => n.name !== keep && matches(n.labels, labels) && !used.has(n.name),
    );
    this.networks = this.networks.filter((n) => !gone.includes(n));
    return gone.map((n) => n.name);
  }

  // Sandboxes.

  async createSandbox(spec: SandboxSpec): Promise<SandboxInfo> {
    await this.enter("createSandbox", spec);
    this.sandboxSpecs.push(spec);
    const id = this.nextId("sandbox");
    const at = await this.served("sandbox", spec);
    const s: SandboxInfo = {
      id,
      labels: {
        ...spec.labels,
        [LABEL.role]: "sandbox",
        [LABEL.network]: spec.network.name,
        [LABEL.httpPort]: spec.httpPort === null ? "" : String(spec.httpPort),
        [LABEL.tcpPort]: spec.tcpPort === null ? "" : String(spec.tcpPort),
      },
      running: true,
      http: at.http,
      tcp: null,
      networkAddress: at.networkAddress,
    };
    this.sandboxes.push(s);
    this.sandboxStarts.set(id, new Date().toISOString());
    return { ...s, labels: { ...s.labels } };
  }

  async listSandboxes(labels: Labels): Promise<SandboxInfo[]> {
    await this.enter("listSandboxes", labels);
    return this.sandboxes
      .filter((s) => matches(s.labels, labels))
      .map((s) => ({ ...s, labels: { ...s.labels } }));
  }

  async removeSandbox(id: string): Promise<void> {
    await this.enter("removeSandbox", id);
    this.sandboxes = this.sandboxes.filter((s) => s.id !== id);
  }

  async sandboxState(id: string): Promise<{ running: boolean; startedAt: string | null } | null> {
    await this.enter("sandboxState", id);
    const s = this.sandboxes.find((x) => x.id === id);
    return s ? { running: s.running, startedAt: this.sandboxStarts.get(id) ?? null } : null;
  }

  /** A sandbox stops (an engine restart, a kill) or starts again (its start is an engine event). */
  setSandboxRunning(id: string, running: boolean): void {
    const s = this.sandboxes.find((x) => x.id === id);
    if (!s || s.running === running) return;
    s.running = running;
    if (running) this.sandboxStarts.set(id, new Date().toISOString());
    this.emit(running ? "start" : "die", { ...s, slot: true }, running ? null : 137);
  }

  // Instance slots: the choice is the SlotKeeper's, as on Docker.

  async prepareSlots(appId: string, shape: SlotShape, count: number): Promise<void> {
    await this.enter("prepareSlots", appId, shape, count);
    await this.slots.prepare(appId, shape, count);
  }

  async prepareBuildSlot(slot: BuildSlot): Promise<void> {
    await this.enter("prepareBuildSlot", slot);
    await this.slots.buildHolder(slot);
  }

  async rejoinSlots(
    serving: ReadonlyMap<string, string>,
    opts: { graceMs: number; slot?: string },
  ): Promise<Map<string, number>> {
    await this.enter("rejoinSlots", serving, opts);
    return this.slots.rejoin(serving, opts);
  }

  async removeSlots(appId: string): Promise<void> {
    await this.enter("removeSlots", appId);
    await this.slots.removeAll(appId);
  }

  async removeStraySlots(known: ReadonlySet<string>): Promise<void> {
    await this.enter("removeStraySlots", known);
    await this.slots.removeStrays(known);
  }

  // Instances.

  async runInstance(spec: InstanceSpec): Promise<InstanceInfo> {
    await this.enter("runInstance", spec);
    if (!spec.slot) return this.runIn(spec, null);
    const shape = { httpPort: spec.httpPort, tcpPort: spec.tcpPort, network: spec.network };
    return this.slots.withSlot(spec.slot.appId, shape, (sandbox) => this.runIn(spec, sandbox));
  }

  private async runIn(spec: InstanceSpec, sandbox: SandboxInfo | null): Promise<InstanceInfo> {
    if (sandbox && !this.sandboxes.find((s) => s.id === sandbox.id)?.running)
      throw new PierError(
        "ENGINE_ERROR",
        `The instance ${spec.name} did not start: cannot join network of a non running container: ${sandbox.id}`,
      );
    if (!this.images.has(spec.image)) throw new PierError("ENGINE_ERROR", `No such image: ${spec.image}`);
    this.instanceSpecs.push(spec);
    const id = this.nextId("instance");
    const info = this.newInstance(id, spec, sandbox, await this.placeOf(spec, sandbox));
    this.instances.push(info);
    this.emit("start", info, null);
    this.started(info, spec);
    return { ...info, labels: { ...info.labels } };
  }

  private async placeOf(spec: InstanceSpec, sandbox: SandboxInfo | null): Promise<Served> {
    const at = await this.served("instance", spec);
    if (!sandbox || at.own) return at;
    return { http: sandbox.http, networkAddress: sandbox.networkAddress };
  }

  private newInstance(id: string, spec: InstanceSpec, sandbox: SandboxInfo | null, at: Served): InstanceInfo {
    // As the engine does, an instance gets its image's labels under the ones Pier sets.
    const image = this.images.get(spec.image)?.labels ?? {};
    const labels: Labels = { ...image, ...spec.labels, [LABEL.role]: ROLE.instance };
    if (sandbox) labels[LABEL.sandbox] = sandbox.id;
    if (spec.httpPort !== null) labels[LABEL.httpPort] = String(spec.httpPort);
    if (spec.tcpPort !== null) labels[LABEL.tcpPort] = String(spec.tcpPort);
    return {
      id,
      name: spec.name,
      labels,
      state: "running",
      running: true,
      startedAt: new Date().toISOString(),
      restarts: 0,
      exitCode: null,
      http: at.http,
      tcp: null,
      networkAddress: at.networkAddress,
    };
  }

  /** The command runs: what it prints goes to the log; a command that ends ends the instance. */
  private started(info: InstanceInfo, spec: InstanceSpec): void {
    const run = interpret(spec.cmd ?? ["sleep", "infinity"]);
    for (const l of run.lines) this.print(info.id, l);
    if (run.exitCode !== null) this.exit(info.id, run.exitCode);
  }

  async inspectInstance(id: string): Promise<InstanceInfo | null> {
    await this.enter("inspectInstance", id);
    const c = this.container(id);
    return c ? { ...c, labels: { ...c.labels } } : null;
  }

  async removeInstance(id: string, graceMs: number): Promise<void> {
    await this.enter("removeInstance", id, graceMs);
    this.halt(id);
    this.instances = this.instances.filter((c) => c.id !== id);
    this.logLines.delete(id);
  }

  /** SIGTERM: a process that keeps running ends with 143. */
  private halt(id: string): void {
    this.exit(id, 143);
  }

  async stopInstance(id: string, graceMs: number): Promise<void> {
    await this.enter("stopInstance", id, graceMs);
    this.halt(id);
  }

  async startInstance(id: string): Promise<void> {
    await this.enter("startInstance", id);
    const c = this.known(id);
    if (c.running) return;
    // An instance in a sandbox needs it running first.
    const holder = c.labels[LABEL.sandbox];
    if (holder) this.setSandboxRunning(holder, true);
    Object.assign(c, {
      running: true,
      state: "running",
      exitCode: null,
      startedAt: new Date().toISOString(),
    });
    this.emit("start", c, null);
  }

  async restartInstance(id: string, graceMs: number): Promise<void> {
    await this.enter("restartInstance", id, graceMs);
    const c = this.known(id);
    this.halt(id);
    Object.assign(c, {
      running: true,
      state: "running",
      exitCode: null,
      startedAt: new Date().toISOString(),
    });
    this.emit("start", c, null);
  }

  async listInstances(labels: Labels): Promise<InstanceInfo[]> {
    await this.enter("listInstances", labels);
    return this.instances
      .filter((c) => matches(c.labels, labels))
      .map((c) => ({ ...c, labels: { ...c.labels } }));
  }

  async listRoutable(labels: Labels): Promise<RoutableInstance[]> {
    await this.enter("listRoutable", labels);
    return this.instances
      .filter((c) => matches(c.labels, labels))
      .map((c) => ({
        id: c.id,
        labels: { ...c.labels },
        running: c.running,
        http: c.http ?? labelTarget(c.labels, LABEL.httpTarget),
      }));
  }

  async waitInstance(id: string, signal: AbortSignal): Promise<number> {
    await this.enter("waitInstance", id, signal);
    const c = this.known(id);
    while (c.running) {
      if (signal.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const done = () => {
          this.listeners.delete(done);
          resolve();
        };
        this.listeners.add(done);
        signal.addEventListener("abort", done, { once: true });
      });
    }
    return c.exitCode ?? 0;
  }

  async execInInstance(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    await this.enter("execInInstance", id, argv, onLine);
    const c = this.known(id);
    if (!c.running) throw new PierError("CONFLICT", `Container ${id} is not running`);
    const run = interpret(argv);
    for (const l of run.lines) onLine(l);
    for (const l of run.logged) this.print(id, l);
    return run.exitCode ?? 0;
  }

  async logs(
    id: string,
    opts: { since?: Date; until?: Date; tail?: number; follow: boolean },
    onLine: (l: InstanceLogLine) => void | Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    await this.enter("logs", id, opts, onLine, signal);
    this.known(id);
    const all = this.logLines.get(id) ?? [];
    const inRange = (l: InstanceLogLine) =>
      (!opts.since || l.at >= opts.since.toISOString()) && (!opts.until || l.at <= opts.until.toISOString());
    const first = all.filter(inRange);
    let sent = all.length;
    for (const l of opts.tail !== undefined ? first.slice(-opts.tail) : first) await onLine(l);
    while (opts.follow && !signal.aborted) {
      await new Promise<void>((resolve) => {
        this.logWaiters.add(resolve);
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      const lines = this.logLines.get(id) ?? [];
      for (const l of lines.slice(sent)) await onLine(l);
      sent = lines.length;
    }
  }

  // Events.

  async ping(): Promise<void> {
    await this.enter("ping");
  }

  async events(onEvent: (e: EngineEvent) => void, signal: AbortSignal): Promise<void> {
    await this.enter("events", onEvent, signal);
    this.listeners.add(onEvent);
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    this.listeners.delete(onEvent);
  }

  async ownerAppIds(): Promise<Set<string>> {
    await this.enter("ownerAppIds");
    const ids = [...this.networks.map((n) => n.labels), ...this.volumes.values()].map((l) => l[LABEL.app]);
    return new Set(ids.filter((id): id is string => !!id));
  }
}
