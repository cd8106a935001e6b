// The services of `pier server`, made from its settings: what main.ts wires together (ADR 0028).
import { join } from "node:path";
import type { Logger } from "pino";
import { AcmeIssuer } from "../adapters/acme.js";
import { addonProviders } from "../adapters/addons/providers.js";
import type { HaproxyEdge } from "../adapters/edge/haproxy.js";
import { HaproxyTls } from "../adapters/edge/haproxy-tls.js";
import { NpmRegistry } from "../adapters/npm-registry.js";
import type { SqliteStore } from "../adapters/store/sqlite.js";
import { pierGitPrefixes } from "../core/build-git.js";
import type { Engine, InstanceReach, Nodes } from "../core/ports.js";
import { AddonService } from "./addons.js";
import { AppService } from "./apps.js";
import type { Config } from "./config.js";
import { DeployLogs } from "./deploy-logs.js";
import { Deployer } from "./deployer.js";
import { DomainService, domainsByApp } from "./domains.js";
import type { SwarmFacts } from "./engine-connect.js";
import { hostKey, hostPublicKey } from "./git-ssh.js";
import { Instances } from "./instances.js";
import { AppLimits } from "./limits.js";
import { InstanceStarts } from "./log-follow.js";
import type { Networks } from "./networks.js";
import { Rebalancer } from "./rebalancer.js";
import { DockerRuntime } from "./runtimes/docker.js";
import { NodeRuntime } from "./runtimes/node.js";
import { PhpRuntime } from "./runtimes/php.js";
import { WarmBuilds } from "./runtimes/php-warm.js";
import { Toolchains } from "./toolchains.js";

/** What the services are built on: the store, the engine, the app networks and the edge. */
export interface Base {
  config: Config;
  logger: Logger;
  store: SqliteStore;
  engine: Engine;
  /** Connections to instances from where the edge serves (the gate's probes, ADR 0030). */
  reach: InstanceReach;
  /** The swarm's registry and the manager Pier runs on (`pier nodes`); null on one dockerd. */
  swarm: SwarmFacts | null;
  /** The swarm's nodes (PIER_ENGINE=swarm, ADR 0030); null on one dockerd. */
  nodes: Nodes | null;
  networks: Networks;
  edge: HaproxyEdge;
  scope: string;
}

/** Instances, custom domains, add-ons and the deploy logs that carry their secrets masked. */
export function createServices(b: Base) {
  const { config, logger, store, engine, networks, edge } = b;
  const domainStore = store.domains();
  const instances = new Instances({
    engine,
    edge,
    store,
    networks,
    domain: config.domain,
    stopGraceMs: config.stopGraceMs,
    aliases: () => domainsByApp(domainStore),
  });
  const domains = new DomainService({
    store: domainStore,
    tls: new HaproxyTls(edge),
    issuer: config.acme.directory
      ? new AcmeIssuer({
          directory: config.acme.directory,
          email: config.acme.email,
          caFile: config.acme.caFile,
          store: domainStore,
        })
      : null,
    refreshEdge: (appId) => instances.refreshEdge(appId),
    logger: logger.child({ part: "domains" }),
    pierDomain: config.domain,
    httpsPort: config.https.port,
  });
  const addons = new AddonService({
    store,
    addons: store.addons(),
    engine,
    networks,
    providers: addonProviders(engine),
    logger: logger.child({ part: "addons" }),
    backupDir: config.backupDir,
    backupDays: config.backupDays,
  });
  const logs = new DeployLogs(store, undefined, (appId) => addons.linkedVariables(appId));
  // The engine's events tell the followers of an app's runtime log of its instances' starts.
  const starts = new InstanceStarts();
  return { instances, domains, addons, logs, starts };
}
export type Services = ReturnType<typeof createServices>;

/** The runtimes' builds: PHP builds' containers start while the push is received (docs/adr/0012). */
export async function createRuntimes(b: Base, instances: Instances) {
  const { config, engine, store } = b;
  const registry = new NpmRegistry({
    url: config.npmRegistry,
    caFile: config.extraCaCerts,
    cacheDir: config.cacheDir,
    proxy: config.proxy,
  });
  const buildSlot = (appId: string, buildNetwork: string | null) => instances.buildSlot(appId, buildNetwork);
  const warmBuilds = new WarmBuilds({
    engine,
    buildNetwork: config.buildNetwork,
    buildSlot,
    findApp: (appId) => store.findApp(appId),
    currentImage: async (appId) => (await store.currentRelease(appId))?.image ?? null,
  });
  const pierGit = {
    socketPath: join(config.dataDir, "run", "git-ssh.sock"),
    hostKey: hostPublicKey(await hostKey(join(config.dataDir, "ssh_host_ed25519_key"))),
    prefixes: pierGitPrefixes(config.gitHost, config.ssh.port),
  };
  const runtimes = {
    docker: new DockerRuntime(engine, config.buildNetwork),
    node: new NodeRuntime({
      engine,
      registry,
      toolchains: new Toolchains({ engine, registry }),
      registryUrl: config.npmRegistry,
      pierGit,
      buildNetwork: config.buildNetwork,
      buildSlot,
    }),
    phpserver: new PhpRuntime({ engine, buildNetwork: config.buildNetwork, buildSlot, warm: warmBuilds }),
  };
  return { registry, warmBuilds, runtimes };
}
export type Runtimes = Awaited<ReturnType<typeof createRuntimes>>;

const portSuffix = (p: number, dflt: number) => (p === dflt ? "" : `:${p}`);
const repoDirOf = (config: Config) => (appId: string) => join(config.dataDir, "repos", `${appId}.git`);

/** The deploy queue and the apps over it; each app's ceiling over the operator's defaults (ADR 0022). */
export function createAppServices(b: Base, s: Services, r: Runtimes) {
  const { config, logger, store, engine } = b;
  const limits = new AppLimits({ store, defaults: config.appDefaults });
  const deployer = new Deployer({
    store,
    engine,
    reach: b.reach,
    limits,
    instances: s.instances,
    logs: s.logs,
    logger: logger.child({ part: "deployer" }),
    repoDir: repoDirOf(config),
    runtimes: r.runtimes,
    deployTimeoutMs: config.deployTimeoutMs,
    listenTimeoutMs: config.listenTimeoutMs,
    stopGraceMs: config.stopGraceMs,
    links: s.addons,
    registry: b.swarm?.releases ?? null,
  });
  const apps = new AppService({
    store,
    engine,
    limits,
    deployer,
    instances: s.instances,
    starts: s.starts,
    logger: logger.child({ part: "apps" }),
    repoDir: repoDirOf(config),
    gitUrl: (id) => `git+ssh://git@${config.gitHost}${portSuffix(config.ssh.port, 22)}/${id}.git`,
    appUrl: (name) => `http://${name}.${config.domain}${portSuffix(config.http.port, 80)}`,
    stopGraceMs: config.stopGraceMs,
    domain: config.domain,
    buildNetwork: config.buildNetwork,
    detachAddons: (appId) => s.addons.detach(appId),
    // The app's domains went with it (cascade): their certificates leave the edge at once.
    dropCertificates: () => s.domains.removeOrphans(),
    registry: b.swarm?.releases ?? null,
  });
  // On a swarm, instances spread again over a node that takes work again (ADR 0030).
  const rebalancer =
    b.nodes &&
    new Rebalancer({
      nodes: b.nodes,
      engine,
      store,
      deployer,
      pinned: async (appId) => (await s.addons.buckets(appId)).some((bucket) => !!bucket.node),
      logger: logger.child({ part: "rebalancer" }),
      everyMs: config.rebalanceEveryMs,
      atOnce: config.rebalanceAtOnce,
    });
  return { limits, deployer, apps, rebalancer };
}
export type AppServices = ReturnType<typeof createAppServices>;
