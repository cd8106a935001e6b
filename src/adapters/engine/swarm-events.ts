// EngineEvents from the swarm (ADR 0030): an instance's task that ends, is lost with its node, or starts (on
// another node after a loss, at a new overlay address) gives the same EngineEvent as a container's on one
// dockerd. A task's container events happen on its node only, and the manager's event stream has no task
// events on Docker 20.10: the task list is polled and each poll compared with the one before (a pure diff).
import { LABEL } from "../../core/labels.js";
import type { EngineEvent } from "../../core/ports.js";
import { isTerminal, type SwarmTask } from "./swarm-tasks.js";

/** Where a task is, as far as events go. */
type Phase = "pending" | "running" | "lost" | "ended";

/** One poll: each task's phase, its instance and its node's name, by task id. */
export type TaskPhases = Map<string, { phase: Phase; service?: LabelledService; node?: string }>;

/** What the events read of a service: its id (the instance's) and its labels. */
export interface LabelledService {
  ID: string;
  Spec: { Labels?: Record<string, string> };
}

export interface NodeState {
  name: string;
  ready: boolean;
}

function phaseOf(t: SwarmTask, nodes: ReadonlyMap<string, NodeState>): Phase {
  if (isTerminal(t)) return "ended";
  if (t.NodeID && nodes.get(t.NodeID)?.ready === false) return "lost";
  return t.Status?.State === "running" ? "running" : "pending";
}

/**
 * The events between two polls: a task that runs now and did not (a start; `readdressed` when its instance
 * had an earlier task, whose address it does not keep), a running task whose node is down now (a die with
 * no exit code, `reason` "<node> down"), a task that ended (a die with its exit code). `before` null: the
 * first poll, no events. Every event names the instance by its service id, as `listInstances` does.
 */
export function taskEvents(
  before: TaskPhases | null,
  services: readonly LabelledService[],
  tasks: readonly SwarmTask[],
  nodes: ReadonlyMap<string, NodeState>,
  now: string,
): { phases: TaskPhases; events: EngineEvent[] } {
  const byId = new Map(services.map((s) => [s.ID, s]));
  const nodeOf = (t: SwarmTask) => (t.NodeID ? (nodes.get(t.NodeID)?.name ?? t.NodeID) : undefined);
  const phases: TaskPhases = new Map(
    tasks.map((t) => [
      t.ID,
      { phase: phaseOf(t, nodes), service: t.ServiceID ? byId.get(t.ServiceID) : undefined, node: nodeOf(t) },
    ]),
  );
  if (!before) return { phases, events: [] };
  const events: EngineEvent[] = vanished(before, phases, now);
  for (const t of tasks) {
    const s = phases.get(t.ID)?.service;
    const phase = phases.get(t.ID)?.phase;
    const was = before.get(t.ID)?.phase;
    if (!s || phase === was) continue;
    const node = nodeOf(t);
    const base = {
      containerId: s.ID,
      slot: false,
      labels: s.Spec.Labels ?? {},
      at: t.Status?.Timestamp ?? now,
      ...(node ? { node } : {}),
    };
    if (phase === "running") {
      const earlier = tasks.some((o) => o.ServiceID === t.ServiceID && o.ID !== t.ID);
      events.push({ ...base, type: "start", exitCode: null, ...(earlier ? { readdressed: true } : {}) });
    } else if (phase === "lost" && was === "running") {
      events.push({ ...base, type: "die", exitCode: null, at: now, reason: `${node ?? "its node"} down` });
    } else if (phase === "ended" && (was === "running" || (was === undefined && ranAndEnded(t)))) {
      events.push({ ...base, type: "die", exitCode: t.Status?.ContainerStatus?.ExitCode ?? null });
    }
  }
  return { phases, events };
}

/**
 * Tasks that ran at the last poll and are gone from the list now: a scale to 0 or a removal marks them
 * `remove`, and the swarm deletes them once their container stopped, often between two polls. A die whose
 * exit code nobody can read any more (null).
 */
function vanished(before: TaskPhases, now: TaskPhases, at: string): EngineEvent[] {
  const events: EngineEvent[] = [];
  for (const [id, was] of before) {
    if (now.has(id) || was.phase !== "running" || !was.service) continue;
    const s = was.service;
    const node = was.node ? { node: was.node } : {};
    events.push({
      type: "die",
      containerId: s.ID,
      slot: false,
      labels: s.Spec.Labels ?? {},
      exitCode: null,
      at,
      ...node,
    });
  }
  return events;
}

/** A task first seen ended that did run (it started and ended between two polls). */
const ranAndEnded = (t: SwarmTask) => ["complete", "failed"].includes(t.Status?.State ?? "");

/** What the poller reads of the swarm: Pier's services, their tasks, the nodes. */
export interface SwarmReads {
  services(): Promise<LabelledService[]>;
  tasksOf(serviceIds: string[]): Promise<SwarmTask[]>;
  nodes(): Promise<Map<string, NodeState>>;
}

/**
 * Polls the swarm every `pollMs` (1 s) until `signal` aborts; returns when the manager stops answering (the
 * engine loop then waits for it and reconciles, as when a dockerd's event stream ends).
 */
export async function followSwarm(
  reads: SwarmReads,
  onEvent: (e: EngineEvent) => void,
  signal: AbortSignal,
  pollMs = 1000,
): Promise<void> {
  let before: TaskPhases | null = null;
  while (!signal.aborted) {
    try {
      const services = (await reads.services()).filter((s) => s.Spec.Labels?.[LABEL.app]);
      const [tasks, nodes] = await Promise.all([
        services.length ? reads.tasksOf(services.map((s) => s.ID)) : Promise.resolve([]),
        reads.nodes(),
      ]);
      const next = taskEvents(before, services, tasks, nodes, new Date().toISOString());
      before = next.phases;
      for (const e of next.events) onEvent(e);
    } catch {
      return;
    }
    await pause(pollMs, signal);
  }
}

/** Waits `ms`, or less when `signal` aborts (its listener removed either way: one poll must not add one). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
