// The nodes' sweep (ADR 0030): a global job of the swarm that asks each node's own dockerd, through its
// socket mounted in the task, to remove forgotten release images (by reference, as the node pulled them)
// where no container uses them: the swarm never removes what a node pulled. It reaches every node, Pier's
// engine access to them or not; it runs off the pusher's path (a deploy's clean-up, an app's deletion), one
// job at a time, and the images asked for meanwhile go together in the next (each once: the waiting list is
// bounded by what was forgotten, however many deploys end meanwhile). A node that did not sweep (down,
// drained, its task failed) is owed those images: every later job asks for them again, and while a node
// down or drained is owed any, the sweep looks every `retryMs` for it ready again and then runs a job for
// it alone (not for a node whose task failed: it would fail again; the next job asks it again).
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type Docker from "dockerode";
import { type Clock, type ClockTimer, systemClock } from "../../core/clock.js";
import { LABEL } from "../../core/labels.js";
import { backOff, type SwarmNodeState, swarmNodes } from "./swarm-services.js";

/** Where the task finds its node's dockerd. */
const SOCKET_IN_TASK = "/var/run/docker.sock";

/**
 * The task's command: for each image (`<address>/<repo>@sha256:...`), one `DELETE /images/<image>` over
 * HTTP/1.0 on the node's docker socket (socat keeps its write side open, or dockerd cancels the request);
 * 200 removed, 404 not on this node, 409 in use by a container (kept): all fine; anything else fails the
 * task with its status line. The answers' last lines (what was removed) are the task's output.
 */
export const SWEEP_SCRIPT = [
  "status=0",
  `for image in $PIER_SWEEP_IMAGES; do`,
  `  answer=$(printf 'DELETE /images/%s HTTP/1.0\r\nHost: docker\r\n\r\n' "$image" | socat -t 120 - UNIX-CONNECT:${SOCKET_IN_TASK},shut-none) || exit 2`,
  `  case "$answer" in "HTTP/1."?" 200"*|"HTTP/1."?" 404"*|"HTTP/1."?" 409"*) printf '%s %s\n' "$image" "$(printf '%s\n' "$answer" | head -n 1)" ;; *) printf '%s %s\n' "$image" "$(printf '%s\n' "$answer" | head -n 1)" >&2; status=1 ;; esac`,
  "done",
  "exit $status",
].join("\n");

export interface SweepJobSpec {
  Name: string;
  Labels: Record<string, string>;
  TaskTemplate: {
    ContainerSpec: {
      Image: string;
      Labels: Record<string, string>;
      Command: string[];
      Env: string[];
      Mounts: { Type: "bind"; Source: string; Target: string }[];
    };
    RestartPolicy: { Condition: "none" };
  };
  Mode: { GlobalJob: Record<string, never> };
}

/**
 * The job's service: `image` (Pier's node tool image, by digest), the node's docker socket at `socket` on
 * each node (a path, where the swarm's templates such as `{{.Node.Hostname}}` may name the node).
 */
export function sweepJobSpec(
  name: string,
  image: string,
  socket: string,
  images: readonly string[],
  scope: string,
): SweepJobSpec {
  const labels = { [LABEL.scope]: scope, [LABEL.role]: "sweep" };
  return {
    Name: name,
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: image,
        Labels: labels,
        Command: ["/bin/sh", "-c", SWEEP_SCRIPT],
        Env: [`PIER_SWEEP_IMAGES=${images.join(" ")}`],
        Mounts: [{ Type: "bind", Source: socket, Target: SOCKET_IN_TASK }],
      },
      RestartPolicy: { Condition: "none" },
    },
    Mode: { GlobalJob: {} },
  };
}

export interface JobTask {
  NodeID?: string;
  Status?: { State?: string; Err?: string; ContainerStatus?: { ExitCode?: number } };
}

const ENDED = new Set(["complete", "failed", "rejected", "shutdown", "orphaned", "remove"]);

/**
 * A node's part in a job: swept; failed (its task ended there without completing: reported, and owed the
 * images, asked again by the next job, which a fix on the node, such as trusting the registry, lets
 * through); away (down or drained: no task runs there) or waiting (its task not ended, or none yet), owed
 * the images too.
 */
export type NodeOutcome = { kind: "swept" } | { kind: "failed" | "away" | "waiting"; why: string };

/**
 * Each node's outcome from the job's tasks. A global job puts a new task on a node whose task was rejected
 * (its image not pulled, say): one ended task is the node's answer, the others are not waited for.
 */
export function jobOutcomes(
  tasks: readonly JobTask[],
  nodes: ReadonlyMap<string, SwarmNodeState>,
): Map<string, NodeOutcome> {
  const out = new Map<string, NodeOutcome>();
  for (const [id, node] of nodes) {
    const own = tasks.filter((t) => t.NodeID === id);
    const ended = own.filter((t) => ENDED.has(t.Status?.State ?? ""));
    const last = (ended.at(-1) ?? own.at(-1))?.Status;
    if (own.some((t) => t.Status?.State === "complete")) out.set(id, { kind: "swept" });
    else if (!node.ready || !node.active) out.set(id, { kind: "away", why: node.ready ? "drained" : "down" });
    else if (ended.length > 0) out.set(id, { kind: "failed", why: last?.Err || (last?.State ?? "failed") });
    else out.set(id, { kind: "waiting", why: last?.State ? `still ${last.State}` : "no task" });
  }
  return out;
}

/** Whether every node has given its answer (the job can go). */
export const jobAnswered = (tasks: readonly JobTask[], nodes: ReadonlyMap<string, SwarmNodeState>): boolean =>
  tasks.length > 0 && [...jobOutcomes(tasks, nodes).values()].every((o) => o.kind !== "waiting");

/** The nodes that did not sweep, and why: empty when every node swept. */
export function sweepProblems(
  outcomes: ReadonlyMap<string, NodeOutcome>,
  nodeName: (id: string) => string,
): string[] {
  return [...outcomes].flatMap(([id, o]) => (o.kind === "swept" ? [] : [`${nodeName(id)}: ${o.why}`]));
}

/** What the sweep asks of the manager's engine (dockerode's calls, with the registry's pull credentials). */
export interface SweepEngine {
  /** Creates the job's service; its id. */
  createService(spec: SweepJobSpec): Promise<string>;
  listTasks(serviceId: string): Promise<JobTask[]>;
  /** Removes a service by id or name; nothing when it is not there. */
  removeService(idOrName: string): Promise<void>;
  /** The swarm's nodes by id: name, and whether it is ready (a down node's task waits for it). */
  nodes(): Promise<Map<string, SwarmNodeState>>;
}

/** The sweep's engine calls on the manager's dockerode. */
export function sweepEngine(docker: Docker, pullAuth: object | null): SweepEngine {
  return {
    createService: async (spec) => {
      const s = (await (pullAuth ? docker.createService(pullAuth, spec) : docker.createService(spec))) as {
        id?: string;
        ID?: string;
      };
      return s.id ?? s.ID ?? spec.Name;
    },
    listTasks: async (id) =>
      (await docker.listTasks({ filters: JSON.stringify({ service: [id] }) })) as JobTask[],
    removeService: async (id) => {
      await docker
        .getService(id)
        .remove()
        .catch(() => undefined);
    },
    nodes: () => swarmNodes(docker).catch(() => new Map<string, SwarmNodeState>()),
  };
}

export interface NodeSweepOptions {
  docker: SweepEngine;
  scope: string;
  /** The node tool image as the nodes pull it (by digest), published on first use. */
  image: () => Promise<string>;
  /** The nodes' docker socket path (PIER_SWARM_NODE_SOCKET). */
  socket: string;
  /** How long the job may take on all nodes; the nodes that have not finished then are reported. Default 60 s. */
  timeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };
  /** How often a node owed images is looked for, ready again (default 60 s). */
  retryMs?: number;
  clock?: Clock;
  /** Where the images owed to nodes are kept across restarts of pier server (none: in memory only). */
  owedFile?: string;
}

/** At most this many images go in one job (each ~100 characters in one environment variable). */
export const JOB_IMAGES = 400;

/** At most this many images are owed to nodes: beyond, the oldest are given up (and logged). */
export const MAX_OWED = 500;

/** The images owed to nodes that did not sweep them: image -> the nodes' ids. */
export type Owed = Map<string, Set<string>>;

/**
 * What is owed after a job that asked for `images`: each image to every node that did not sweep (down,
 * drained, no task in time, its task failed). A node no longer in the swarm is owed nothing.
 */
export function owedAfter(
  owed: Owed,
  images: readonly string[],
  outcomes: ReadonlyMap<string, NodeOutcome>,
): Owed {
  const unreached = [...outcomes].flatMap(([id, o]) => (o.kind === "swept" ? [] : [id]));
  const next: Owed = new Map();
  for (const [image, nodes] of owed)
    if (!images.includes(image)) {
      const still = [...nodes].filter((id) => outcomes.has(id));
      if (still.length > 0) next.set(image, new Set(still));
    }
  if (unreached.length > 0) for (const image of images) next.set(image, new Set(unreached));
  return next;
}

function readOwed(file: string | undefined): Owed {
  if (!file) return new Map();
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    return new Map(
      Object.entries(raw)
        .filter((e): e is [string, string[]] => Array.isArray(e[1]))
        .map(([image, nodes]) => [image, new Set(nodes.filter((n) => typeof n === "string"))]),
    );
  } catch {
    return new Map(); // none yet, or unreadable: nothing is owed (a node keeps what it kept before)
  }
}

export class NodeSweep {
  /** The images asked for since the running job started, by app. */
  private pending = new Map<string, Set<string>>();
  /** The job that will take them (one at a time), and when it has run. */
  private next: Promise<string[]> | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private owed: Owed;
  private retry: ClockTimer | null = null;
  /** The nodes whose task failed in the last job: no job is run for them alone (the next one asks them). */
  private failing = new Set<string>();

  constructor(private readonly o: NodeSweepOptions) {
    this.owed = readOwed(o.owedFile);
    this.scheduleRetry();
  }

  /** The images owed to nodes, and to which (their ids). */
  owedImages(): Owed {
    return new Map([...this.owed].map(([image, nodes]) => [image, new Set(nodes)]));
  }

  /**
   * An image published again (an identical rebuild of a pruned release has its digest): no longer owed, so a
   * node that pulls it for a new instance does not lose it to a later job.
   */
  published(image: string): void {
    if (this.owed.delete(image)) this.saveOwed();
  }

  /**
   * Removes `images` from every node where no container uses them, in the next job (with the other apps'
   * asked for meanwhile); resolves once that job ran, with the nodes that did not sweep and why.
   */
  sweep(appId: string, images: readonly string[]): Promise<string[]> {
    this.pending.set(appId, new Set([...(this.pending.get(appId) ?? []), ...images]));
    return this.enqueue();
  }

  private enqueue(): Promise<string[]> {
    if (!this.next) {
      const after = this.running;
      this.next = after.then(() => {
        const batch = this.pending;
        this.pending = new Map();
        this.next = null;
        return this.run(batch);
      });
      this.running = this.next.catch(() => undefined);
    }
    return this.next;
  }

  private async run(batch: Map<string, Set<string>>): Promise<string[]> {
    const apps = [...batch.keys()];
    try {
      const images = [...new Set([...[...batch.values()].flatMap((i) => [...i]), ...this.owed.keys()])];
      const problems: string[] = [];
      // One variable of the task holds a job's images: a few hundred, far below the kernel's 128 KiB.
      for (let i = 0; i < images.length; i += JOB_IMAGES)
        problems.push(...(await this.job(images.slice(i, i + JOB_IMAGES))));
      const nodes = [...new Set(problems)];
      if (nodes.length > 0)
        this.o.logger?.warn(
          { apps, nodes },
          "swarm sweep: some nodes keep the apps' unused images (one down or drained is asked again once it is back)",
        );
      return nodes;
    } catch (e) {
      this.o.logger?.warn({ apps, err: (e as Error).message }, "swarm sweep: the job could not run");
      throw e;
    }
  }

  private async job(images: string[]): Promise<string[]> {
    const { docker } = this.o;
    const name = `pier-sweep-${this.o.scope}`.slice(0, 63);
    await docker.removeService(name);
    const id = await docker.createService(
      sweepJobSpec(name, await this.o.image(), this.o.socket, images, this.o.scope),
    );
    try {
      const { tasks, nodes } = await this.ended(id);
      const outcomes = jobOutcomes(tasks, nodes);
      for (const [node, o] of outcomes)
        if (o.kind === "failed") this.failing.add(node);
        else if (o.kind === "swept") this.failing.delete(node);
      // The nodes unread (the manager did not answer): what is owed stays as it was.
      if (nodes.size > 0) this.owe(owedAfter(this.owed, images, outcomes));
      return sweepProblems(outcomes, (n) => nodes.get(n)?.name ?? n);
    } finally {
      await docker.removeService(id);
    }
  }

  /**
   * The job's tasks once every node has answered (a task ended there, or the node cannot run one: down or
   * drained, the job goes before it is back), or when the time is up, as they are then; with the nodes as
   * last read.
   */
  private async ended(id: string): Promise<{ tasks: JobTask[]; nodes: Map<string, SwarmNodeState> }> {
    const until = Date.now() + (this.o.timeoutMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      const [tasks, nodes] = await Promise.all([this.o.docker.listTasks(id), this.o.docker.nodes()]);
      if (jobAnswered(tasks, nodes) || Date.now() > until) return { tasks, nodes };
      await new Promise((r) => setTimeout(r, Math.max(backOff(attempt), 100)));
    }
  }

  /** Keeps what is now owed (the oldest given up beyond MAX_OWED), and looks for its nodes while any is. */
  private owe(next: Owed): void {
    const over = [...next.keys()].slice(0, Math.max(0, next.size - MAX_OWED));
    for (const image of over) next.delete(image);
    if (over.length > 0)
      this.o.logger?.warn(
        { images: over.length },
        `swarm sweep: more than ${MAX_OWED} images owed to nodes that did not sweep; the oldest are given up (docker image prune -a on those nodes frees them)`,
      );
    const paid = [...this.owed.keys()].filter((image) => !next.has(image));
    if (paid.length > 0 && this.owed.size > 0)
      this.o.logger?.info?.(
        { images: paid.length, owed: next.size },
        "swarm sweep: images owed to nodes are gone from them",
      );
    this.owed = next;
    this.saveOwed();
    this.scheduleRetry();
  }

  private saveOwed(): void {
    const file = this.o.owedFile;
    if (!file) return;
    const body = JSON.stringify(Object.fromEntries([...this.owed].map(([i, n]) => [i, [...n]])));
    try {
      writeFileSync(`${file}.new`, body, { mode: 0o600 });
      renameSync(`${file}.new`, file);
    } catch (e) {
      this.o.logger?.warn(
        { err: (e as Error).message },
        `swarm sweep: could not keep what nodes are owed in ${file}`,
      );
    }
  }

  /**
   * While nodes are owed images: every retryMs, a job once any of them is ready (not before), unless its
   * task failed in the last job.
   */
  private scheduleRetry(): void {
    if (this.retry || this.owed.size === 0) return;
    const clock = this.o.clock ?? systemClock;
    this.retry = clock.setTimeout(() => {
      this.retry = null;
      void this.retryOwed();
    }, this.o.retryMs ?? 60_000);
  }

  private async retryOwed(): Promise<void> {
    const owing = new Set(
      [...this.owed.values()].flatMap((nodes) => [...nodes]).filter((id) => !this.failing.has(id)),
    );
    const nodes = await this.o.docker.nodes();
    // A drained node runs no task of the job: it is looked for again once active.
    if ([...owing].some((id) => nodes.get(id)?.ready && nodes.get(id)?.active))
      await this.enqueue().catch(() => undefined);
    this.scheduleRetry();
  }
}
