// The engine `pier server` runs on, from its settings (ADR 0025, 0030): one dockerd, or a swarm whose manager
// builds and whose nodes run the instances.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import { EdgeSandbox } from "../adapters/edge/edge-sandbox.js";
import { type EdgePlace, hostPlace } from "../adapters/edge/reach.js";
import { DockerEngine } from "../adapters/engine/docker.js";
import { DockerRegistryPush } from "../adapters/engine/registry-push.js";
import { SwarmEngine } from "../adapters/engine/swarm.js";
import { SwarmComposite } from "../adapters/engine/swarm-engine.js";
import { SwarmNodes } from "../adapters/engine/swarm-nodes.js";
import { PierError } from "../core/errors.js";
import type { Engine } from "../core/ports.js";
import type { Config } from "./config.js";

/** What sandboxes run (`sleep infinity`): Pier's base image, which builds need on the engine anyway. */
const SANDBOX_IMAGE = "pier/base:bookworm";

/**
 * The engine, answering, and the builds' network if one is set; where the edge serves from. With
 * PIER_ENGINE=swarm (ADR 0030) builds, images, volumes and add-ons stay on the manager's dockerd, instances
 * run on the swarm (swarm-engine.ts), and the edge in a sandbox on the manager that joins every overlay.
 */
export async function connectEngine(
  config: Config,
  scope: string,
): Promise<{ engine: Engine; edgePlace: EdgePlace }> {
  const docker = new DockerEngine({
    socketPath: config.dockerSocket,
    scope,
    sandboxImage: SANDBOX_IMAGE,
  });
  await docker.ping();
  const { engine, edgePlace } = config.swarmRegistry
    ? await swarmEngine(config, config.swarmRegistry, docker, scope)
    : { engine: docker, edgePlace: hostPlace };
  if (config.buildNetwork && !(await engine.networkExists(config.buildNetwork)))
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_BUILD_NETWORK: there is no Docker network named '${config.buildNetwork}'.`,
      `Create it (docker network create ${config.buildNetwork}) or unset PIER_BUILD_NETWORK.`,
    );
  return { engine, edgePlace };
}

/** The swarm's engine: the Swarm driver on the manager, publishing release images to the registry. */
async function swarmEngine(
  config: Config,
  reg: NonNullable<Config["swarmRegistry"]>,
  docker: DockerEngine,
  scope: string,
): Promise<{ engine: Engine; edgePlace: EdgeSandbox }> {
  const manager = new Docker({ socketPath: config.dockerSocket });
  const password = await readSecretFile(reg.passwordFile, "PIER_SWARM_REGISTRY_PASSWORD_FILE");
  const auth = { username: reg.username, password };
  const self = ((await manager.info()) as { Swarm?: { NodeID?: string } }).Swarm?.NodeID;
  const swarm = new SwarmEngine({
    docker: manager,
    scope,
    registry: new DockerRegistryPush({ docker: manager, address: reg.address, ...auth }),
    pullAuth: { ...auth, serveraddress: reg.address },
    stopGraceMs: config.stopGraceMs,
    // Exec into an instance goes through its node's engine: Pier reaches only the manager's own so far.
    nodeEngine: (node) => (node.id === self ? manager : null),
  });
  const edgePlace = new EdgeSandbox({
    docker: manager,
    scope,
    image: SANDBOX_IMAGE,
    publish: [config.http, config.https],
    dialerSocket: join(config.dataDir, "edge", "dial.sock"),
  });
  return { engine: new SwarmComposite(docker, swarm, edgePlace), edgePlace };
}

/** A secret kept in a file (its first line), or CONFIG_INVALID naming the setting. Never logged. */
async function readSecretFile(path: string, setting: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new PierError("CONFIG_INVALID", `${setting}: ${path} cannot be read: ${(e as Error).message}`);
  }
  const secret = text.split("\n")[0]?.trim() ?? "";
  if (!secret) throw new PierError("CONFIG_INVALID", `${setting}: ${path} is empty.`);
  return secret;
}

/**
 * PIER_ENGINE=swarm (ADR 0030): the engine must be a swarm manager, or pier server does not start. Its
 * nodes; null on one dockerd.
 */
export async function connectSwarm(config: Config): Promise<SwarmNodes | null> {
  if (config.engine !== "swarm") return null;
  const nodes = new SwarmNodes({ socketPath: config.dockerSocket });
  // Asked before the Docker adapter's own ping: an engine that does not answer is said so here.
  const problem = await nodes.managerProblem().catch((e: Error) => {
    throw new PierError(
      "ENGINE_ERROR",
      `The engine at PIER_DOCKER_SOCKET ${config.dockerSocket} does not answer: ${e.message}`,
      "Start its dockerd, or point PIER_DOCKER_SOCKET at a swarm manager.",
    );
  });
  if (problem)
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_ENGINE=swarm: ${problem} (PIER_DOCKER_SOCKET ${config.dockerSocket}).`,
      "Make this machine's engine a swarm manager (docker swarm init, or join as a manager), point PIER_DOCKER_SOCKET at a manager, or unset PIER_ENGINE to run on one dockerd.",
    );
  return nodes;
}
