import type { SandboxInfo, SandboxSpec, SlotHolders } from "../../src/adapters/engine/slot-keeper.js";
import { PierError } from "../../src/core/errors.js";
import type {
  BuildContainer,
  Engine,
  EngineEvent,
  InstanceInfo,
  InstanceLogLine,
  InstanceSpec,
  NetworkSubnets,
  RouteTarget,
} from "../../src/core/ports.js";

export type Labels = Record<string, string>;

/** The engine ports, and the network holders of its slots (the same SlotKeeper as the Docker adapter's). */
export type Methods = Engine & SlotHolders;
/** The verbs of Methods (not its properties, such as `instancesShareVolumes`). */
export type Verb = {
  [K in keyof Methods]-?: NonNullable<Methods[K]> extends (...a: never[]) => unknown ? K : never;
}[keyof Methods];

/** Runs before a call of `method` with its arguments: a test holds the call (await) or fails it (throw). */
export type BeforeHooks = {
  [K in Verb]?: (...args: Parameters<NonNullable<Methods[K]>>) => void | Promise<void>;
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

export const matches = (labels: Labels, filter: Labels) =>
  Object.entries(filter).every(([k, v]) => labels[k] === v);
export const tick = () => new Promise<void>((r) => setImmediate(r));
const argText = (a: unknown) => (a === undefined ? "" : typeof a === "string" ? a : JSON.stringify(a));

/** The fake engine's objects and helpers; its ports are in fake-builds.ts and fake-engine.ts. */
export abstract class FakeEngineState {
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
  protected readonly preparedSpecs = new Map<string, BuildContainer & { scriptPath: string }>();
  /** The specs createSandbox and runInstance were given, in order. */
  sandboxSpecs: SandboxSpec[] = [];
  instanceSpecs: InstanceSpec[] = [];
  /** Containers created so far (instances, sandboxes, build containers). */
  created = 0;
  protected readonly logLines = new Map<string, InstanceLogLine[]>();
  protected readonly listeners = new Set<(e: EngineEvent) => void>();
  protected readonly logWaiters = new Set<() => void>();

  /** When each sandbox started last, by id. */
  protected readonly sandboxStarts = new Map<string, string>();

  constructor(private readonly opts: FakeEngineOptions = {}) {}

  /** Records the call and runs its `before` hook. */
  protected async enter<K extends Verb>(
    method: K,
    ...args: Parameters<NonNullable<Methods[K]>>
  ): Promise<void> {
    this.calls.push(`${method} ${argText(args[0])}`.trimEnd());
    if (this.down)
      throw new PierError("ENGINE_ERROR", "The fake engine does not answer.", "Set down = false.");
    const hook = this.before[method] as
      | ((...a: Parameters<NonNullable<Methods[K]>>) => void | Promise<void>)
      | undefined;
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
    this.wakeFollowers();
  }

  /** The followed logs look again: a new line, or their instance's end. */
  protected wakeFollowers(): void {
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
    this.wakeFollowers();
    this.emit("die", i, code);
  }

  protected emit(
    type: "die" | "start",
    c: { id: string; labels: Labels; slot?: boolean },
    exitCode: number | null,
  ): void {
    const at = new Date().toISOString();
    const e = { type, containerId: c.id, slot: c.slot === true, labels: { ...c.labels }, exitCode, at };
    for (const l of this.listeners) l(e);
  }

  protected container(id: string): InstanceInfo | undefined {
    return this.instances.find((i) => i.id === id) ?? this.buildContainers.find((b) => b.id === id);
  }

  protected known(id: string): InstanceInfo {
    const c = this.container(id);
    if (!c) throw new PierError("NOT_FOUND", `There is no instance ${id} on the engine.`);
    return c;
  }

  protected nextId(prefix: string): string {
    this.created++;
    return `${prefix}-${this.created}`;
  }

  protected async served(kind: "instance" | "sandbox", spec: InstanceSpec | SandboxSpec) {
    if (this.opts.serve) return this.opts.serve(kind, spec);
    if (spec.httpPort === null) return { http: null, networkAddress: `10.255.0.${this.created % 250}` };
    return {
      http: { host: "127.0.0.1", port: 20_000 + this.created },
      networkAddress: `10.255.0.${this.created % 250}`,
    };
  }
}
