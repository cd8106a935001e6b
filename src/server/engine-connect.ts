// The engine `pier server` runs on, from its settings (ADR 0025, 0030): one dockerd, or a swarm whose manager
// builds and whose nodes run the instances.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import type { Logger } from "pino";
import { EdgeSandbox } from "../adapters/edge/edge-sandbox.js";
import { type EdgePlace, hostPlace } from "../adapters/edge/reach.js";
import { DockerEngine } from "../adapters/engine/docker.js";
import { OwnRegistry } from "../adapters/engine/own-registry.js";
import { DockerRegistryPush } from "../adapters/engine/registry-push.js";
import { SwarmEngine, type SwarmEngineOptions } from "../adapters/engine/swarm.js";
import { SwarmAddonServers } from "../adapters/engine/swarm-addons.js";
import { SwarmComposite } from "../adapters/engine/swarm-engine.js";
import { SwarmNodes } from "../adapters/engine/swarm-nodes.js";
import { NodeSweep, sweepEngine } from "../adapters/engine/swarm-sweep.js";
import {
  GUARD_IMAGE,
  type GuardEngineTask,
  type GuardService,
  type GuardServiceSpec,
  guardServiceSpec,
  SwarmGuard,
} from "../adapters/swarm-guard.js";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import type { GuardReport } from "../core/nodes.js";
import type { Engine, ReleaseRegistry } from "../core/ports.js";
import { formatCidr } from "../core/subnets.js";
import { guardTable, planNodeGuard } from "../core/swarm-guard.js";
import type { Config } from "./config.js";

/** What sandboxes run (`sleep infinity`): Pier's base image, which builds need on the engine anyway. */
const SANDBOX_IMAGE = "pier/base:bookworm";

/**
 * The engine, answering, and the builds' network if one is set; where the edge serves from. With
 * PIER_ENGINE=swarm (ADR 0030) builds, images and volumes stay on the manager's dockerd, add-ons on their
 * nodes' (swarm-addons.ts), instances run on the swarm (swarm-engine.ts), and the edge in a sandbox on the
 * manager that joins every app's overlay.
 */
export async function connectEngine(
  config: Config,
  scope: string,
  logger?: Logger,
): Promise<{ engine: Engine; edgePlace: EdgePlace; swarm: SwarmFacts | null }> {
  const docker = new DockerEngine({
    socketPath: config.dockerSocket,
    scope,
    sandboxImage: SANDBOX_IMAGE,
  });
  await docker.ping();
  const { engine, edgePlace, swarm } = config.swarmRegistry
    ? await swarmEngine(config, config.swarmRegistry, docker, scope, logger)
    : { engine: docker, edgePlace: hostPlace, swarm: null };
  if (config.buildNetwork && !(await engine.networkExists(config.buildNetwork)))
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_BUILD_NETWORK: there is no Docker network named '${config.buildNetwork}'.`,
      `Create it (docker network create ${config.buildNetwork}) or unset PIER_BUILD_NETWORK.`,
    );
  return { engine, edgePlace, swarm };
}

/** What the nodes' commands need to know of the swarm Pier runs on. */
export interface SwarmFacts {
  /** What a node must trust to pull from the swarm's registry: its CA when it is Pier's own (join-command). */
  registry: { address: string; caPem: string | null };
  /** The manager Pier runs on: its edge, builds and add-ons are there. */
  managerNodeId: string | null;
  /** The node guard's service and tasks now (which nodes are guarded), or isolation off. */
  guards: () => Promise<GuardReport>;
  /** Where release images are published: the server forgets pruned and deleted apps' images there. */
  releases: ReleaseRegistry;
}

type SwarmInfo = { Swarm?: { NodeID?: string; NodeAddr?: string } };

/**
 * The registry's address and credentials: the operator's (its password read from its file), or Pier's own,
 * started (or adopted) on the manager's swarm address unless PIER_SWARM_REGISTRY_LISTEN says where.
 */
async function registryAccess(
  config: Config,
  reg: NonNullable<Config["swarmRegistry"]>,
  info: SwarmInfo,
  logger?: Logger,
): Promise<{
  address: string;
  username: string;
  password: string;
  caPem: string | null;
  /** The CA Pier's API calls trust: Pier's own, or the one the manager's dockerd has for the operator's. */
  apiCaPem: string | null;
  own: OwnRegistry | null;
}> {
  if (reg.kind === "external") {
    const password = await readSecretFile(reg.passwordFile, "PIER_SWARM_REGISTRY_PASSWORD_FILE");
    const apiCaPem = await readFile(join(reg.certsDir, reg.address, "ca.crt"), "utf8").catch(() => null);
    return { address: reg.address, username: reg.username, password, caPem: null, apiCaPem, own: null };
  }
  const host = info.Swarm?.NodeAddr;
  const listen = reg.listen ?? (host ? `${host}:5000` : null);
  if (!listen)
    throw new PierError(
      "CONFIG_INVALID",
      "PIER_ENGINE=swarm: the manager's swarm address is unknown, so Pier cannot tell where its registry should listen.",
      "Set PIER_SWARM_REGISTRY_LISTEN to an address of this machine the nodes reach, with a port (e.g. 10.0.0.1:5000).",
    );
  const own = new OwnRegistry({
    dir: join(config.dataDir, "registry"),
    listen,
    certsDir: reg.certsDir,
    ...(logger ? { logger: logger.child({ part: "registry" }) } : {}),
  });
  const access = await own.ensure();
  return { ...access, apiCaPem: access.caPem, own };
}

/** The swarm's engine: the Swarm driver on the manager, publishing release images to the registry. */
async function swarmEngine(
  config: Config,
  reg: NonNullable<Config["swarmRegistry"]>,
  docker: DockerEngine,
  scope: string,
  logger?: Logger,
): Promise<{ engine: Engine; edgePlace: EdgeSandbox; swarm: SwarmFacts }> {
  const manager = new Docker({ socketPath: config.dockerSocket });
  const info = (await manager.info()) as SwarmInfo;
  const self = info.Swarm?.NodeID ?? "";
  const { address, caPem, apiCaPem, own, ...auth } = await registryAccess(config, reg, info, logger);
  const push = new DockerRegistryPush({ docker: manager, address, ...auth, caPem: apiCaPem });
  const managerName = await nodeName(manager, self);
  // Each node's own dockerd where PIER_SWARM_NODE_ENGINES names it: add-ons pinned there, exec in instances.
  const engines = new Map<string, Docker>(
    Object.entries(config.swarmNodeEngines).map(([name, e]) => [
      name,
      new Docker("socketPath" in e ? e : { ...e, protocol: "http" }),
    ]),
  );
  engines.set(managerName, manager);
  const swarm = new SwarmEngine({
    docker: manager,
    scope,
    // Pier's own registry collects what was forgotten at its next start (ADR 0030).
    registry: own ? own.collecting(push) : push,
    pullAuth: { ...auth, serveraddress: address },
    stopGraceMs: config.stopGraceMs,
    // Exec into an instance goes through its node's engine: the manager's, and those Pier is told of.
    nodeEngine: (node) => (node.id === self ? manager : (engines.get(node.name) ?? null)),
    sweep: nodeSweep(config, manager, push, scope, { ...auth, serveraddress: address }, logger),
    keptDir: join(config.dataDir, "swarm-kept"),
  });
  const guards = await guardNodes(config, manager, push, {
    scope,
    managerAddress: info.Swarm?.NodeAddr ?? null,
    pullAuth: { ...auth, serveraddress: address },
  });
  const edgePlace = new EdgeSandbox({
    docker: manager,
    scope,
    image: SANDBOX_IMAGE,
    publish: [config.http, config.https],
    dialerSocket: join(config.dataDir, "edge", "dial.sock"),
    pool: formatCidr(config.subnets.pool),
    logger,
  });
  const addons = new SwarmAddonServers({
    manager,
    managerName,
    engines,
    scope,
    nodeNames: async () =>
      ((await manager.listNodes()) as { ID: string; Description?: { Hostname?: string } }[]).map(
        (n) => n.Description?.Hostname ?? n.ID,
      ),
  });
  return {
    engine: new SwarmComposite(docker, swarm, edgePlace, addons),
    edgePlace,
    swarm: {
      registry: { address, caPem },
      managerNodeId: self || null,
      guards,
      releases: swarm.releaseRegistry ?? push,
    },
  };
}

/**
 * The nodes' sweep (ADR 0030): the swarm's job that removes forgotten release images from every node, in
 * Pier's node tool image (the guard's), published to the registry at its first use.
 */
function nodeSweep(
  config: Config,
  manager: Docker,
  registry: DockerRegistryPush,
  scope: string,
  pullAuth: { username: string; password: string; serveraddress: string },
  logger?: Logger,
): NonNullable<SwarmEngineOptions["sweep"]> {
  let image: Promise<string> | null = null;
  const sweep = new NodeSweep({
    docker: sweepEngine(manager, pullAuth),
    scope,
    socket: config.swarmNodeSocket,
    logger,
    // What nodes that missed a sweep are owed outlives a restart of pier server.
    owedFile: join(config.dataDir, "swarm-sweep-owed.json"),
    image: () => {
      image ??= registry.publish(GUARD_IMAGE).catch((e: Error) => {
        image = null;
        throw e;
      });
      return image;
    },
  });
  return sweep;
}

/**
 * The node guard (ADR 0019, on a swarm): with isolation on, the global service that applies the
 * one-machine rules to what enters each node from docker_gwbridge, its image pushed through the swarm's
 * registry (unless the service already runs that image: the push skipped); with isolation off, that
 * service removed. A guard that cannot be made stops pier server, as the one-machine table does
 * (ISOLATION_FAILED), rather than run unguarded silently. How to read the guard's state afterwards.
 */
async function guardNodes(
  config: Config,
  manager: Docker,
  registry: DockerRegistryPush,
  o: {
    scope: string;
    managerAddress: string | null;
    /** The nodes pull the guard's image with the registry's credentials, as they do releases. */
    pullAuth: { username: string; password: string; serveraddress: string };
  },
): Promise<() => Promise<GuardReport>> {
  const auth = o.pullAuth;
  const guard = new SwarmGuard({
    listServices: async (opts) => (await manager.listServices(opts)) as GuardService[],
    listTasks: async (opts) => (await manager.listTasks(opts)) as GuardEngineTask[],
    repoDigests: async (image) =>
      ((await manager.getImage(image).inspect()) as { RepoDigests?: string[] }).RepoDigests ?? [],
    inRegistry: (image) =>
      manager
        .getImage(image)
        .distribution({ authconfig: auth })
        .then(() => true)
        .catch(() => false),
    createService: (spec) => manager.createService(o.pullAuth, spec),
    updateService: (id, version, spec: GuardServiceSpec) =>
      manager.getService(id).update({ _query: { version }, _body: spec, authconfig: o.pullAuth }),
    removeService: (id) => manager.getService(id).remove(),
  });
  const name = guardTable(o.scope);
  if (!config.isolation) {
    await guard.remove(name);
    return async () => ({ isolation: false });
  }
  const pushed = await guard.pushed(name, GUARD_IMAGE).catch(() => null);
  const image =
    pushed ??
    (await registry.publish(GUARD_IMAGE).catch((e: Error) => {
      throw new PierError(
        "ISOLATION_FAILED",
        `The swarm nodes' guard cannot be installed: ${e.message}`,
        "Run scripts/setup.sh on the manager (it builds pier/guard:1), or set PIER_ISOLATION=off.",
      );
    }));
  const plan = planNodeGuard({
    scope: o.scope,
    pool: formatCidr(config.subnets.pool),
    allow: config.egressAllow,
    hostPorts: [config.http.port, config.https.port],
    edges: o.managerAddress ? [o.managerAddress] : [],
  });
  // Its scope, not `pier.managed`: the swarm driver takes every service with both for an instance.
  await guard.ensure(guardServiceSpec(plan, image, { [LABEL.scope]: o.scope }));
  return () => guard.report(name);
}

/** A swarm node's name (its host name, as `pier nodes` shows it). */
async function nodeName(manager: Docker, id: string): Promise<string> {
  const n = (await manager.getNode(id).inspect()) as { Description?: { Hostname?: string } };
  return n.Description?.Hostname ?? id;
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
