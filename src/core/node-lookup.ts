import { PierError } from "./errors.js";
import type { ClusterNode } from "./nodes.js";

/** The node named `name` (its host name, or its id), or NODE_NOT_FOUND naming the nodes there are. */
export function findNode(nodes: readonly ClusterNode[], name: string): ClusterNode {
  const found = nodes.find((n) => n.name === name) ?? nodes.find((n) => n.id === name);
  if (found) return found;
  throw new PierError(
    "NODE_NOT_FOUND",
    `There is no node named '${name}' in the swarm.`,
    `The nodes are: ${nodes.map((n) => n.name).join(", ") || "(none)"} (pier nodes lists them).`,
  );
}
