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
 * The task that is the instance now: the newest the orchestrator wants running, else the newest (a stopped
 * instance's last task, to say how it ended). Null when the service has none.
 */
export function currentTask(tasks: readonly SwarmTask[]): SwarmTask | null {
  const newest = (list: readonly SwarmTask[]) =>
    list.reduce<SwarmTask | null>(
      (best, t) => (!best || (t.CreatedAt ?? "") > (best.CreatedAt ?? "") ? t : best),
      null,
    );
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
  const why = t.Status?.Err || t.Status?.Message || state;
  if (state === "failed" && /non-zero exit/.test(why)) return { ran: true };
  if (TERMINAL.has(state)) return { ran: false, why };
  return null;
}

const PULL_FAILURE =
  /no such image|x509|certificate|unauthorized|authentication required|pull access denied|manifest unknown|connection refused|i\/o timeout|no route to host/i;

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

/** The instance a service is, from its tasks; `nodeName` names a task's node. */
export function instanceOf(
  s: SwarmService,
  tasks: readonly SwarmTask[],
  nodeName: (id: string) => string | undefined,
): InstanceInfo {
  const labels = s.Spec.Labels ?? {};
  const task = currentTask(tasks);
  const state = task?.Status?.State ?? "new";
  const running = state === "running";
  const address = running ? taskAddress(task) : null;
  const node = task?.NodeID ? nodeName(task.NodeID) : undefined;
  return {
    id: s.ID,
    name: s.Spec.Name,
    labels,
    state,
    running,
    startedAt: running ? (task?.Status?.Timestamp ?? null) : null,
    // Tasks that ended by themselves and were replaced (a stop is a shutdown: not counted).
    restarts: tasks.filter(
      (t) => t.DesiredState !== "running" && ["failed", "complete"].includes(t.Status?.State ?? ""),
    ).length,
    exitCode: running ? null : (task?.Status?.ContainerStatus?.ExitCode ?? null),
    http: target(address, labels[LABEL.httpPort]),
    tcp: target(address, labels[LABEL.tcpPort]),
    networkAddress: address,
    ...(node ? { node } : {}),
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
