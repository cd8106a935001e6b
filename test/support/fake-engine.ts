import {
  type SandboxInfo,
  type SandboxSpec,
  type SlotHolders,
  SlotKeeper,
} from "../../src/adapters/engine/slot-keeper.js";
import { PierError } from "../../src/core/errors.js";
import { LABEL, labelTarget, ROLE } from "../../src/core/labels.js";
import type {
  AddonServerInfo,
  AddonServerSpec,
  BuildSlot,
  Engine,
  EngineEvent,
  InstanceInfo,
  InstanceLogLine,
  InstanceSpec,
  LogRange,
  NetworkSubnets,
  RoutableInstance,
  SlotShape,
} from "../../src/core/ports.js";
import { type Cidr, overlaps, parseCidr } from "../../src/core/subnets.js";
import { FakeAddonServers } from "./fake-addon-servers.js";
import { FakeBuilds } from "./fake-builds.js";
import { type Labels, matches, type Served, tick } from "./fake-engine-state.js";
import { interpret, type ShellFiles, script } from "./fake-shell.js";

export type { BeforeHooks, FakeEngineOptions, Served } from "./fake-engine-state.js";

/** When a sandbox a test seeded (not one the fake made) started: before anything else. */
const SEEDED = "1970-01-01T00:00:00.000Z";

export class FakeEngine extends FakeBuilds implements Engine, SlotHolders {
  /** Which sandbox an instance or a build joins: the Docker adapter's choice, over this fake's sandboxes. */
  private readonly slots = new SlotKeeper(this);
  /** The add-on servers (test/support/fake-addon-servers.ts): their state, specs and played clients. */
  /** What each instance's commands read and write (its buckets' files, its own). */
  private readonly instanceFiles = new Map<string, ShellFiles>();
  /** What an instance's command runs at SIGTERM (its `trap`). */
  private readonly traps = new Map<string, string>();
  /** The add-ons whose data each instance mounts as a bucket. */
  private readonly instanceBuckets = new Map<string, string[]>();
  readonly addonServers = new FakeAddonServers({
    hasImage: (tag) => this.images.has(tag),
    hasNetwork: (name) => this.networks.some((n) => n.name === name),
  });

  protected buildHolder(slot: BuildSlot): Promise<string> {
    return this.slots.buildHolder(slot);
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
      ...this.addonServers.networksInUse(),
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
    return s ? { running: s.running, startedAt: this.sandboxStarts.get(id) ?? SEEDED } : null;
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
    const files = this.filesOf(spec);
    this.instanceSpecs.push(spec);
    const id = this.nextId("instance");
    this.instanceFiles.set(id, files);
    this.instanceBuckets.set(
      id,
      spec.buckets.map((b) => b.addonId),
    );
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

  /**
   * What an instance's commands read and write: under a bucket's target, the fs add-on's files (shared by
   * every instance that mounts it, kept with the add-on's data); elsewhere its own scratch files. A bucket
   * that is not an fs add-on's is refused, as the Docker adapter does.
   */
  private filesOf(spec: InstanceSpec): ShellFiles {
    const own = new Map<string, string>();
    const mounts = spec.buckets.map((b) => {
      const keys = this.addonServers.bucket(b.addonId);
      if (!keys)
        throw new PierError("ADDON_NOT_FOUND", `The bucket of add-on ${b.addonId} is not an fs add-on's.`);
      return { prefix: `${b.target}/`, keys };
    });
    const at = (path: string) => {
      const m = mounts.find((x) => path.startsWith(x.prefix));
      return m ? { keys: m.keys, key: path.slice(m.prefix.length) } : { keys: own, key: path };
    };
    return {
      read: (path) => at(path).keys.get(at(path).key),
      write: (path, text) => {
        const { keys, key } = at(path);
        keys.set(key, text);
        return true;
      },
    };
  }

  /** The command runs: what it prints goes to the log; a command that ends ends the instance. */
  private started(info: InstanceInfo, spec: InstanceSpec): void {
    const run = interpret(spec.cmd ?? ["sleep", "infinity"], this.instanceFiles.get(info.id));
    for (const l of run.lines) this.print(info.id, l);
    if (run.onTerm !== null) this.traps.set(info.id, run.onTerm);
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
    this.instanceFiles.delete(id);
    this.instanceBuckets.delete(id);
    this.traps.delete(id);
  }

  /** SIGTERM: its trap runs (what it prints is logged, its exit is the code); without one, it ends with 143. */
  private halt(id: string): void {
    const trap = this.traps.get(id);
    if (trap === undefined || !this.container(id)?.running) {
      this.exit(id, 143);
      return;
    }
    const run = script(trap, this.instanceFiles.get(id));
    for (const l of run.lines) this.print(id, l);
    this.exit(id, run.exitCode ?? 143);
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
        ...(c.node ? { node: c.node } : {}),
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
    const run = interpret(argv, this.instanceFiles.get(id));
    for (const l of run.lines) onLine(l);
    for (const l of run.logged) this.print(id, l);
    return run.exitCode ?? 0;
  }

  async logs(
    id: string,
    opts: LogRange,
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
    // As on dockerd, a followed log ends once its instance stops or is removed.
    while (opts.follow && !signal.aborted && this.container(id)?.running) {
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

  // Add-on servers (test/support/fake-addon-servers.ts).

  addonNode(requested: string | null): Promise<string | null> {
    return this.addonServers.addonNode(requested);
  }

  async runAddonServer(spec: AddonServerSpec): Promise<void> {
    await this.enter("runAddonServer", spec);
    await this.addonServers.runAddonServer(spec);
  }

  async addonServer(id: string): Promise<AddonServerInfo | null> {
    await this.enter("addonServer", id);
    return this.addonServers.addonServer(id);
  }

  async restartAddonServer(id: string, graceMs: number): Promise<void> {
    await this.enter("restartAddonServer", id, graceMs);
    await this.addonServers.restartAddonServer(id);
  }

  async removeAddonServer(id: string): Promise<void> {
    await this.enter("removeAddonServer", id);
    // Its data mounted as a bucket: running instances refuse it, stopped ones go with it (as on Docker).
    const users = this.instances.filter((i) => this.instanceBuckets.get(i.id)?.includes(id));
    const running = users.filter((i) => i.running);
    if (running.length > 0)
      throw new PierError(
        "CONFLICT",
        `The bucket ${id} is mounted by running instances (${running.map((i) => i.name).join(", ")}): it was not deleted.`,
      );
    for (const i of users) await this.removeInstance(i.id, 0);
    await this.addonServers.removeAddonServer(id);
  }

  async connectAddonServer(id: string, network: string): Promise<void> {
    await this.enter("connectAddonServer", id, network);
    await this.addonServers.connectAddonServer(id, network);
  }

  async disconnectAddonServer(id: string, network: string): Promise<void> {
    await this.enter("disconnectAddonServer", id, network);
    await this.addonServers.disconnectAddonServer(id, network);
  }

  async execInAddonServer(
    id: string,
    argv: string[],
    stdout?: NodeJS.WritableStream,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    await this.enter("execInAddonServer", id, argv, stdout);
    return this.addonServers.execInAddonServer(id, argv, stdout);
  }

  async copyToAddonServer(id: string, file: string, path: string): Promise<void> {
    await this.enter("copyToAddonServer", id, file, path);
    await this.addonServers.copyToAddonServer(id, file, path);
  }

  async addonServerLog(id: string, tail: number): Promise<string[]> {
    await this.enter("addonServerLog", id, tail);
    return this.addonServers.addonServerLog(id);
  }
}
