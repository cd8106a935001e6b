// The swarm's API as the Swarm driver reads it and waits on it (ADR 0030): a service and its tasks, the nodes,
// a versioned spec change, a start or a stop seen through to its end. src/adapters/engine/swarm.ts turns
// these into the ReleaseInstances verbs.

import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { labelFilter } from "../../core/labels.js";
import { isNotFound } from "./docker-common.js";
import {
  currentTask,
  isTerminal,
  NO_NODE_GRACE_MS,
  pullRejected,
  type SwarmService,
  type SwarmTask,
  startFailure,
  startOutcome,
  unplaceable,
} from "./swarm-tasks.js";

/** A node of the swarm, as the driver names it to find its engine. */
export interface SwarmNodeRef {
  id: string;
  name: string;
  address: string;
}

/** What the waits and changes need besides the manager's engine. */
export interface SwarmServicesOptions {
  /** The credentials nodes pull with, handed to the swarm with each service (`--with-registry-auth`). */
  pullAuth: { username: string; password: string; serveraddress: string } | null;
  /** SIGTERM to SIGKILL of a task: fixed when its service is made (Pier's PIER_STOP_GRACE). */
  stopGraceMs: number;
  /** The engine of a node, where Pier may reach it (a command run in an instance needs it); else null. */
  nodeEngine: (node: SwarmNodeRef) => Docker | null;
  /** How long a start may take (pulling the image on a node included). Default 120 s. */
  startTimeoutMs?: number;
}

/**
 * The wait before a poll's next probe: 25 ms, then every 50 ms for the first ~2 s (a task's start on the
 * swarm takes 1-2 s: seen within ~25 ms of its end on average, not ~100 ms as with a back-off to 200 ms,
 * at ~20 cheap task-list calls a second per start), then one call every 200 ms for a long wait.
 */
export function pollDelay(attempt: number): number {
  if (attempt <= 0) return 25;
  return attempt < 40 ? 50 : 200;
}

/**
 * The wait of a poll nobody waits on (a removal off the push's path, whose probe lists every task of the
 * swarm): 25 ms, doubled each time up to 200 ms.
 */
export function backOff(attempt: number): number {
  return Math.min(200, 25 * 2 ** Math.max(0, attempt));
}

/**
 * Polls `probe` (waiting `delay(attempt)` between probes, `pollDelay` by default) until it returns a value,
 * at most `ms`; then `late()` is thrown.
 */
export async function poll<T>(
  ms: number,
  probe: () => Promise<T | undefined>,
  late: () => Error,
  delay: (attempt: number) => number = pollDelay,
): Promise<T> {
  const end = Date.now() + ms;
  for (let attempt = 0; ; attempt++) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > end) throw late();
    await new Promise((r) => setTimeout(r, delay(attempt)));
  }
}

/** Unknown service ids become NOT_FOUND. */
/** A swarm node as the driver and the sweep see it: its host name, and whether it is up. */
export interface SwarmNodeState {
  name: string;
  ready: boolean;
  /** Its availability is active (not drained or paused): the swarm places tasks there. */
  active: boolean;
  /** Its memory as the swarm knows it (what task reservations are checked against); absent if not told. */
  memoryBytes?: number;
}

/** The swarm's nodes by id, from one call to the manager. */
export async function swarmNodes(docker: Docker): Promise<Map<string, SwarmNodeState>> {
  const nodes = (await docker.listNodes()) as {
    ID: string;
    Description?: { Hostname?: string; Resources?: { MemoryBytes?: number } };
    Status?: { State?: string };
    Spec?: { Availability?: string };
  }[];
  return new Map(
    nodes.map((n) => {
      const memoryBytes = n.Description?.Resources?.MemoryBytes;
      return [
        n.ID,
        {
          name: n.Description?.Hostname ?? n.ID,
          ready: n.Status?.State === "ready",
          active: (n.Spec?.Availability ?? "active") === "active",
          ...(memoryBytes ? { memoryBytes } : {}),
        },
      ];
    }),
  );
}

export function notFound(id: string): PierError {
  return new PierError("NOT_FOUND", `There is no instance ${id} on the swarm.`);
}

export class SwarmServices {
  constructor(
    private readonly docker: Docker,
    private readonly opts: SwarmServicesOptions,
  ) {}

  /**
   * Waits until a new task of the service (one not in `known`, the tasks before the change) started: it
   * runs, or it ran and ended (a task). A task that never started (rejected, no node fits, no such image)
   * fails it with the engine's reason. Returns the service's tasks as last read (the started one among them):
   * the instance is read from them, without reading them again. `unpin`, when given, is called once as soon
   * as no node fits the task (the node Pier chose is full or went): the swarm then places it where it can.
   */
  async started(
    id: string,
    name: string,
    known: ReadonlySet<string>,
    unpin?: () => Promise<void>,
  ): Promise<SwarmTask[]> {
    let last = "no task yet";
    let since = Date.now();
    let pinned = unpin;
    const skip = new Set(known);
    return poll(
      this.opts.startTimeoutMs ?? 120_000,
      async () => {
        const tasks = await this.tasks(id);
        const fresh = tasks.filter((t) => !skip.has(t.ID));
        const task = currentTask(fresh);
        if (!task) return undefined;
        last = `${task.Status?.State ?? "new"}${task.Status?.Err ? `: ${task.Status.Err}` : ""}`;
        if (pinned && unplaceable(task, NO_NODE_GRACE_MS)) {
          // The waiting task is replaced by one the swarm places: that one is the start.
          await pinned();
          pinned = undefined;
          skip.add(task.ID);
          since = Date.now();
          return undefined;
        }
        const nowhere = unplaceable(task, Date.now() - since);
        if (nowhere)
          throw new PierError(
            "ENGINE_ERROR",
            `The instance ${name} did not start: ${nowhere}.`,
            "Every node that could run it is drained, paused or down (an app linked to an fs bucket runs on the bucket's node only): see `pier nodes`, and `pier nodes activate NAME`.",
          );
        const outcome = startOutcome(task);
        if (outcome?.ran) return tasks;
        const failed = outcome ? task : pullRejected(fresh, task);
        const why = failed && startOutcome(failed);
        if (!failed || !why || why.ran) return undefined;
        throw startFailure(
          name,
          failed.NodeID ? await this.nodeName(failed.NodeID) : null,
          why.why,
          this.opts.pullAuth?.serveraddress ?? null,
        );
      },
      () => new PierError("ENGINE_ERROR", `The instance ${name} did not start in time (its task: ${last}).`),
    );
  }

  /**
   * The host name of the node a task just started on, from the nodes as last listed (listed again only for a
   * node not seen yet): a start costs no node read once the swarm's nodes are known.
   */
  async startedOn(nodeId: string | undefined): Promise<string | undefined> {
    if (!nodeId) return undefined;
    if (!this.known.has(nodeId)) this.known = await this.nodes();
    return this.known.get(nodeId)?.name;
  }

  private known = new Map<string, { name: string; ready: boolean }>();

  /** A node's host name (its id when it cannot be read). */
  private async nodeName(id: string): Promise<string> {
    try {
      const n = (await this.docker.getNode(id).inspect()) as { Description?: { Hostname?: string } };
      return n.Description?.Hostname ?? id;
    } catch {
      return id;
    }
  }

  /** The tasks of these services (all tasks when one of them went meanwhile: the filter refuses it). */
  async tasksOf(ids: string[]): Promise<SwarmTask[]> {
    try {
      return (await this.docker.listTasks({ filters: { service: ids } })) as SwarmTask[];
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return (await this.docker.listTasks()) as SwarmTask[];
    }
  }

  /**
   * The tasks of the service named `name`, also once it is gone (the engine's `name` filter is a prefix of
   * the tasks' names, `<service>.<slot>.<id>`; the `service` filter refuses a service that is gone): a few
   * tasks rather than every task of the swarm.
   */
  async tasksNamed(name: string): Promise<SwarmTask[]> {
    return (await this.docker.listTasks({ filters: { name: [`${name}.`] } })) as SwarmTask[];
  }

  /** The tasks with these labels (their services') that the swarm wants running: one call. */
  async liveTasks(labels: Record<string, string>): Promise<SwarmTask[]> {
    const label = labelFilter(labels);
    return (await this.docker.listTasks({ filters: { label, "desired-state": ["running"] } })) as SwarmTask[];
  }

  /** The tasks of a service; none once it is gone. */
  async tasks(serviceId: string): Promise<SwarmTask[]> {
    try {
      return (await this.docker.listTasks({ filters: { service: [serviceId] } })) as SwarmTask[];
    } catch (e) {
      if (isNotFound(e)) return [];
      throw e;
    }
  }

  async service(id: string): Promise<SwarmService | null> {
    try {
      return (await this.docker.getService(id).inspect()) as SwarmService;
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Node id -> its name and whether it is up (ready), from one call. */
  nodes(): Promise<Map<string, SwarmNodeState>> {
    return swarmNodes(this.docker);
  }

  /** Changes a service's spec (retried when another change came first: the swarm versions its objects). */
  async update(id: string, change: (s: SwarmService) => SwarmService["Spec"]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const s = await this.service(id);
      if (!s) throw notFound(id);
      try {
        // dockerode sends `authconfig` as the X-Registry-Auth header (without new credentials, the swarm
        // keeps the ones the service was made with), `_query` as the query and `_body` as the body.
        await this.docker.getService(s.ID).update({
          ...(this.opts.pullAuth ? { authconfig: this.opts.pullAuth } : {}),
          _query: { version: s.Version?.Index ?? 0 },
          _body: change(s),
        });
        return;
      } catch (e) {
        if (attempt >= 3 || !/out of sequence/i.test((e as Error).message)) throw e;
      }
    }
  }

  withReplicas(s: SwarmService, replicas: number, force: boolean): SwarmService["Spec"] {
    const t = s.Spec.TaskTemplate;
    return {
      ...s.Spec,
      Mode: { Replicated: { Replicas: replicas } },
      TaskTemplate: force ? { ...t, ForceUpdate: (t.ForceUpdate ?? 0) + 1 } : t,
    };
  }

  /**
   * A task's grace is the one its service was made with: a shorter `graceMs` is kept by killing the task's
   * container through its node's engine once it has passed, where that engine is reachable.
   */
  killAfter(task: SwarmTask | null, graceMs: number): void {
    const cid = task?.Status?.ContainerStatus?.ContainerID;
    if (!task || !cid || graceMs >= this.opts.stopGraceMs) return;
    void this.engineOf(task).then((docker) => {
      if (!docker) return;
      setTimeout(() => {
        docker
          .getContainer(cid)
          .kill()
          .catch(() => undefined);
      }, graceMs);
    });
  }

  async engineOf(task: SwarmTask): Promise<Docker | null> {
    if (!task.NodeID) return null;
    const n = (await this.docker.getNode(task.NodeID).inspect()) as {
      ID: string;
      Description?: { Hostname?: string };
      Status?: { Addr?: string };
    };
    return this.opts.nodeEngine({
      id: n.ID,
      name: n.Description?.Hostname ?? n.ID,
      address: n.Status?.Addr ?? "",
    });
  }

  /**
   * Waits (at most 5 s) until the swarm deleted the tasks a scale to 0 ended: its task reaper deletes a task
   * that is to be removed once it ended, ~50-300 ms later (measured on the lab). A service removed meanwhile
   * can crash the manager: Docker 20.10's orchestrator lists the service's tasks, then updates each, and a
   * task the reaper deleted in between is a nil it dereferences (SetServiceTasksRemove, a panic seen on the
   * lab that ends dockerd). A task on a node that is down never ends here, and no reaper deletes it.
   */
  async reaped(id: string): Promise<void> {
    await poll(
      5_000,
      async () => {
        const tasks = await this.tasks(id);
        return tasks.some((t) => t.DesiredState === "remove" && isTerminal(t)) ? undefined : true;
      },
      () => new PierError("ENGINE_ERROR", `The swarm did not delete the ended tasks of ${id} in time.`),
      backOff,
    ).catch(() => undefined);
  }

  /**
   * Waits until every task of the service has ended (or the service is gone): its tasks then (the ended ones
   * until the swarm deletes them). A task on a node that is down
   * runs nowhere Pier can reach: the manager keeps its last state until the node is back.
   */
  async settled(id: string, name: string): Promise<SwarmTask[]> {
    return poll(
      this.opts.stopGraceMs + 30_000,
      async () => {
        const [tasks, nodes] = await Promise.all([this.tasks(id), this.nodes()]);
        const live = tasks.filter((t) => !isTerminal(t) && (!t.NodeID || nodes.get(t.NodeID)?.ready));
        return live.length === 0 ? tasks : undefined;
      },
      () => new PierError("ENGINE_ERROR", `The instance ${name} did not stop in time.`),
    );
  }
}
