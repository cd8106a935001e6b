// The node guard (ADR 0019, ADR 0030): the plan of src/core/swarm-guard.ts as one nftables table, and the
// global service that applies it on every node and keeps it. Both pure, for the unit tests; the service is
// created and removed by the swarm driver like Pier's other services.
import { LABEL } from "../core/labels.js";
import type { GuardFound, GuardTask } from "../core/nodes.js";
import type { NodeGuardPlan } from "../core/swarm-guard.js";
import type { EngineServiceSpec } from "./engine/swarm-spec.js";
import { egressChain, hostChain, policySets } from "./nft-isolation.js";

/** Before the engine's own filter chains (iptables-nft's, priority 0): a drop here is final. */
const PRIORITY = "filter - 10";
/** Seconds between two checks that the table is still there (someone ran `nft flush ruleset`). */
export const GUARD_RECHECK_SECONDS = 5;

const elements = (xs: readonly string[]) => (xs.length > 0 ? ` elements = { ${xs.join(", ")} };` : "");
const set = (name: string, type: "ipv4_addr" | "ipv6_addr", xs: readonly string[]) =>
  `  set ${name} { type ${type}; flags interval; auto-merge;${elements(xs)} }`;
const addrSet = (name: string, type: "ipv4_addr" | "ipv6_addr", xs: readonly string[]) =>
  `  set ${name} { type ${type};${elements(xs)} }`;

/** The edge's ports on the manager's addresses: the one thing of the nodes' LAN a task reaches. */
function edgeRules(plan: NodeGuardPlan): string[] {
  if (plan.hostPorts.length === 0) return [];
  const ports = `tcp dport { ${plan.hostPorts.join(", ")} } return`;
  return [`    ip daddr @edge4 ${ports}`, `    ip6 daddr @edge6 ${ports}`];
}

/**
 * The plan as an nftables script (`nft -f -`): the table is created if missing, deleted and made again in
 * one transaction, so packets see the old rules or the new ones, never none. No bridge: the table deleted.
 */
export function renderGuardNft(plan: NodeGuardPlan): string {
  const t = `inet ${plan.table}`;
  const head = [`table ${t} {}`, `delete table ${t}`];
  if (plan.bridges.length === 0) return `${head.join("\n")}\n`;
  const bridges = `{ ${plan.bridges.map((b) => `"${b}"`).join(", ")} }`;
  return [
    ...head,
    `table ${t} {`,
    ...policySets(plan, set),
    addrSet("edge4", "ipv4_addr", plan.edge4),
    addrSet("edge6", "ipv6_addr", plan.edge6),
    ...egressChain(edgeRules(plan)),
    // By number (ICMP, ICMPv6): the guard's image has no /etc/protocols to resolve the names.
    ...hostChain(plan.hostPorts, "1, 58"),
    "  chain forward {",
    `    type filter hook forward priority ${PRIORITY}; policy accept;`,
    "    ct state established,related accept",
    `    iifname ${bridges} jump egress`,
    "  }",
    "  chain input {",
    `    type filter hook input priority ${PRIORITY}; policy accept;`,
    `    iifname ${bridges} jump host`,
    "  }",
    "}",
    "",
  ].join("\n");
}

/**
 * The guard's loop, run by `sh -c` in the service's container (host network, NET_ADMIN): apply the table,
 * apply it again whenever it is gone, delete it when the task is stopped (the service removed or
 * updated: the next task applies its own). The rules come in PIER_GUARD_RULES (not a secret: addresses).
 */
export function guardLoop(table: string): string {
  const t = `inet ${table}`;
  return [
    'apply() { printf "%s" "$PIER_GUARD_RULES" | nft -f - || echo "pier-guard: nft refused the rules" >&2; }',
    `trap 'nft delete table ${t} 2>/dev/null; exit 0' TERM INT`,
    "apply",
    "while :; do",
    `  sleep ${GUARD_RECHECK_SECONDS} & wait $!`,
    `  nft list table ${t} >/dev/null 2>&1 || apply`,
    "done",
  ].join("\n");
}

/** The guard's service spec: the engine's (API 1.41), with a command, NET_ADMIN, one task on every node. */
export type GuardServiceSpec = EngineServiceSpec & {
  TaskTemplate: { ContainerSpec: { Command: string[]; CapabilityAdd: string[] } };
  /** One task on every node, the ones joined later included. */
  Mode: { Global: Record<string, never> };
};

/** The service that guards every node of the swarm for one Pier installation: `pier-guard-<scope>`. */
export function guardServiceSpec(
  plan: NodeGuardPlan,
  image: string,
  own: Record<string, string>,
): GuardServiceSpec {
  const labels = { ...own, [LABEL.role]: "guard" };
  return {
    Name: plan.table,
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: image,
        Labels: labels,
        Command: ["/bin/sh", "-c", guardLoop(plan.table)],
        Env: [`PIER_GUARD_RULES=${renderGuardNft(plan)}`],
        // A service's task may be given a capability (API 1.41): NET_ADMIN writes the node's nftables.
        CapabilityAdd: ["CAP_NET_ADMIN"],
        StopGracePeriod: 10_000_000_000,
      },
      RestartPolicy: { Condition: "any", Delay: 1_000_000_000 },
      // `host`: the task's nft writes the node's own tables.
      Networks: [{ Target: "host" }],
    },
    Mode: { Global: {} },
  };
}

/** The guard's image as the set-up builds it (images/guard/build.sh). */
export const GUARD_IMAGE = "pier/guard:1";

/** The fields Pier reads of a service (GET /services). */
export interface GuardService {
  ID: string;
  Version?: { Index?: number };
  Spec?: { Name?: string; TaskTemplate?: { ContainerSpec?: { Env?: string[]; Image?: string } } };
}

/** The fields Pier reads of a task of the guard's service (GET /tasks). */
export interface GuardEngineTask {
  NodeID?: string;
  CreatedAt?: string;
  DesiredState?: string;
  Status?: { State?: string; Err?: string };
  Spec?: { ContainerSpec?: { Env?: string[]; Image?: string } };
}

/** What the guard needs of the manager's engine (dockerode's, narrowed: a fake in the unit tests). */
export interface GuardEngine {
  listServices(opts: { filters: string }): Promise<GuardService[]>;
  /** The tasks of a service (`{"service":[id]}`), every node's, replaced ones included. */
  listTasks(opts: { filters: string }): Promise<GuardEngineTask[]>;
  /** The digests a local image was pushed as (`<registry>/<repo>@sha256:...`): its RepoDigests. */
  repoDigests(image: string): Promise<string[]>;
  /** The registry still has this image (by digest): a node joining later can pull it. */
  inRegistry(image: string): Promise<boolean>;
  createService(spec: GuardServiceSpec): Promise<unknown>;
  updateService(id: string, version: number, spec: GuardServiceSpec): Promise<unknown>;
  removeService(id: string): Promise<unknown>;
}

/**
 * The guard service of one Pier installation: made, or updated when its rules or image changed, at each
 * start of pier server with isolation on; removed with isolation off (its tasks delete the table).
 */
export class SwarmGuard {
  constructor(private readonly engine: GuardEngine) {}

  private async current(name: string): Promise<GuardService | null> {
    const all = await this.engine.listServices({ filters: JSON.stringify({ name: [name] }) });
    // The engine's name filter matches prefixes: pier-guard-a would find pier-guard-ab.
    return all.find((s) => s.Spec?.Name === name) ?? null;
  }

  /**
   * The image the guard's service runs now, when it is the local `image` as pushed before and the registry
   * still has it: no push needed (pier server starts a push's time sooner). Null: push it.
   */
  async pushed(name: string, image: string): Promise<string | null> {
    const running = (await this.current(name))?.Spec?.TaskTemplate?.ContainerSpec?.Image;
    if (!running || !(await this.engine.repoDigests(image)).includes(running)) return null;
    return (await this.engine.inRegistry(running)) ? running : null;
  }

  /** The guard's service and its tasks, for `pier nodes` (which nodes are guarded). */
  async report(name: string): Promise<GuardFound> {
    const now = await this.current(name);
    if (!now) return { isolation: true, service: name, exists: false, tasks: [] };
    const want = now.Spec?.TaskTemplate?.ContainerSpec;
    const tasks = await this.engine.listTasks({ filters: JSON.stringify({ service: [now.ID] }) });
    return { isolation: true, service: name, exists: true, tasks: tasks.map((t) => guardTask(t, want)) };
  }

  /** Made or brought up to date; "unchanged" when the running spec already has these rules and image. */
  async ensure(spec: GuardServiceSpec): Promise<"created" | "updated" | "unchanged"> {
    const now = await this.current(spec.Name);
    if (!now) {
      await this.engine.createService(spec);
      return "created";
    }
    if (sameRules(now.Spec?.TaskTemplate?.ContainerSpec, spec.TaskTemplate.ContainerSpec)) return "unchanged";
    await this.engine.updateService(now.ID, now.Version?.Index ?? 0, spec);
    return "updated";
  }

  /** Removed if there: true when it was. */
  async remove(name: string): Promise<boolean> {
    const now = await this.current(name);
    if (!now) return false;
    await this.engine.removeService(now.ID);
    return true;
  }
}

type Container = { Env?: string[]; Image?: string } | undefined;
const sameRules = (a: Container, b: Container) =>
  a?.Image === b?.Image && JSON.stringify(a?.Env ?? []) === JSON.stringify(b?.Env ?? []);

/** An engine's task in Pier's words; `current` when it runs the service's rules and image. */
function guardTask(t: GuardEngineTask, want: Container): GuardTask {
  return {
    nodeId: t.NodeID ?? "",
    state: t.Status?.State ?? "unknown",
    desired: t.DesiredState ?? "",
    createdAt: t.CreatedAt ?? "",
    error: t.Status?.Err || null,
    current: sameRules(t.Spec?.ContainerSpec, want),
  };
}
