// The nodes' sweep (ADR 0030): a global job of the swarm that asks each node's own dockerd, through its
// socket mounted in the task, to prune an app's images no container uses: the release images the node
// pulled by digest, which the swarm never removes. It reaches every node, Pier's engine access to them or
// not; it runs off the pusher's path (a deploy's clean-up, an app's deletion), one at a time.
import type Docker from "dockerode";
import { LABEL } from "../../core/labels.js";
import { backOff } from "./swarm-services.js";

/** Where the task finds its node's dockerd. */
const SOCKET_IN_TASK = "/var/run/docker.sock";

/** The `filters` of `POST /images/prune` for one app's images no container uses, URL-encoded. */
export function pruneFilters(appId: string): string {
  return encodeURIComponent(JSON.stringify({ dangling: ["true"], label: [`${LABEL.app}=${appId}`] }));
}

/**
 * The task's command: one HTTP/1.0 request on the node's docker socket (socat keeps its write side open,
 * or dockerd cancels the request), its status line checked; the answer's body (what was deleted) is the
 * task's output. Exit 1 with the status line when dockerd refuses.
 */
export const SWEEP_SCRIPT = [
  `answer=$(printf 'POST /images/prune?filters=%s HTTP/1.0\\r\\nHost: docker\\r\\n\\r\\n' "$PIER_PRUNE_FILTERS" | socat -t 120 - UNIX-CONNECT:${SOCKET_IN_TASK},shut-none) || exit 2`,
  `case "$answer" in "HTTP/1."?" 200"*) printf '%s\\n' "$answer" | tail -n 1 ;; *) printf '%s\\n' "$answer" | head -n 1 >&2; exit 1 ;; esac`,
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
  appId: string,
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
        Env: [`PIER_PRUNE_FILTERS=${pruneFilters(appId)}`],
        Mounts: [{ Type: "bind", Source: socket, Target: SOCKET_IN_TASK }],
      },
      RestartPolicy: { Condition: "none" },
    },
    Mode: { GlobalJob: {} },
  };
}

interface JobTask {
  NodeID?: string;
  Status?: { State?: string; Err?: string; ContainerStatus?: { ExitCode?: number } };
}

const ENDED = new Set(["complete", "failed", "rejected", "shutdown", "orphaned", "remove"]);

/** The nodes whose task did not complete, and why: empty when every node swept. */
export function sweepProblems(tasks: readonly JobTask[], nodeName: (id: string) => string): string[] {
  return tasks
    .filter((t) => t.Status?.State !== "complete")
    .map((t) => {
      const state = t.Status?.State ?? "new";
      const why = t.Status?.Err || (ENDED.has(state) ? state : `still ${state}`);
      return `${nodeName(t.NodeID ?? "?")}: ${why}`;
    });
}

export interface NodeSweepOptions {
  docker: Docker;
  scope: string;
  /** The node tool image as the nodes pull it (by digest), published on first use. */
  image: () => Promise<string>;
  /** The nodes' docker socket path (PIER_SWARM_NODE_SOCKET). */
  socket: string;
  pullAuth: { username: string; password: string; serveraddress: string } | null;
  /** How long the job may take on all nodes; the nodes that have not finished then are reported. Default 60 s. */
  timeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void };
}

export class NodeSweep {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: NodeSweepOptions) {}

  /** Sweeps `appId`'s unused images from every node, after the sweeps asked before; the nodes that did not, and why. */
  sweep(appId: string): Promise<string[]> {
    const run = this.queue.then(() => this.run(appId));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async run(appId: string): Promise<string[]> {
    try {
      return await this.job(appId);
    } catch (e) {
      this.o.logger?.warn({ appId, err: (e as Error).message }, "swarm sweep: the job could not run");
      throw e;
    }
  }

  private async job(appId: string): Promise<string[]> {
    const { docker } = this.o;
    const name = `pier-sweep-${this.o.scope}-${appId}`.slice(0, 63);
    await removeService(docker, name);
    const spec = sweepJobSpec(name, await this.o.image(), this.o.socket, appId, this.o.scope);
    const created = (await (this.o.pullAuth
      ? docker.createService(this.o.pullAuth, spec)
      : docker.createService(spec))) as { id?: string; ID?: string };
    const id = created.id ?? created.ID ?? name;
    try {
      const tasks = await this.ended(id);
      const names = await nodeNames(docker);
      const problems = sweepProblems(tasks, (n) => names.get(n) ?? n);
      if (problems.length > 0)
        this.o.logger?.warn(
          { appId, nodes: problems },
          "swarm sweep: some nodes keep the app's unused images",
        );
      return problems;
    } finally {
      await removeService(docker, id);
    }
  }

  /** The job's tasks once each has ended (or when the time is up, as they are then). */
  private async ended(id: string): Promise<JobTask[]> {
    const until = Date.now() + (this.o.timeoutMs ?? 60_000);
    let tasks: JobTask[] = [];
    for (let attempt = 0; ; attempt++) {
      tasks = (await this.o.docker.listTasks({ filters: JSON.stringify({ service: [id] }) })) as JobTask[];
      const done = tasks.length > 0 && tasks.every((t) => ENDED.has(t.Status?.State ?? ""));
      if (done || Date.now() > until) return tasks;
      await new Promise((r) => setTimeout(r, Math.max(backOff(attempt), 100)));
    }
  }
}

async function removeService(docker: Docker, idOrName: string): Promise<void> {
  await docker
    .getService(idOrName)
    .remove()
    .catch(() => undefined);
}

async function nodeNames(docker: Docker): Promise<Map<string, string>> {
  const nodes = (await docker.listNodes().catch(() => [])) as {
    ID: string;
    Description?: { Hostname?: string };
  }[];
  return new Map(nodes.map((n) => [n.ID, n.Description?.Hostname ?? n.ID]));
}
