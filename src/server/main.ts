import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type ServerType, serve } from "@hono/node-server";
import type { Logger } from "pino";
import { HaproxyEdge } from "../adapters/edge/haproxy.js";
import type { EdgePlace } from "../adapters/edge/reach.js";
import { NftFirewall } from "../adapters/nft-isolation.js";
import { claimPoolRoute } from "../adapters/pool-route.js";
import { createPrivateFile, keepPrivate } from "../adapters/private-files.js";
import { SecretBox } from "../adapters/secret-box.js";
import { SqliteStore } from "../adapters/store/sqlite.js";
import { listenFailed, PierError } from "../core/errors.js";
import { scopeOf } from "../core/labels.js";
import { oneManagerNote } from "../core/nodes.js";
import type { Engine } from "../core/ports.js";
import { formatCidr } from "../core/subnets.js";
import { authorizeRepo } from "./access.js";
import { adminToken } from "./admin-token.js";
import { createApi } from "./api.js";
import { type Config, loadConfig } from "./config.js";
import { ConfigError } from "./config-error.js";
import { exitOnCrash } from "./crash.js";
import { connectEngine, connectSwarm } from "./engine-connect.js";
import { startEngineLoop } from "./engine-loop.js";
import { startGitSshServer } from "./git-ssh.js";
import { startIsolation } from "./isolation.js";
import { removeLeftovers } from "./leftovers.js";
import { createLogger } from "./logging.js";
import { Networks } from "./networks.js";
import { NodeService } from "./nodes.js";
import { pushHandler } from "./push-handler.js";
import { reconcile } from "./reconciler.js";
import { availableNodeVersions } from "./runtimes/node.js";
import {
  type AppServices,
  type Base,
  createAppServices,
  createRuntimes,
  createServices,
  type Runtimes,
  type Services,
} from "./services.js";

export const VERSION = "0.1.0";

export interface RunningServer {
  close(): Promise<void>;
  logger: Logger;
}

/** The data dir and what it holds before anything else: private to Pier's user, whatever was left (ADR 0024). */
async function prepareDataDir(config: Config, logger: Logger): Promise<void> {
  const { changed, failed } = await keepPrivate(config.dataDir);
  if (changed > 0)
    logger.warn(
      { dataDir: config.dataDir, entries: changed },
      "made the data dir private (dirs 0700, files 0600)",
    );
  if (failed.length > 0)
    logger.warn(
      { dataDir: config.dataDir, entries: failed.length, first: failed.slice(0, 5) },
      "could not make these entries of the data dir private (owned by another user?): chmod them by hand",
    );
  for (const d of ["repos", "edge", "run"])
    await mkdir(join(config.dataDir, d), { recursive: true, mode: 0o700 });
  createPrivateFile(join(config.dataDir, "pier.db"));
}

/**
 * Tenant isolation (ADR 0019): Pier's own firewall rules, in place for every network before anything
 * starts; the apps' networks from the subnet pool, and the pool's addresses kept on this machine (ADR 0016).
 */
async function startNetworking(
  config: Config,
  d: { engine: Engine; store: SqliteStore; scope: string; logger: Logger },
): Promise<Networks> {
  const pool = formatCidr(config.subnets.pool);
  // On a swarm, the node guard keeps apps apart on every node (ADR 0019): no table on this host.
  const noTable = !config.isolation ? "off" : config.engine === "swarm" ? "swarm" : null;
  const isolation = await startIsolation({
    firewall: new NftFirewall(),
    noTable,
    scope: d.scope,
    pool,
    allow: config.egressAllow,
    hostPorts: [config.http.port, config.https.port],
    logger: d.logger.child({ part: "isolation" }),
  });
  const networks = new Networks({
    engine: d.engine,
    store: d.store,
    pool: config.subnets.pool,
    prefix: config.subnets.prefix,
    isolation,
  });
  await networks.checkPool();
  await isolation.restore(await networks.recorded());
  const poolRoute = await claimPoolRoute(pool);
  if (poolRoute.state === "failed")
    d.logger.warn(
      { pool, reason: poolRoute.reason },
      "could not add an unreachable route for the subnet pool: a connection to an address of it that no network uses leaves this host by its default route (run pier server as root, or add it: ip route add unreachable POOL)",
    );
  return networks;
}

async function startEdge(config: Config, logger: Logger, place: EdgePlace): Promise<HaproxyEdge> {
  const edge = new HaproxyEdge({
    haproxyBin: config.haproxy,
    dir: join(config.dataDir, "edge"),
    listenPort: config.http.port,
    listenHost: config.http.host,
    https: config.https,
    maxConnPerSource: config.edgeMaxConnPerSource,
    place,
    logger: logger.child({ part: "edge" }),
  });
  await edge.start();
  return edge;
}

/**
 * The start's reconcile, awaited until what runs is routed (an error before that fails the start, as an
 * engine that does not answer does); the instances it then starts or redeploys are its own to finish while
 * the API and git serve. A swarm whose manager's dockerd just restarted brings tasks back in its own time
 * (~30 s for the overlays), and each start waits for them: awaited whole, pier server answered nothing
 * until then.
 */
async function reconciledEnough(
  reconcileAll: (onRouted: () => void) => Promise<void>,
  logger: Logger,
): Promise<{ ended: Promise<void> }> {
  let whole = Promise.resolve();
  const routes = new Promise<void>((routed) => {
    whole = reconcileAll(routed);
  });
  const ended = whole.then(
    () => logger.info("reconciled at start"),
    (err) => logger.warn({ err }, "the start's reconcile did not end well"),
  );
  await Promise.race([routes, whole]);
  return { ended };
}

/**
 * What was under way when Pier stopped ends as what serves says (ADR 0010), then what runs is brought in
 * line with the store; then the loops that keep it so for as long as Pier runs: the engine's events, the
 * edge's watchdog, certificates, add-ons and their backups.
 */
async function startRecovery(b: Base, s: Services, a: AppServices): Promise<{ stop(): void }> {
  const { config, logger, store, engine, networks, edge } = b;
  const { instances, addons, domains, starts } = s;
  await a.deployer.recover();
  const reconcileAll = (onRouted?: () => void) =>
    reconcile({
      store,
      engine,
      instances,
      networks,
      deployer: a.deployer,
      logger: logger.child({ part: "reconciler" }),
      ...(onRouted ? { onRouted } : {}),
    });
  const reconciled = await reconciledEnough(reconcileAll, logger);
  void removeLeftovers({
    store,
    engine,
    reposDir: join(config.dataDir, "repos"),
    removeNetworks: (appId) => networks.remove(appId),
    logger,
    registry: b.swarm?.releases ?? null,
  }).catch((err) => logger.warn({ err }, "could not look for what deleted apps left behind"));
  // Add-ons whose container is gone are made again on their volumes (off the path that brings routes back).
  void addons.reconcile().catch((err) => logger.warn({ err }, "could not reconcile the add-ons"));
  addons.startDailyBackups();
  // HAProxy outlives pier server, but may die under it (killed, OOM): the watchdog starts it again.
  edge.watch(1000, () => instances.refreshEdge());
  // Certificates: those missing on the edge installed, then every due issue or renewal (and every minute).
  domains.start();
  const events = startEngineLoop({ engine, store, instances, starts, reconcileAll, logger });
  // The rebalancer's first look counts the instances once the start's reconcile brought them back.
  let rebalance: { stop(): void } | undefined;
  let stopped = false;
  void reconciled.ended.then(() => {
    if (!stopped) rebalance = a.rebalancer?.watch();
  });
  // The swarm's only manager among several nodes: said once at the start (core/nodes.ts oneManagerNote).
  void b.nodes?.listNodes().then(
    (all) => {
      const note = oneManagerNote(all);
      if (note) logger.warn(note);
    },
    () => undefined,
  );
  return {
    stop: () => {
      stopped = true;
      events.stop();
      rebalance?.stop();
    },
  };
}

/** The management API (and the console), listening. */
async function startApi(b: Base, s: Services, r: Runtimes, a: AppServices): Promise<ServerType> {
  const { config, logger, store } = b;
  const api = createApi({
    store,
    limits: a.limits,
    nodeVersions: () => availableNodeVersions(r.registry),
    apps: a.apps,
    addons: s.addons,
    domains: s.domains,
    logs: s.logs,
    nodes: new NodeService(
      b.nodes,
      b.swarm,
      (node) => s.addons.pinnedTo(node),
      () => b.engine.listInstances({}),
      b.swarm?.guards,
      a.rebalancer?.activated.bind(a.rebalancer),
    ),
    logger: logger.child({ part: "api" }),
    maxBodyBytes: config.apiMaxBodyBytes,
    info: {
      version: VERSION,
      domain: config.domain,
      httpPort: config.http.port,
      httpsPort: config.https.port,
      sshPort: config.ssh.port,
      gitHost: config.gitHost,
    },
  });
  const http = serve({ fetch: api.fetch, port: config.api.port, hostname: config.api.host });
  await new Promise<void>((resolve, reject) => {
    http.once("listening", () => resolve());
    http.once("error", (e) => reject(listenFailed(e, "PIER_API_PORT", config.api.host, config.api.port)));
  });
  return http;
}

/** Git over SSH: keys and repositories from the store, each push handed to the deploy queue. */
function startSsh(b: Base, s: Services, r: Runtimes, a: AppServices) {
  const { config, logger, store } = b;
  return startGitSshServer({
    host: config.ssh.host,
    port: config.ssh.port,
    hostKeyPath: join(config.dataDir, "ssh_host_ed25519_key"),
    socketPath: join(config.dataDir, "run", "git-ssh.sock"),
    reposDir: join(config.dataDir, "repos"),
    runDir: join(config.dataDir, "run"),
    maxPushBytes: config.maxPushBytes,
    authTimeoutMs: config.sshAuthTimeoutMs,
    maxUnauthenticated: config.sshMaxUnauthenticated,
    maxUnauthenticatedPerSource: config.sshMaxUnauthenticatedPerSource,
    idleTimeoutMs: config.sshIdleTimeoutMs,
    maxConnectionsPerKey: config.sshMaxConnectionsPerKey,
    logger: logger.child({ part: "ssh" }),
    authorizeKey: async (algo, blob) => {
      const k = await store.findSshKeyByBlob(algo, blob.toString("base64"));
      return k ? { fingerprint: k.fingerprint, keyId: k.id } : null;
    },
    resolveApp: async (ref) => (await store.findApp(ref))?.id ?? null,
    onPushStart: (appId) => r.warmBuilds.prepare(appId),
    authorizeRepo: (keyId, ref, op) => authorizeRepo(store, keyId, ref, op),
    onPush: pushHandler({
      store,
      deployer: a.deployer,
      logs: s.logs,
      appUrl: async (app) => (await a.apps.view(app)).url,
    }),
  });
}

/** The ready line in the log, and where everything is on stderr for the operator. */
function announce(config: Config, logger: Logger, sshPort: number, tokenFile: string): void {
  const apiUrl = `http://${config.api.host}:${config.api.port}`;
  logger.info(
    { api: apiUrl, sshPort, httpPort: config.http.port, dataDir: config.dataDir, tokenFile },
    "pier server ready",
  );
  process.stderr.write(
    [
      "",
      `Pier ${VERSION} is running.`,
      `  console:          ${apiUrl}/`,
      `  API:              ${apiUrl}/v1  (OpenAPI: ${apiUrl}/v1/openapi.json)`,
      `  git over SSH:     port ${sshPort}  (git+ssh://git@${config.gitHost}:${sshPort}/<app_id>.git)`,
      `  HTTP edge:        http://<app>.${config.domain}:${config.http.port}`,
      `  HTTPS edge:       https://<custom domain>:${config.https.port} (pier domain add NAME --app APP; certificates: ${config.acme.directory ?? "your own only, ACME off"})`,
      `  admin token:      ${tokenFile} (the CLI on this host reads it; elsewhere set PIER_URL and PIER_TOKEN)`,
      "",
      "",
    ].join("\n"),
  );
}

/** Stops what Pier runs in this process; instances, add-ons and the edge keep serving. */
async function closeAll(parts: {
  loops: { stop(): void };
  s: Services;
  r: Runtimes;
  edge: HaproxyEdge;
  ssh: { close(): Promise<void> };
  http: ServerType;
  store: SqliteStore;
}): Promise<void> {
  const { loops, s, r, edge, ssh, http, store } = parts;
  loops.stop();
  s.addons.stop();
  s.domains.stop();
  edge.release();
  await ssh.close();
  await r.warmBuilds.close().catch(() => undefined);
  await new Promise<void>((resolve) => {
    http.close(() => resolve());
    // Followed logs (the console's, `pier logs --follow`) never end by themselves: they would keep the
    // server from stopping. Requests under way get a second to finish.
    if ("closeAllConnections" in http) setTimeout(() => http.closeAllConnections(), 1000).unref();
  });
  store.close();
}

/** `pier server`'s composition root: each part made from the settings, in the order they depend on. */
export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  await prepareDataDir(config, logger);
  // Secrets at rest are sealed with this key; it is kept apart from the database (back up both).
  const store = new SqliteStore(
    join(config.dataDir, "pier.db"),
    SecretBox.fromFile(join(config.dataDir, "secret.key")),
  );
  const tokenFile = await adminToken(config, store);
  const scope = scopeOf(config.dataDir);
  const nodes = await connectSwarm(config);
  const { engine, edgePlace, swarm } = await connectEngine(config, scope, logger);
  const networks = await startNetworking(config, { engine, store, scope, logger });
  const edge = await startEdge(config, logger, edgePlace);
  const base: Base = {
    config,
    logger,
    store,
    engine,
    reach: edgePlace,
    nodes,
    swarm,
    networks,
    edge,
    scope,
  };
  const s = createServices(base);
  const r = await createRuntimes(base, s.instances);
  const a = createAppServices(base, s, r);
  const loops = await startRecovery(base, s, a);
  const http = await startApi(base, s, r, a);
  const ssh = await startSsh(base, s, r, a);
  announce(config, logger, ssh.port, tokenFile);
  return { logger, close: () => closeAll({ loops, s, r, edge, ssh, http, store }) };
}

/** `pier server`: runs until SIGTERM or SIGINT. Instances and the edge keep serving after it stops. */
export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  // From here on, an error that escapes every handler is logged (with its stack) before the process exits.
  const logger = createLogger(config.logLevel);
  exitOnCrash(logger);
  let server: RunningServer;
  try {
    server = await startServer(config, logger);
  } catch (e) {
    if (e instanceof PierError) {
      process.stderr.write(`pier server: ${e.message}\n${e.hint ? `hint: ${e.hint}\n` : ""}`);
      process.exit(1);
    }
    throw e;
  }
  const stop = (signal: string) => {
    // At warn: a stop nobody asked for (a signal from elsewhere) must show in a log kept at warn.
    server.logger.warn({ signal }, `stopping on ${signal}; apps and the edge keep serving`);
    void server.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
