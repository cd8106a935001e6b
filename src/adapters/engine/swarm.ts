// The Docker Swarm instance driver, first slice (ADR 0030): ReleaseInstances as one 1-replica service per
// Pier instance, AppNetworks as attachable overlays, InstanceSlots as nothing to keep (a task gets its own
// network namespace on its overlay when it starts). Everything is asked of the manager, but a command run
// inside an instance, which has no swarm API: it goes to the task's node's engine, where one is reachable.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL, labelFilter, ROLE } from "../../core/labels.js";
import type {
  AppNetworks,
  BuildSlot,
  EngineEvent,
  EngineEvents,
  InstanceInfo,
  InstanceSlots,
  InstanceSpec,
  LogRange,
  NetworkSubnets,
  ReleaseInstances,
  ReleaseRegistry,
  RoutableInstance,
  SlotShape,
} from "../../core/ports.js";
import { engineCpus, isNotFound, runExec } from "./docker-common.js";
import type { LogSink } from "./docker-logs.js";
import { followSwarm } from "./swarm-events.js";
import { KEPT_TAIL, KeptLogs, type TaskEnd } from "./swarm-kept.js";
import { SwarmLogs } from "./swarm-logs.js";
import { SwarmNetworks } from "./swarm-networks.js";
import { type Reservation, SwarmSpread } from "./swarm-placement.js";
import { PublishedImages } from "./swarm-publish.js";
import { forgettingEverywhere } from "./swarm-release-images.js";
import { runLike } from "./swarm-run.js";
import { backOff, notFound, poll, SwarmServices, type SwarmServicesOptions } from "./swarm-services.js";
import { pinnedNode, type ServiceSpec, serviceSpec, unpinned } from "./swarm-spec.js";
import type { NodeSweep } from "./swarm-sweep.js";
import {
  currentTask,
  instanceOf,
  isTerminal,
  routableOf,
  type SwarmService,
  type SwarmTask,
  swarmRestarts,
} from "./swarm-tasks.js";

export interface SwarmEngineOptions extends SwarmServicesOptions {
  /** The manager's engine. */
  docker: Docker;
  /** Which Pier installation owns an object (LABEL.scope). */
  scope: string;
  /**
   * Publishes a release image the manager has (`repo:tag`) to the swarm's registry; an image named by
   * digest already is used as it is. Null: images are used as named (each node must have them).
   */
  registry: ReleaseRegistry | null;
  /** How often the task list is read for events (1 s). */
  eventPollMs?: number;
  /**
   * Prunes an app's unused images on every node (swarm-sweep.ts), and is told each image published (one
   * owed to a node that missed a sweep is no longer asked for); none: through the engines Pier reaches.
   */
  sweep?: Pick<NodeSweep, "sweep" | "published">;
  /** Where the logs and ends of stopped instances are kept once the swarm deleted their tasks (swarm-kept.ts). */
  keptDir: string;
}

export class SwarmEngine
  implements
    AppNetworks,
    InstanceSlots,
    ReleaseInstances,
    Pick<EngineEvents, "ping" | "ownerAppIds" | "events">
{
  private readonly docker: Docker;
  private readonly networks: SwarmNetworks;
  /** Services, tasks and nodes as the verbs read them and wait on them. */
  private readonly svc: SwarmServices;
  private readonly spread: SwarmSpread;
  private readonly cpus: () => Promise<number>;
  private readonly kept: KeptLogs;
  private readonly log: SwarmLogs;
  /** Release images as the nodes pull them (swarm-publish.ts). */
  private readonly images: PublishedImages;

  constructor(private readonly opts: SwarmEngineOptions) {
    this.docker = opts.docker;
    this.networks = new SwarmNetworks(opts.docker, this.own);
    this.svc = new SwarmServices(opts.docker, opts);
    this.spread = new SwarmSpread({
      nodes: () => this.svc.nodes(),
      liveTasks: (appId) => this.svc.liveTasks({ ...this.own, [LABEL.app]: appId }),
      allLiveTasks: () => this.svc.liveTasks({ ...this.own, [LABEL.role]: ROLE.instance }),
    });
    this.cpus = engineCpus(() => this.docker);
    this.kept = new KeptLogs(opts.keptDir);
    this.images = new PublishedImages(opts.docker, opts.registry, opts.sweep);
    this.log = new SwarmLogs(opts.docker, this.svc, this.kept);
  }

  private get own(): Record<string, string> {
    return { [LABEL.managed]: "true", [LABEL.scope]: this.opts.scope };
  }

  async ping(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (e) {
      throw new PierError(
        "ENGINE_ERROR",
        `The swarm's manager does not answer: ${(e as Error).message}`,
        "Start its dockerd, or point PIER_DOCKER_SOCKET at a manager.",
      );
    }
  }

  ownerAppIds(): Promise<Set<string>> {
    return this.networks.ownerAppIds(LABEL.app);
  }

  /**
   * Instances' tasks ending, lost with their node, or starting (swarm-events.ts), until the manager goes.
   * First, off its path, pins that no start of this process holds are lifted (`liftLeftPins`), and what
   * was kept of services gone meanwhile is forgotten.
   */
  events(onEvent: (e: EngineEvent) => void, signal: AbortSignal): Promise<void> {
    void this.liftLeftPins().catch(() => undefined);
    void this.services({ [LABEL.role]: ROLE.instance })
      .then((all) => this.kept.sweep(new Set(all.map((s) => s.ID))))
      .catch(() => undefined);
    const reads = {
      services: () => this.services({}),
      tasksOf: (ids: string[]) => this.svc.tasksOf(ids),
      nodes: () => this.svc.nodes(),
    };
    return followSwarm(reads, onEvent, signal, this.opts.eventPollMs);
  }

  /**
   * A service still pinned to the node Pier chose for its start, by no start under way here: pier server
   * ended between its making and its task's start. Lifted, or the swarm could not move it off a lost node.
   */
  private async liftLeftPins(): Promise<void> {
    for (const s of await this.services({ [LABEL.role]: ROLE.instance })) {
      const node = pinnedNode(s.Spec.TaskTemplate.Placement?.Constraints);
      if (node && !this.spread.starting(s.ID))
        await this.svc.update(s.ID, (x) => unpinned(x.Spec, node)).catch(() => undefined);
    }
  }

  /** Pier's services with these labels. */
  private async services(labels: Record<string, string>): Promise<SwarmService[]> {
    const filters = labelFilter(this.own, labels);
    return (await this.docker.listServices({ filters: { label: filters } })) as SwarmService[];
  }

  // AppNetworks: src/adapters/engine/swarm-networks.ts.

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

  // InstanceSlots: nothing to keep on a swarm (ADR 0030). A slot gave a container a network namespace made
  // ahead; a task has its own on its overlay from its start, and the scheduler picks its node.

  async prepareSlots(_appId: string, _shape: SlotShape, _count: number): Promise<void> {}
  async prepareBuildSlot(_slot: BuildSlot): Promise<void> {}
  async rejoinSlots(): Promise<Map<string, number>> {
    return new Map();
  }
  async removeSlots(_appId: string): Promise<void> {}
  async removeStraySlots(_known: ReadonlySet<string>): Promise<void> {}

  // ReleaseInstances.

  /**
   * The registry as the server forgets through it (ADR 0030): what this driver remembers of a repository's
   * pushes goes first, so an image pushed again after a forget is pushed, not taken for still there; then the
   * manager's and the nodes' copies (swarm-release-images.ts).
   */
  get releaseRegistry(): ReleaseRegistry | null {
    const registry = this.opts.registry;
    if (!registry) return null;
    return forgettingEverywhere(registry, {
      docker: this.docker,
      nodes: () => this.svc.nodes(),
      nodeEngine: this.opts.nodeEngine,
      sweep: this.opts.sweep,
      forgetPushes: (repository) => this.images.forget(repository),
    });
  }
  /**
   * Makes the instance's service on the node Pier chose (swarm-placement.ts) and waits for its task to start;
   * then the pin is lifted, so that the swarm reschedules it like any task when its node is lost or drained.
   */
  async runInstance(s: InstanceSpec): Promise<InstanceInfo> {
    const [image, cpus] = await Promise.all([this.images.imageRef(s.image), this.cpus()]);
    // Chosen once the image is in the registry (a first start pushes it): where the others went by then.
    const spot = await this.spot(s);
    try {
      return await this.made(
        s,
        spot,
        serviceSpec(s, {
          own: this.own,
          image: image.ref,
          imageLabels: image.labels,
          cpus,
          stopGraceMs: this.opts.stopGraceMs,
          ...(spot ? { pin: spot.nodeId } : {}),
        }),
      );
    } finally {
      spot?.done();
    }
  }

  /** The node a new instance goes to; none for one pinned by its fs buckets or outside an app. */
  private spot(s: InstanceSpec): Promise<Reservation | null> {
    const appId = s.labels[LABEL.app];
    if (!appId || s.buckets.length > 0) return Promise.resolve(null);
    return this.spread.reserve({
      appId,
      deploymentId: s.labels[LABEL.deployment],
      memoryBytes: s.memoryBytes,
    });
  }

  private async made(s: InstanceSpec, spot: Reservation | null, spec: ServiceSpec): Promise<InstanceInfo> {
    let id: string;
    try {
      const auth = this.opts.pullAuth;
      const made = await (auth ? this.docker.createService(auth, spec) : this.docker.createService(spec));
      id = made.id;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 409)
        throw new PierError("CONFLICT", `An instance named ${s.name} exists on the swarm already.`);
      throw new PierError("ENGINE_ERROR", `The instance ${s.name} was not created: ${(e as Error).message}`);
    }
    spot?.made(id);
    let pinned = spot !== null;
    const unpin = async () => {
      if (!spot || !pinned) return;
      await this.svc.update(id, (x) => unpinned(x.Spec, spot.nodeId));
      pinned = false;
    };
    let tasks: SwarmTask[];
    try {
      tasks = await this.svc.started(id, s.name, new Set(), spot ? unpin : undefined);
      await unpin();
    } catch (e) {
      // A failed start leaves nothing behind.
      await this.docker
        .getService(id)
        .remove()
        .catch(() => undefined);
      throw e;
    }
    // Read from the service as made and the tasks the start saw (no second read of either): ~0.1 s a start.
    const nodeId = currentTask(tasks)?.NodeID;
    const node = await this.svc.startedOn(nodeId);
    return instanceOf({ ID: id, Spec: spec }, tasks, (n) => (n === nodeId ? node : undefined));
  }

  async inspectInstance(id: string): Promise<InstanceInfo | null> {
    const s = await this.svc.service(id);
    if (!s) return null;
    const [tasks, nodes] = await Promise.all([this.svc.tasks(s.ID), this.svc.nodes()]);
    return instanceOf(
      s,
      tasks,
      (n) => nodes.get(n)?.name,
      (n) => nodes.get(n)?.ready === false,
      await this.endOf(s, tasks),
    );
  }

  /** How a stopped instance whose task the swarm deleted ended, as kept when it stopped. */
  private async endOf(s: SwarmService, tasks: readonly SwarmTask[]): Promise<TaskEnd | null> {
    if (s.Spec.Mode.Replicated.Replicas !== 0 || currentTask(tasks)) return null;
    return this.kept.end(s.ID);
  }

  async listInstances(labels: Record<string, string>): Promise<InstanceInfo[]> {
    const services = await this.services(labels);
    if (services.length === 0) return [];
    const [tasks, nodes] = await Promise.all([this.svc.tasksOf(services.map((s) => s.ID)), this.svc.nodes()]);
    return Promise.all(
      services.map(async (s) => {
        const own = tasks.filter((t) => t.ServiceID === s.ID);
        return instanceOf(
          s,
          own,
          (n) => nodes.get(n)?.name,
          (n) => nodes.get(n)?.ready === false,
          await this.endOf(s, own),
        );
      }),
    );
  }

  /** From the services and their tasks (three calls, whatever the number of instances). */
  async listRoutable(labels: Record<string, string>): Promise<RoutableInstance[]> {
    return (await this.listInstances(labels)).map(routableOf);
  }

  /**
   * Scales to 0 and waits until no task of the service runs. Its log is followed meanwhile and kept with the
   * task's end: the swarm deletes a scaled-down task, and its container's log with it (swarm-kept.ts).
   */
  async stopInstance(id: string, graceMs: number): Promise<void> {
    await this.stop(id, graceMs, true);
  }

  /** Scales to 0 and waits; `keep`: its log and end are kept (not for a removal). */
  private async stop(id: string, graceMs: number, keep: boolean): Promise<void> {
    const since = Date.now();
    const s = await this.svc.service(id);
    if (!s) return;
    const live = (await this.svc.tasks(s.ID)).filter((t) => !isTerminal(t));
    const keeping =
      keep && live.length > 0
        ? this.kept.follow(s.ID, (onLine, signal) =>
            this.log.serviceLog(s.ID, { follow: true, tail: KEPT_TAIL }, onLine, signal),
          )
        : null;
    if (s.Spec.Mode.Replicated.Replicas !== 0)
      await this.svc.update(s.ID, (x) => this.svc.withReplicas(x, 0, false));
    for (const t of live) this.svc.killAfter(t, graceMs);
    const ended = currentTask(await this.svc.settled(s.ID, s.Spec.Name));
    await keeping?.end({
      state: ended?.Status?.State ?? "shutdown",
      exitCode: ended?.Status?.ContainerStatus?.ExitCode ?? null,
    });
    const memory = s.Spec.TaskTemplate?.Resources?.Reservations?.MemoryBytes ?? 0;
    for (const t of live) if (t.NodeID) this.spread.released(t.NodeID, memory, since);
  }

  async startInstance(id: string): Promise<void> {
    const s = await this.svc.service(id);
    if (!s) throw notFound(id);
    const tasks = await this.svc.tasks(s.ID);
    const task = currentTask(tasks);
    const replicas = s.Spec.Mode.Replicated.Replicas;
    if (replicas > 0 && task?.Status?.State === "running") return;
    // A task the swarm brings back itself (its manager's dockerd restarted, say) is waited for: a forced
    // update would replace the task it is already starting.
    const past = swarmRestarts(s, tasks);
    if (past) {
      await this.svc.started(s.ID, s.Spec.Name, past);
      return;
    }
    // Back to 1 replica, forced: a service whose restart condition is `none` (a task) gets no new task from
    // a scale from 0 to 1 alone on Docker 20.10 (measured on the lab), nor one whose task ran to its end.
    await this.svc.update(s.ID, (x) => this.svc.withReplicas(x, 1, true));
    await this.svc.started(s.ID, s.Spec.Name, new Set(tasks.map((t) => t.ID)));
  }

  /** A new task replaces the current one (stop first, then start). */
  async restartInstance(id: string, graceMs: number): Promise<void> {
    const s = await this.svc.service(id);
    if (!s) throw notFound(id);
    const tasks = await this.svc.tasks(s.ID);
    const task = currentTask(tasks);
    await this.svc.update(s.ID, (x) => this.svc.withReplicas(x, 1, true));
    if (task && !isTerminal(task)) this.svc.killAfter(task, graceMs);
    await this.svc.started(s.ID, s.Spec.Name, new Set(tasks.map((t) => t.ID)));
  }

  /** Stops it, removes the service, and waits until its tasks are gone (its network is free then). */
  async removeInstance(id: string, graceMs: number): Promise<void> {
    const s = await this.svc.service(id);
    if (!s) return;
    await this.stop(s.ID, graceMs, false);
    await this.svc.reaped(s.ID);
    try {
      await this.docker.getService(s.ID).remove();
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    await this.kept.drop(s.ID);
    // Its tasks outlive it a moment (listed by name: the engine's service filter refuses a service that is gone).
    // A task on a node that is down stays listed until the node is back (which then removes its container):
    // not waited for, or a deploy's clean-up with a node down failed after 30 s and pruned nothing.
    await poll(
      30_000,
      async () => {
        const [tasks, nodes] = await Promise.all([this.svc.tasksNamed(s.Spec.Name), this.svc.nodes()]);
        const left = tasks.some(
          (t) => t.ServiceID === s.ID && (!t.NodeID || nodes.get(t.NodeID)?.ready !== false),
        );
        return left ? undefined : true;
      },
      () => new PierError("ENGINE_ERROR", `The tasks of ${s.Spec.Name} were not removed in time.`),
      backOff,
    );
  }

  /** Polls the task list until the instance's task ended: its exit code. */
  async waitInstance(id: string, signal: AbortSignal): Promise<number> {
    const s = await this.svc.service(id);
    if (!s) throw notFound(id);
    for (;;) {
      if (signal.aborted) throw new PierError("ENGINE_ERROR", `Stopped waiting for ${s.Spec.Name}.`);
      const task = currentTask(await this.svc.tasks(s.ID));
      if (task && isTerminal(task)) return task.Status?.ContainerStatus?.ExitCode ?? 1;
      // Removed while it was awaited: it will not end by itself any more.
      if (!task && !(await this.svc.service(s.ID))) throw notFound(id);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Through the engine of the task's node (the swarm's API has no exec). */
  async execInInstance(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    const s = await this.svc.service(id);
    if (!s) throw notFound(id);
    const task = currentTask(await this.svc.tasks(s.ID));
    const cid = task?.Status?.ContainerStatus?.ContainerID;
    if (task?.Status?.State !== "running" || !cid)
      throw new PierError("CONFLICT", `The instance ${s.Spec.Name} does not run.`);
    const docker = await this.svc.engineOf(task);
    if (!docker)
      throw new PierError(
        "ENGINE_ERROR",
        `Pier cannot run a command in ${s.Spec.Name}: the engine of its node is not reachable from Pier.`,
        "Commands in a running instance need its node's engine (Docker Swarm has no exec).",
      );
    const ex = await docker.getContainer(cid).exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
    return runExec(docker, ex, onLine);
  }

  /** A command in a one-off service made like the instance (swarm-run.ts): the swarm has no exec. */
  async runLike(id: string, argv: string[], onLine: (line: string) => void): Promise<number> {
    const s = await this.svc.service(id);
    if (!s) throw notFound(id);
    const deps = { docker: this.docker, svc: this.svc, own: this.own, pullAuth: this.opts.pullAuth };
    return runLike(deps, s, argv, onLine);
  }

  /** The instance's log (swarm-logs.ts). */
  logs(id: string, opts: LogRange, onLine: LogSink, signal: AbortSignal): Promise<void> {
    return this.log.logs(id, opts, onLine, signal);
  }
}
