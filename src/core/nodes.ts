/**
 * The machines of a swarm in Pier's words (issue 18, ADR 0030): what `pier nodes` lists, what a new machine
 * runs to join, and the rule that keeps one node taking work. Pure.
 */
export const NODE_ROLES = ["manager", "worker"] as const;
export type NodeRole = (typeof NODE_ROLES)[number];
/** active: takes new work; pause: keeps what runs, takes nothing new; drain: its work moves elsewhere. */
export const NODE_AVAILABILITIES = ["active", "pause", "drain"] as const;
export type NodeAvailability = (typeof NODE_AVAILABILITIES)[number];
export const NODE_STATES = ["ready", "down", "disconnected", "unknown"] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** One machine of the cluster. */
export interface ClusterNode {
  /** The engine's id of the node. */
  id: string;
  /** Its host name: what `pier nodes drain NAME` takes. */
  name: string;
  /** The address it is reached at by the other nodes. */
  address: string;
  role: NodeRole;
  /** A manager that leads the others (Raft's leader). */
  leader: boolean;
  availability: NodeAvailability;
  state: NodeState;
  labels: Record<string, string>;
}

/** What a machine needs to join: the engine's join token and the managers' addresses (host:port). */
export interface JoinToken {
  role: NodeRole;
  token: string;
  managers: string[];
}

/**
 * Why `node` may not be drained, or null: draining the last node that is active and ready would leave
 * nowhere for the apps' instances to run.
 */
export function drainProblem(nodes: readonly ClusterNode[], node: ClusterNode): string | null {
  if (node.availability === "drain") return null;
  const others = nodes.filter((n) => n.id !== node.id && n.availability === "active" && n.state === "ready");
  if (others.length > 0) return null;
  return `Draining ${node.name} would leave no active, ready node to run the apps' instances on: it is the last one.`;
}

/**
 * The shell lines a node runs to trust a registry's CA (Pier's own swarm registry, ADR 0030): its dockerd
 * reads `/etc/docker/certs.d/<host:port>/ca.crt` at each pull; nothing else is needed (the credentials go
 * with each service).
 */
export function registryTrustScript(address: string, caPem: string): string {
  const dir = `/etc/docker/certs.d/${address}`;
  return `mkdir -p ${dir}\ncat > ${dir}/ca.crt <<'PIER_CA'\n${caPem.trim()}\nPIER_CA\n`;
}

/** The shell command a new machine runs to join (the token is a secret: shown to admins, never logged). */
export function joinCommandLine(join: JoinToken): string {
  return ["docker", "swarm", "join", "--token", join.token, join.managers[0] ?? "MANAGER:2377"].join(" ");
}

/**
 * Whether the node guard (ADR 0019 on a swarm) protects a node now: `yes` when its guard task runs the
 * rules pier server last set, `no` when it does not (why in `guardProblem`), `off` with PIER_ISOLATION=off,
 * `unknown` when the engine did not answer about the guard (why in `guardProblem`; the other columns stand).
 */
export const NODE_GUARDED = ["yes", "no", "off", "unknown"] as const;
export type NodeGuarded = (typeof NODE_GUARDED)[number];

/** One task of the guard's global service, as the engine reports it. */
export interface GuardTask {
  nodeId: string;
  /** The engine's task state: running, pending, preparing, failed, rejected, shutdown... */
  state: string;
  /** What the orchestrator wants of it: running, or shutdown for a replaced one. */
  desired: string;
  createdAt: string;
  /** The engine's reason for a task that failed or was rejected (no such image, nft refused...). */
  error: string | null;
  /** It runs the service's current rules and image (false: an older spec, being replaced). */
  current: boolean;
}

/** The guard as pier server finds it: isolation off, or its service (null: none) and tasks. */
export type GuardReport =
  | { isolation: false }
  | GuardFound
  /** The engine did not answer about the guard: `unread` says what it answered instead. */
  | { isolation: true; unread: string };

/** The guard's service as the engine lists it (`exists` false: removed) and its tasks. */
export interface GuardFound {
  isolation: true;
  service: string;
  exists: boolean;
  tasks: readonly GuardTask[];
}

export interface NodeGuard {
  guarded: NodeGuarded;
  /** Why a node is not guarded (`no`); null otherwise. */
  guardProblem: string | null;
}

const newest = (tasks: readonly GuardTask[]) =>
  tasks.reduce<GuardTask | null>((b, t) => (!b || t.createdAt > b.createdAt ? t : b), null);

/** Whether `node` is guarded, and why not, from the guard's report. */
export function nodeGuard(node: ClusterNode, report: GuardReport): NodeGuard {
  if (!report.isolation) return { guarded: "off", guardProblem: null };
  if ("unread" in report)
    return { guarded: "unknown", guardProblem: `the guard's tasks could not be read: ${report.unread}` };
  const no = (why: string): NodeGuard => ({ guarded: "no", guardProblem: why });
  if (!report.exists)
    return no(
      `the guard service ${report.service} is missing (removed by hand?): the next start of pier server makes it again`,
    );
  const mine = report.tasks.filter((t) => t.nodeId === node.id);
  const live = newest(mine.filter((t) => t.desired === "running"));
  if (live?.state === "running")
    return live.current
      ? { guarded: "yes", guardProblem: null }
      : no("its guard task runs older rules than pier server's (it is being replaced)");
  const failed = newest(mine.filter((t) => t.error !== null));
  if (failed) return no(`its guard task ${failed.state}: ${failed.error}`);
  if (live) return no(`its guard task is ${live.state}, not running yet`);
  if (node.availability === "drain") return no("no guard task runs there: a drained node runs none");
  if (node.state !== "ready") return no(`no guard task runs there: the node is ${node.state}`);
  return no("no guard task runs there");
}

/** An instance as a move is told: its number, its node now, where it ran before and why it moved. */
export interface MovedInstance {
  number: number;
  node?: string | undefined;
  moved?: { from: string; reason: string; at: string | null } | undefined;
}

/**
 * The sentence `pier status` and the console say of an instance the swarm placed again after its node was
 * lost ("Instance 2 moved from node3 to node1 at ...: node3 down"), or null when it did not move. `at`
 * formats the time (the CLI prints it as is, the console in the reader's time).
 */
export function movedSentence(i: MovedInstance, at: (time: string) => string = (t) => t): string | null {
  if (!i.moved) return null;
  const when = i.moved.at ? ` at ${at(i.moved.at)}` : "";
  return `Instance ${i.number} moved from ${i.moved.from} to ${i.node ?? "another node"}${when}: ${i.moved.reason}`;
}

/**
 * What `pier nodes` says of a swarm whose only manager is one of several nodes, else null: a restarted
 * manager alone syncs its overlays with the others only after a while, so apps on the other nodes answer
 * again after up to ~30 s, against a few seconds with three managers (ADR 0030, docs/guide.md).
 */
export function oneManagerNote(nodes: readonly Pick<ClusterNode, "name" | "role">[]): string | null {
  const managers = nodes.filter((n) => n.role === "manager");
  if (managers.length !== 1 || nodes.length < 2) return null;
  return (
    `${managers[0]?.name} is the swarm's only manager: if its dockerd restarts, apps on the other nodes may take ` +
    "up to ~30 s to answer again, a few seconds with three managers (pier nodes join-command --manager on two " +
    "more machines, or docker node promote NAME)"
  );
}
