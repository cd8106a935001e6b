// The Nodes port over Docker Swarm's API (ADR 0030): nodes listed, join tokens, availability updated.
import Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { findNode } from "../../core/node-lookup.js";
import {
  type ClusterNode,
  type JoinToken,
  NODE_AVAILABILITIES,
  NODE_STATES,
  type NodeAvailability,
  type NodeRole,
  type NodeState,
} from "../../core/nodes.js";
import type { Nodes } from "../../core/ports.js";

/** The fields Pier reads of the engine's node object (GET /nodes). */
interface SwarmNode {
  ID: string;
  Version?: { Index?: number };
  Spec?: { Role?: string; Availability?: string; Labels?: Record<string, string>; Name?: string };
  Description?: { Hostname?: string };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Leader?: boolean; Addr?: string };
}

const oneOf = <T extends string>(list: readonly T[], v: string | undefined, dflt: T): T =>
  list.includes(v as T) ? (v as T) : dflt;

/** The engine's node in Pier's words. */
export function clusterNode(n: SwarmNode): ClusterNode {
  const managerAddr = n.ManagerStatus?.Addr?.replace(/:\d+$/, "");
  return {
    id: n.ID,
    name: n.Description?.Hostname ?? n.Spec?.Name ?? n.ID,
    // A manager's Status.Addr may be 0.0.0.0 (its listen address); its ManagerStatus.Addr is the real one.
    address: (n.Status?.Addr && n.Status.Addr !== "0.0.0.0" ? n.Status.Addr : managerAddr) ?? "",
    role: n.Spec?.Role === "manager" ? "manager" : "worker",
    leader: n.ManagerStatus?.Leader === true,
    availability: oneOf<NodeAvailability>(NODE_AVAILABILITIES, n.Spec?.Availability, "active"),
    state: oneOf<NodeState>(NODE_STATES, n.Status?.State, "unknown"),
    labels: { ...(n.Spec?.Labels ?? {}) },
  };
}

/** The engine's refusals in Pier's words: not a manager, not a swarm. */
function engineError(e: unknown): never {
  const err = e as { statusCode?: number; json?: { message?: string }; message?: string };
  const why = err.json?.message ?? err.message ?? String(e);
  if (err.statusCode === 503 || err.statusCode === 406)
    throw new PierError(
      "NO_SWARM",
      `The engine is not a manager of a swarm: ${why}`,
      "Point Pier at a manager's socket (PIER_DOCKER_SOCKET), or make one: docker swarm init.",
    );
  throw new PierError("ENGINE_ERROR", `The engine refused: ${why}`);
}

export class SwarmNodes implements Nodes {
  private readonly docker: Docker;

  constructor(opts: { socketPath: string } | { docker: Docker }) {
    this.docker = "docker" in opts ? opts.docker : new Docker({ socketPath: opts.socketPath });
  }

  /** Why this engine cannot be Pier's swarm engine (not in a swarm, or a worker), or null. */
  async managerProblem(): Promise<string | null> {
    const info = (await this.docker.info()) as {
      Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean };
    };
    const state = info.Swarm?.LocalNodeState ?? "inactive";
    if (state !== "active") return `the engine is not part of a swarm (its swarm state is '${state}')`;
    if (info.Swarm?.ControlAvailable !== true) return "the engine is a swarm worker, not a manager";
    return null;
  }

  async listNodes(): Promise<ClusterNode[]> {
    const nodes = (await this.docker.listNodes().catch(engineError)) as SwarmNode[];
    return nodes.map(clusterNode);
  }

  async joinToken(role: NodeRole): Promise<JoinToken> {
    const swarm = (await this.docker.swarmInspect().catch(engineError)) as {
      JoinTokens?: { Worker?: string; Manager?: string };
    };
    const token = role === "manager" ? swarm.JoinTokens?.Manager : swarm.JoinTokens?.Worker;
    if (!token) throw new PierError("ENGINE_ERROR", `The engine gave no ${role} join token.`);
    const managers = (await this.listNodes())
      .filter((n) => n.role === "manager" && n.state === "ready")
      .sort((a, b) => Number(b.leader) - Number(a.leader))
      .map((n) => `${n.address}:2377`);
    return { role, token, managers };
  }

  async setAvailability(name: string, availability: "active" | "drain"): Promise<ClusterNode> {
    const raw = (await this.docker.listNodes().catch(engineError)) as SwarmNode[];
    const node = findNode(raw.map(clusterNode), name);
    const current = raw.find((n) => n.ID === node.id);
    const spec = { ...(current?.Spec ?? {}), Availability: availability };
    await this.docker
      .getNode(node.id)
      .update({ _query: { version: current?.Version?.Index ?? 0 }, _body: spec })
      .catch(engineError);
    const after = (await this.docker.getNode(node.id).inspect().catch(engineError)) as SwarmNode;
    return clusterNode(after);
  }
}
