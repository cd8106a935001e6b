// The swarm's machines as `pier nodes` and the API see them (ADR 0030): the Nodes port with Pier's rules.
import { PierError } from "../core/errors.js";
import { findNode } from "../core/node-lookup.js";
import {
  type ClusterNode,
  drainProblem,
  type GuardReport,
  joinCommandLine,
  type NodeGuard,
  type NodeRole,
  nodeGuard,
  registryTrustScript,
} from "../core/nodes.js";
import type { Nodes } from "../core/ports.js";

export interface JoinCommandView {
  role: NodeRole;
  command: string;
  token: string;
  managers: string[];
  /** The swarm's registry; `trust`: the lines that make a node trust Pier's own (null: the operator's). */
  registry: { address: string; trust: string | null } | null;
}

/** A node as `pier nodes` lists it: with how many of Pier's instances run there now, and whether guarded. */
export type NodeView = ClusterNode & { instances: number } & NodeGuard;

/** A node activated, with the apps being redeployed to spread their instances onto it again (by name). */
export type ActivatedNode = ClusterNode & { rebalancing: string[] };

/** Pier's instances, where each runs (InstanceInfo's `node` and `running`). */
export type PlacedInstances = () => Promise<readonly { node?: string; running: boolean }[]>;

export class NodeService {
  constructor(
    /** Null when the engine is one dockerd (PIER_ENGINE=docker): every call answers NO_SWARM. */
    private readonly nodes: Nodes | null,
    /** The swarm's registry (and its CA when it is Pier's own), the manager Pier runs on. */
    private readonly swarm: {
      registry: { address: string; caPem: string | null };
      managerNodeId: string | null;
    } | null = null,
    /** The names of the add-ons pinned to a node (they never move with a drain). */
    private readonly pinnedAddons: (node: string) => Promise<string[]> = async () => [],
    /** Pier's instances on the engine (none: every node counts 0). */
    private readonly placed: PlacedInstances = async () => [],
    /** The node guard's service and tasks (ADR 0019 on a swarm); none given: isolation off. */
    private readonly guards: () => Promise<GuardReport> = async () => ({ isolation: false }),
    /** Starts spreading instances onto the node just activated (by its name); the apps planned. */
    private readonly spreadOnto: (node: string) => Promise<string[]> = async () => [],
  ) {}

  private port(): Nodes {
    if (this.nodes) return this.nodes;
    throw new PierError(
      "NO_SWARM",
      "Pier runs on one dockerd (PIER_ENGINE=docker): there is no swarm, so no nodes.",
      "To place apps on several machines, run pier server with PIER_ENGINE=swarm on a swarm manager (docker swarm init).",
    );
  }

  /** Every node, with the number of Pier's instances running on it (by the node's name), and its guard. */
  async list(): Promise<NodeView[]> {
    const [nodes, placed, guards] = await Promise.all([
      this.port().listNodes(),
      this.placed(),
      // A node list without the guard's column rather than none: the engine's answer says why.
      this.guards().catch((e: unknown): GuardReport => ({ isolation: true, unread: (e as Error).message })),
    ]);
    const count = new Map<string, number>();
    for (const i of placed) if (i.running && i.node) count.set(i.node, (count.get(i.node) ?? 0) + 1);
    return nodes.map((n) => ({ ...n, instances: count.get(n.name) ?? 0, ...nodeGuard(n, guards) }));
  }

  async joinCommand(role: NodeRole): Promise<JoinCommandView> {
    const join = await this.port().joinToken(role);
    const r = this.swarm?.registry ?? null;
    return {
      role,
      command: joinCommandLine(join),
      token: join.token,
      managers: join.managers,
      registry: r && { address: r.address, trust: r.caPem ? registryTrustScript(r.address, r.caPem) : null },
    };
  }

  /**
   * Drains `name`, unless it is the last active, ready node, or add-ons are pinned to it (they cannot move
   * with their data: ADR 0030): then CONFLICT, saying why and what to do.
   */
  async drain(name: string): Promise<ClusterNode> {
    const port = this.port();
    const all = await port.listNodes();
    const node = findNode(all, name);
    if (node.id === this.swarm?.managerNodeId)
      throw new PierError(
        "CONFLICT",
        `${node.name} is the manager Pier runs on: the edge and builds run there (and add-ons, unless pinned elsewhere), and a drained node cannot join an app's network, so new apps and their deploys would fail.`,
        "Drain the other nodes to move instances off them. Nothing was changed.",
      );
    const problem = drainProblem(all, node);
    if (problem)
      throw new PierError(
        "CONFLICT",
        problem,
        "Activate another node first (pier nodes activate NAME), or add one (pier nodes join-command).",
      );
    const pinned = await this.pinnedAddons(node.name);
    if (pinned.length > 0)
      throw new PierError(
        "CONFLICT",
        `${node.name} was not drained: the add-ons ${pinned.join(", ")} are pinned to it with their data, and a drain cannot move them.`,
        `Pier never moves an add-on's data. To free ${node.name}, for each of them: \`pier addon backup create NAME\` (the file is kept under PIER_BACKUP_DIR/<its id>/), \`pier addon create KIND NEW --node OTHER\`, load the file into NEW with its kind's client, link the apps to NEW and unlink NAME, redeploy them, \`pier addon delete NAME\`; then drain ${node.name} again.`,
      );
    return port.setAvailability(node.id, "drain");
  }

  /**
   * Lets `name` take work again, and starts moving instances onto it: each app whose instances crowd other
   * nodes is redeployed from its current image, one after the other (`rebalancing`: their names).
   */
  async activate(name: string): Promise<ActivatedNode> {
    const port = this.port();
    const node = await port.setAvailability(findNode(await port.listNodes(), name).id, "active");
    return { ...node, rebalancing: await this.spreadOnto(node.name) };
  }
}
