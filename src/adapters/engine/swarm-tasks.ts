// A Swarm service and its tasks read as a Pier instance (ADR 0030): which task is the instance now, whether
// it runs, on which node, at which overlay address; how a task ended. Pure, tested with tables of cases.
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import type { InstanceInfo, RoutableInstance, RouteTarget } from "../../core/ports.js";
import type { ServiceSpec } from "./swarm-spec.js";

/** The fields Pier reads of the engine's task object (GET /tasks). */
export interface SwarmTask {
  ID: string;
  ServiceID?: string;
  NodeID?: string;
  CreatedAt?: string;
  DesiredState?: string;
  /** The container's labels: the instance's (its app, its deployment). */
  Spec?: {
    ContainerSpec?: { Labels?: Record<string, string> };
    /** The memory the swarm holds for it on its node. */
    Resources?: { Reservations?: { MemoryBytes?: number } };
  };
  Status?: {
    Timestamp?: string;
    State?: string;
    Message?: string;
    Err?: string;
    ContainerStatus?: { ContainerID?: string; ExitCode?: number };
  };
  NetworksAttachments?: { Network?: { Spec?: { Name?: string } }; Addresses?: string[] }[];
}

/** The fields Pier reads of the engine's service object (GET /services). */
export interface SwarmService {
  ID: string;
  Version?: { Index?: number };
  Spec: ServiceSpec;
}

/** States a task never leaves. */
const TERMINAL = new Set(["complete", "failed", "shutdown", "rejected", "orphaned", "remove"]);

export const isTerminal = (t: SwarmTask): boolean => TERMINAL.has(t.Status?.State ?? "");

/**
 * Whether the swarm itself brings the service's task back when it ends (1+ replicas, restarted whatever its
 * exit): the tasks to wait past are then those ended or not wanted running, the swarm's next start is the
 * one after them. Null when a start needs Pier's forced update (scaled to 0, or a task never restarted).
 */
export function swarmRestarts(s: SwarmService, tasks: readonly SwarmTask[]): Set<string> | null {
  if (s.Spec.Mode.Replicated.Replicas < 1 || s.Spec.TaskTemplate.RestartPolicy.Condition !== "any")
    return null;
  return new Set(tasks.filter((t) => isTerminal(t) || t.DesiredState !== "running").map((t) => t.ID));
}

/** What the engine says of a task's state: its error, else its message, else the state itself. */
const taskReason = (t: SwarmTask): string => t.Status?.Err || t.Status?.Message || (t.Status?.State ?? "");

/** The task created last (null for none). */
const newest = (list: readonly SwarmTask[]): SwarmTask | null =>
  list.reduce<SwarmTask | null>(
    (best, t) => (!best || (t.CreatedAt ?? "") > (best.CreatedAt ?? "") ? t : best),
    null,
  );

/**
 * The task that is the instance now: the newest the orchestrator wants running, else the newest (a stopped
 * instance's last task, to say how it ended). Null when the service has none.
 */
export function currentTask(tasks: readonly SwarmTask[]): SwarmTask | null {
  return newest(tasks.filter((t) => t.DesiredState === "running")) ?? newest(tasks);
}

/**
 * How a task's start went: `ran` once its process started (it runs, or ran and ended with an exit code),
 * `failed` with the engine's reason when it never did (rejected: no such image, no node fits), else null
 * (still on its way).
 */
export function startOutcome(t: SwarmTask): { ran: true } | { ran: false; why: string } | null {
  const state = t.Status?.State ?? "";
  if (state === "running" || state === "complete") return { ran: true };
  const why = taskReason(t);
  if (state === "failed" && /non-zero exit/.test(why)) return { ran: true };
  if (TERMINAL.has(state)) return { ran: false, why };
  return null;
}

/** How long a task may wait for a node that fits before its start fails (the swarm would wait for ever). */
export const NO_NODE_GRACE_MS = 15_000;

/**
 * Why no node can take a task that has waited `waitedMs` for one (the scheduler's `no suitable node`), or
 * null while it may still find one: every node drained, paused or down, or its constraint (an fs bucket's
 * node) on a node that is not available.
 */
export function unplaceable(t: SwarmTask, waitedMs: number): string | null {
  const why = [t.Status?.Err, t.Status?.Message].find((m) => m && /no suitable node/i.test(m));
  if (t.Status?.State !== "pending" || !why || waitedMs < NO_NODE_GRACE_MS) return null;
  return `no node can run it (${why})`;
}

const PULL_FAILURE =
  /no such image|x509|certificate|unauthorized|authentication required|pull access denied|manifest unknown|connection refused|i\/o timeout|no route to host/i;

/**
 * A new task, other than the current one, that the swarm rejected because its node could not pull the image.
 * The swarm replaces a rejected task at once, on the same node when the instance is pinned there, so when a
 * start is looked at, the current task may already be the next try, still preparing, bound to fail the same
 * way: the rejected one says why. Other rejections are left to the swarm's next try, as before.
 */
export function pullRejected(fresh: readonly SwarmTask[], current: SwarmTask): SwarmTask | null {
  return newest(
    fresh.filter(
      (t) => t.ID !== current.ID && t.Status?.State === "rejected" && PULL_FAILURE.test(taskReason(t)),
    ),
  );
}

/**
 * Why an instance's task never started, naming its node; when the node could not pull the release image
 * (it does not trust or reach the registry, or has no credentials), what to do about it.
 */
export function startFailure(
  instance: string,
  node: string | null,
  why: string,
  registry: string | null,
): PierError {
  const where = node ? ` on ${node}` : "";
  if (!PULL_FAILURE.test(why))
    return new PierError("ENGINE_ERROR", `The instance ${instance} did not start${where}: ${why}`);
  return new PierError(
    "ENGINE_ERROR",
    `The instance ${instance} did not start${where}: the node could not pull its release image${registry ? ` from the registry ${registry}` : ""} (${why}).`,
    `Check that ${node ?? "every node"} reaches ${registry ?? "the registry"} and trusts its CA: run there the lines \`pier nodes join-command\` prints after its join line.`,
  );
}

/** The task's address on its overlay (the first network attachment that is not the ingress). */
export function taskAddress(t: SwarmTask | null): string | null {
  const a = (t?.NetworksAttachments ?? []).find(
    (n) => n.Network?.Spec?.Name !== "ingress" && (n.Addresses?.length ?? 0) > 0,
  );
  return a?.Addresses?.[0]?.replace(/\/\d+$/, "") ?? null;
}

const target = (address: string | null, port: string | undefined): RouteTarget | null =>
  address && port ? { host: address, port: Number(port) } : null;

/** States of a task that ended by itself (a restart of the instance, not a loss). */
const ENDED_BY_ITSELF = new Set(["failed", "complete"]);

/**
 * Whether the swarm placed the running task `now` on another node after losing its predecessor there: the
 * predecessor's node is down now (`nodeDown`), or the swarm orphaned the task and its node has left the
 * swarm. Once that node is back, nothing (the instance's last exit keeps the loss). A task that ended by itself is a restart (counted in `restarts`), and one Pier replaced is no loss.
 */
export function movedFrom(
  tasks: readonly SwarmTask[],
  now: SwarmTask | null,
  nodeName: (id: string) => string | undefined,
  nodeDown: (id: string) => boolean,
): InstanceInfo["moved"] {
  if (now?.Status?.State !== "running" || !now.NodeID) return undefined;
  const before = tasks
    .filter((t) => t.ID !== now.ID && (t.CreatedAt ?? "") <= (now.CreatedAt ?? ""))
    .sort((a, b) => (b.CreatedAt ?? "").localeCompare(a.CreatedAt ?? ""))[0];
  if (!before?.NodeID || before.NodeID === now.NodeID) return undefined;
  if (ENDED_BY_ITSELF.has(before.Status?.State ?? "")) return undefined;
  const known = nodeName(before.NodeID);
  const from = known ?? before.NodeID;
  // An orphaned task stays orphaned when its node comes back: the move is news only while the node is down
  // or gone from the swarm; after that the loss stays as the instance's last exit (its die event).
  const reason = nodeDown(before.NodeID)
    ? `${from} down`
    : before.Status?.State === "orphaned" && known === undefined
      ? `${from} was lost`
      : null;
  return reason ? { from, reason, at: now.CreatedAt ?? null } : undefined;
}

/**
 * The instance a service is, from its tasks; `nodeName` names a task's node, `nodeDown` says whether it is
 * down now (an instance moved off it says so); `ended`: how it ended when it stopped, for a stopped one
 * whose task the swarm deleted since (swarm-kept.ts).
 */
export function instanceOf(
  s: SwarmService,
  tasks: readonly SwarmTask[],
  nodeName: (id: string) => string | undefined,
  nodeDown: (id: string) => boolean = () => false,
  ended: { state: string; exitCode: number | null } | null = null,
): InstanceInfo {
  const labels = s.Spec.Labels ?? {};
  const task = currentTask(tasks);
  const state = task?.Status?.State ?? ended?.state ?? "new";
  const running = state === "running";
  const address = running ? taskAddress(task) : null;
  const node = task?.NodeID ? nodeName(task.NodeID) : undefined;
  const moved = movedFrom(tasks, task, nodeName, nodeDown);
  return {
    id: s.ID,
    name: s.Spec.Name,
    labels,
    state,
    running,
    startedAt: running ? (task?.Status?.Timestamp ?? null) : null,
    // Tasks that ended by themselves and were replaced (a stop is a shutdown: not counted).
    restarts: tasks.filter((t) => t.DesiredState !== "running" && ENDED_BY_ITSELF.has(t.Status?.State ?? ""))
      .length,
    exitCode: running
      ? null
      : (task?.Status?.ContainerStatus?.ExitCode ?? (task ? null : (ended?.exitCode ?? null))),
    http: target(address, labels[LABEL.httpPort]),
    tcp: target(address, labels[LABEL.tcpPort]),
    networkAddress: address,
    ...(node ? { node } : {}),
    ...(moved ? { moved } : {}),
  };
}

/** What routing needs of an instance (the edge reaches the task over the overlay). */
export function routableOf(i: InstanceInfo): RoutableInstance {
  return {
    id: i.id,
    labels: i.labels,
    running: i.running,
    http: i.http,
    ...(i.node ? { node: i.node } : {}),
  };
}
