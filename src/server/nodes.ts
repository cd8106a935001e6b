// The swarm's machines as `pier nodes` and the API see them (ADR 0030): the Nodes port with Pier's rules.
import { PierError } from "../core/errors.js";
import { findNode } from "../core/node-lookup.js";
import {
  type ClusterNode,
  drainProblem,
  joinCommandLine,
  type NodeRole,
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

/** A node as `pier nodes` lists it: with how many of Pier's instances run there now. */
export type NodeView = ClusterNode & { instances: number };

/** Pier's instances, where each runs (InstanceInfo's `node` and `running`). */
export type PlacedInstances = () => Promise<readonly { node?: string; running: boolean }[]>;

export class NodeService {
  /** `nodes`: null when the engine is one dockerd (PIER_ENGINE=docker): every call answers NO_SWARM. */
  constructor(
    private readonly nodes: Nodes | null,
    /** The swarm's registry, and its CA when it is Pier's own. */
    private readonly registry: { address: string; caPem: string | null } | null = null,
    /** Pier's instances on the engine (none: every node counts 0). */
    private readonly placed: PlacedInstances = async () => [],
  ) {}

  private port(): Nodes {
    if (this.nodes) return this.nodes;
    throw new PierError(
      "NO_SWARM",
      "Pier runs on one dockerd (PIER_ENGINE=docker): there is no swarm, so no nodes.",
      "To place apps on several machines, run pier server with PIER_ENGINE=swarm on a swarm manager (docker swarm init).",
    );
  }

  /** Every node, with the number of Pier's instances running on it (by the node's name). */
  async list(): Promise<NodeView[]> {
    const [nodes, placed] = await Promise.all([this.port().listNodes(), this.placed()]);
    const count = new Map<string, number>();
    for (const i of placed) if (i.running && i.node) count.set(i.node, (count.get(i.node) ?? 0) + 1);
    return nodes.map((n) => ({ ...n, instances: count.get(n.name) ?? 0 }));
  }

  async joinCommand(role: NodeRole): Promise<JoinCommandView> {
    const join = await this.port().joinToken(role);
    const r = this.registry;
    return {
      role,
      command: joinCommandLine(join),
      token: join.token,
      managers: join.managers,
      registry: r && { address: r.address, trust: r.caPem ? registryTrustScript(r.address, r.caPem) : null },
    };
  }

  /** Drains `name`, unless it is the last active, ready node (then CONFLICT, saying why). */
  async drain(name: string): Promise<ClusterNode> {
    const port = this.port();
    const all = await port.listNodes();
    const node = findNode(all, name);
    const problem = drainProblem(all, node);
    if (problem)
      throw new PierError(
        "CONFLICT",
        problem,
        "Activate another node first (pier nodes activate NAME), or add one (pier nodes join-command).",
      );
    return port.setAvailability(node.id, "drain");
  }

  async activate(name: string): Promise<ClusterNode> {
    const port = this.port();
    return port.setAvailability(findNode(await port.listNodes(), name).id, "active");
  }
}
