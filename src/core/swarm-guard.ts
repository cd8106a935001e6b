/**
 * Tenant isolation on each swarm node (ADR 0019, ADR 0030): the one-machine rules carried to the traffic
 * a task sends through its node's `docker_gwbridge` (a task's only way out of its overlay: overlays have no
 * gateway to the host). A pure planner next to `planIsolation`, whose ranges and shape it reuses: a task
 * reaches public addresses, PIER_EGRESS_ALLOW, DNS and the edge's ports on the manager; not Pier's pool,
 * not private, shared or link-local ranges (the nodes' LAN, another node's dockerd or sshd); and the node
 * itself takes from the bridge only replies, ICMP, DNS and the edge's ports. Traffic is matched by the
 * interface it enters from, not by source address: the bridge's subnet is each node's own choice.
 */
import { type IsolationPlan, planIsolation } from "./isolation.js";
import { parseIpv6 } from "./plan-docker.js";
import { parseCidr } from "./subnets.js";

/** The bridge every swarm task has an interface on (its egress), made by dockerd on each node. */
export const GW_BRIDGE = "docker_gwbridge";

export interface NodeGuardInput {
  /** `pier.scope` (ADR 0004): one table per Pier installation. */
  scope: string;
  /** PIER_SUBNET_POOL: another tenant's addresses. */
  pool: string;
  /** PIER_EGRESS_ALLOW: private ranges tasks may reach. */
  allow: readonly string[];
  /** The edge's ports (PIER_HTTP_PORT, PIER_HTTPS_PORT). */
  hostPorts: readonly number[];
  /** The manager's addresses (the edge's): a task on any node reaches the edge's ports there, nothing else. */
  edges: readonly string[];
  /** The interfaces task traffic enters the node from; default `docker_gwbridge`. */
  bridges?: readonly string[];
}

/** The one-machine plan's destination sets, with the interfaces they apply to and the edge's addresses. */
export interface NodeGuardPlan
  extends Pick<
    IsolationPlan,
    "tenants4" | "tenants6" | "internal4" | "internal6" | "allow4" | "allow6" | "hostPorts"
  > {
  table: string;
  bridges: string[];
  edge4: string[];
  edge6: string[];
}

/** The node table's name for a Pier scope: beside (never the same as) the one-machine table. */
export const guardTable = (scope: string) => `pier-guard-${scope.replace(/[^A-Za-z0-9_-]/g, "")}`;

/** Interface names as the kernel takes them: at most 15 characters, no quote, slash or space. */
const validBridge = (name: string) => /^[A-Za-z0-9_.-]{1,15}$/.test(name);

/** An address (no prefix) of either family, or null when malformed. */
function familyOfAddress(address: string): 4 | 6 | null {
  if (address.includes(":")) return parseIpv6(address) ? 6 : null;
  return typeof parseCidr(`${address}/32`) === "string" ? null : 4;
}

/**
 * The rule set every node applies. Malformed edge addresses and bridge names are skipped (the planner
 * never renders what nft would refuse); the ranges come from `planIsolation` with no network of its own.
 */
export function planNodeGuard(input: NodeGuardInput): NodeGuardPlan {
  const base = planIsolation({
    scope: input.scope,
    pool: input.pool,
    networks: [],
    allow: input.allow,
    hostPorts: input.hostPorts,
  });
  const edges = [...new Set(input.edges)].sort();
  const bridges = [...new Set(input.bridges ?? [GW_BRIDGE])].filter(validBridge).sort();
  return {
    table: guardTable(input.scope),
    bridges,
    tenants4: base.tenants4,
    tenants6: base.tenants6,
    internal4: base.internal4,
    internal6: base.internal6,
    allow4: base.allow4,
    allow6: base.allow6,
    hostPorts: base.hostPorts,
    edge4: edges.filter((a) => familyOfAddress(a) === 4),
    edge6: edges.filter((a) => familyOfAddress(a) === 6),
  };
}
