// Where a new add-on goes (AddonServers.addonNode, ADR 0030): the engine itself on one dockerd, a node of
// the swarm otherwise. Pure.
import { PierError } from "./errors.js";

/**
 * Where a new add-on goes on one dockerd (AddonServers.addonNode): the engine itself, null. A node asked
 * for is refused, saying why: there are no nodes to choose from.
 */
export function oneEngineNode(requested: string | null): null {
  if (requested !== null)
    throw new PierError(
      "INVALID_INPUT",
      `--node ${requested}: Pier runs on one dockerd (PIER_ENGINE=docker), which has no nodes to pin an add-on to.`,
      "Leave out --node (the add-on runs beside Pier), or run pier server with PIER_ENGINE=swarm on a swarm manager.",
    );
  return null;
}

/**
 * Where a new add-on goes on a swarm (AddonServers.addonNode): the node named, which must be one of
 * `nodes`, else `manager` (the node Pier's server runs on).
 */
export function swarmAddonNode(requested: string | null, nodes: readonly string[], manager: string): string {
  if (requested === null) return manager;
  if (nodes.includes(requested)) return requested;
  throw new PierError(
    "INVALID_INPUT",
    `--node ${requested}: the swarm has no node of that name (its nodes: ${[...nodes].sort().join(", ")}).`,
    "See `pier nodes`.",
  );
}
