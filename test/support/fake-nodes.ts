// The one fake of the Nodes port (ADR 0030): a swarm in memory, passing test/conformance/nodes.ts as the
// Swarm adapter does on the lab.
import { findNode } from "../../src/core/node-lookup.js";
import type { ClusterNode, JoinToken, NodeRole } from "../../src/core/nodes.js";
import type { Nodes } from "../../src/core/ports.js";

/** Three nodes: node1 the leading manager, node2 and node3 workers, all ready and active. */
export function fakeSwarm(): ClusterNode[] {
  return [1, 2, 3].map((i) => ({
    id: `fake${i}`,
    name: `node${i}`,
    address: `192.0.2.${10 + i}`,
    role: i === 1 ? "manager" : "worker",
    leader: i === 1,
    availability: "active",
    state: "ready",
    labels: {},
  }));
}

export class FakeNodes implements Nodes {
  /** The nodes, as the tests seed and read them. */
  nodes: ClusterNode[];

  constructor(nodes: ClusterNode[] = fakeSwarm()) {
    this.nodes = nodes;
  }

  async listNodes(): Promise<ClusterNode[]> {
    return this.nodes.map((n) => ({ ...n, labels: { ...n.labels } }));
  }

  async joinToken(role: NodeRole): Promise<JoinToken> {
    const managers = this.nodes
      .filter((n) => n.role === "manager" && n.state === "ready")
      .sort((a, b) => Number(b.leader) - Number(a.leader))
      .map((n) => `${n.address}:2377`);
    return { role, token: `SWMTKN-1-fake-${role}`, managers };
  }

  async setAvailability(name: string, availability: "active" | "drain"): Promise<ClusterNode> {
    const node = findNode(this.nodes, name);
    node.availability = availability;
    return { ...node, labels: { ...node.labels } };
  }
}
