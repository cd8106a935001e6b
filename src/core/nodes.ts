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
