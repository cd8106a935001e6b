import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type { Logger } from "pino";
import { AcmeIssuer } from "../adapters/acme.js";
import { kvProvider } from "../adapters/addons/kv.js";
import { postgresqlProvider } from "../adapters/addons/postgresql.js";
import { HaproxyEdge } from "../adapters/edge/haproxy.js";
import { HaproxyTls } from "../adapters/edge/haproxy-tls.js";
import { DockerEngine } from "../adapters/engine/docker.js";
import { NftFirewall, noFirewall } from "../adapters/nft-isolation.js";
import { NpmRegistry } from "../adapters/npm-registry.js";
import { claimPoolRoute } from "../adapters/pool-route.js";
import { createPrivateFile, makePrivate } from "../adapters/private-files.js";
import { SecretBox } from "../adapters/secret-box.js";
import { SqliteStore } from "../adapters/store/sqlite.js";
import { droppedLine, isDropped } from "../core/bounded-queue.js";
import { pierGitPrefixes } from "../core/build-git.js";
import { listenFailed, PierError } from "../core/errors.js";
import { instanceNumber, isBuildContainer, LABEL } from "../core/labels.js";
import type { EngineEvent, Store } from "../core/ports.js";
import { formatCidr } from "../core/subnets.js";
import { authorizeRepo, BOOTSTRAP_NAME, hashToken } from "./access.js";
import { AddonService } from "./addons.js";
import { createApi } from "./api.js";
import { AppService } from "./apps.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { exitOnCrash } from "./crash.js";
import { DeployLogs } from "./deploy-logs.js";
import { Deployer } from "./deployer.js";
import { DomainService, domainsByApp } from "./domains.js";
import { hostKey, hostPublicKey, startGitSshServer } from "./git-ssh.js";
import { Instances } from "./instances.js";
import { startIsolation } from "./isolation.js";
import { removeLeftovers } from "./leftovers.js";
import { AppLimits } from "./limits.js";
import { createLogger } from "./logging.js";
import { Networks } from "./networks.js";
import { reconcile } from "./reconciler.js";
import { DockerRuntime } from "./runtimes/docker.js";
import { availableNodeVersions, NodeRuntime } from "./runtimes/node.js";
import { PhpRuntime } from "./runtimes/php.js";
import { WarmBuilds } from "./runtimes/php-warm.js";
import { Toolchains } from "./toolchains.js";

export const VERSION = "0.1.0";

/**
 * The bootstrap admin token: kept hashed in the store, in clear only in <data>/cli.json (0600) for the local
 * CLI. It is PIER_ADMIN_TOKEN when set, else the one cli.json holds, else a new one. Exactly one bootstrap
 * token is valid: setting a new PIER_ADMIN_TOKEN (or deleting cli.json) revokes the previous one.
 */
async function adminToken(config: Config, store: Store): Promise<string> {
  const file = join(config.dataDir, "cli.json");
  let token = config.adminToken;
  if (!token && existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as { token?: string };
      if (saved.token && (await store.findApiTokenByHash(hashToken(saved.token)))?.bootstrap)
        token = saved.token;
    } catch {
      // A damaged cli.json: a new token replaces it.
    }
  }
  token ??= randomBytes(32).toString("base64url");
  const known = await store.findApiTokenByHash(hashToken(token));
  if (known && !known.bootstrap) {
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_ADMIN_TOKEN is the value of the API token '${known.name}'.`,
      "Choose another value (at least 24 characters), or revoke that token first.",
    );
  }
  if (!known) {
    await store.addApiToken({
      id: `tok-${randomBytes(6).toString("hex")}`,
      name: BOOTSTRAP_NAME,
      hash: hashToken(token),
      appId: null,
      readOnly: false,
      bootstrap: true,
    });
  }
  await store.pruneBootstrapTokens(hashToken(token));
  const url = `http://${config.api.host === "0.0.0.0" ? "127.0.0.1" : config.api.host}:${config.api.port}`;
  await writeFile(file, `${JSON.stringify({ url, token }, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}

export interface RunningServer {
  close(): Promise<void>;
  logger: Logger;
}

export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  // Private to Pier's user, whatever an older version or the umask left (ADR 0024).
  const { changed, failed } = await makePrivate(config.dataDir);
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
  // Secrets at rest are sealed with this key; it is kept apart from the database (back up both).
  const store = new SqliteStore(
    join(config.dataDir, "pier.db"),
    SecretBox.fromFile(join(config.dataDir, "secret.key")),
  );
  const tokenFile = await adminToken(config, store);

  const scope = createHash("sha256").update(config.dataDir).digest("hex").slice(0, 12);
  const engine = new DockerEngine({
    socketPath: config.dockerSocket,
    scope,
    sandboxImage: "pier/base:bookworm",
  });
  await engine.ping();
  if (config.buildNetwork && !(await engine.networkExists(config.buildNetwork)))
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_BUILD_NETWORK: there is no Docker network named '${config.buildNetwork}'.`,
      `Create it (docker network create ${config.buildNetwork}) or unset PIER_BUILD_NETWORK.`,
    );
  // Tenant isolation (ADR 0019): Pier's own firewall rules, in place for every network before anything starts.
  const isolation = await startIsolation({
    firewall: config.isolation ? new NftFirewall() : noFirewall,
    disable: config.isolation ? null : new NftFirewall(),
    scope,
    pool: formatCidr(config.subnets.pool),
    allow: config.egressAllow,
    hostPorts: [config.http.port, config.https.port],
    logger: logger.child({ part: "isolation" }),
  });
  const networks = new Networks({
    engine,
    store,
    pool: config.subnets.pool,
    prefix: config.subnets.prefix,
    isolation,
  });
  await networks.checkPool();
  await isolation.restore(await networks.recorded());
  // Addresses of the pool that no network uses must not leave this machine (ADR 0016).
  const poolRoute = await claimPoolRoute(formatCidr(config.subnets.pool));
  if (poolRoute.state === "failed")
    logger.warn(
      { pool: formatCidr(config.subnets.pool), reason: poolRoute.reason },
      "could not add an unreachable route for the subnet pool: a connection to an address of it that no network uses leaves this host by its default route (run pier server as root, or add it: ip route add unreachable POOL)",
    );
  const edge = new HaproxyEdge({
    haproxyBin: config.haproxy,
    dir: join(config.dataDir, "edge"),
    listenPort: config.http.port,
    listenHost: config.http.host,
    https: config.https,
    maxConnPerSource: config.edgeMaxConnPerSource,
    logger: logger.child({ part: "edge" }),
  });
  await edge.start();

  const registry = new NpmRegistry({
    url: config.npmRegistry,
    caFile: config.extraCaCerts,
    cacheDir: config.cacheDir,
  });
  const toolchains = new Toolchains({ engine, registry });
  const hostKeyPath = join(config.dataDir, "ssh_host_ed25519_key");
  const gitSocket = join(config.dataDir, "run", "git-ssh.sock");
  const pierGit = {
    socketPath: gitSocket,
    hostKey: hostPublicKey(await hostKey(hostKeyPath)),
    prefixes: pierGitPrefixes(config.gitHost, config.ssh.port),
  };
  const domainStore = store.domains();
  const repoDir = (appId: string) => join(config.dataDir, "repos", `${appId}.git`);
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
  const addonOpts = { docker: engine.client, scope };
  const addons = new AddonService({
    store,
    addons: store.addons(),
    engine,
    networks,
    providers: { kv: kvProvider(addonOpts), postgresql: postgresqlProvider(addonOpts) },
    logger: logger.child({ part: "addons" }),
    backupDir: config.backupDir,
    backupDays: config.backupDays,
  });
  const logs = new DeployLogs(store, undefined, (appId) => addons.linkedVariables(appId));
  // PHP builds' containers start while the push is received (docs/adr/0012).
  const warmBuilds = new WarmBuilds({
    engine,
    buildNetwork: config.buildNetwork,
    buildSandbox: (appId, buildNetwork) => instances.buildSandbox(appId, buildNetwork),
    findApp: (appId) => store.findApp(appId),
    currentImage: async (appId) => (await store.currentRelease(appId))?.image ?? null,
  });
  // Each app's ceiling over the operator's defaults, and the caps on variables (ADR 0022).
  const limits = new AppLimits({ store, defaults: config.appDefaults });
  const deployer = new Deployer({
    store,
    engine,
    limits,
    instances,
    logs,
    logger: logger.child({ part: "deployer" }),
    repoDir,
    runtimes: {
      docker: new DockerRuntime(engine, config.buildNetwork),
      node: new NodeRuntime({
        engine,
        registry,
        toolchains,
        registryUrl: config.npmRegistry,
        pierGit,
        buildNetwork: config.buildNetwork,
        buildSandbox: (appId, buildNetwork) => instances.buildSandbox(appId, buildNetwork),
      }),
      phpserver: new PhpRuntime({
        engine,
        buildNetwork: config.buildNetwork,
        buildSandbox: (appId, buildNetwork) => instances.buildSandbox(appId, buildNetwork),
        warm: warmBuilds,
      }),
    },
    deployTimeoutMs: config.deployTimeoutMs,
    listenTimeoutMs: config.listenTimeoutMs,
    stopGraceMs: config.stopGraceMs,
    links: addons,
  });
  const portSuffix = (p: number, dflt: number) => (p === dflt ? "" : `:${p}`);
  const apps = new AppService({
    store,
    engine,
    limits,
    deployer,
    instances,
    logger: logger.child({ part: "apps" }),
    repoDir,
    gitUrl: (id) => `git+ssh://git@${config.gitHost}${portSuffix(config.ssh.port, 22)}/${id}.git`,
    appUrl: (name) => `http://${name}.${config.domain}${portSuffix(config.http.port, 80)}`,
    stopGraceMs: config.stopGraceMs,
    domain: config.domain,
    buildNetwork: config.buildNetwork,
    detachAddons: (appId) => addons.detach(appId),
    // The app's domains went with it (cascade): their certificates leave the edge at once.
    dropCertificates: () => domains.removeOrphans(),
  });

  await deployer.recover();
  const reconcileAll = () =>
    reconcile({ store, engine, instances, networks, deployer, logger: logger.child({ part: "reconciler" }) });
  await reconcileAll();
  void removeLeftovers({
    store,
    engine,
    reposDir: join(config.dataDir, "repos"),
    removeNetworks: (appId) => networks.remove(appId),
    logger,
  }).catch((err) => logger.warn({ err }, "could not look for what deleted apps left behind"));
  // Add-ons whose container is gone are made again on their volumes (off the path that brings routes back).
  void addons.reconcile().catch((err) => logger.warn({ err }, "could not reconcile the add-ons"));
  addons.startDailyBackups();
  // HAProxy outlives pier server, but may die under it (killed, OOM): the watchdog starts it again.
  edge.watch(1000, () => instances.refreshEdge());
  // Certificates: those missing on the edge installed, then every due issue or renewal (and every minute).
  domains.start();

  const events = new AbortController();
  const onEngineEvent = async (e: EngineEvent) => {
    const appId = e.labels[LABEL.app];
    if (!appId) return;
    if (e.labels[LABEL.role] === "sandbox") {
      if (e.type !== "start") return;
      const n = await instances.rejoin(appId, e.containerId).catch((err) => {
        logger.warn({ err, appId }, "could not restart the instances of a restarted sandbox");
        return 0;
      });
      if (n > 0) logger.info({ appId, instances: n }, "sandbox restarted: its instances rejoined it");
      return;
    }
    if (e.type !== "die" || isBuildContainer(e.labels)) return;
    await store
      .recordExit({
        appId,
        containerId: e.containerId,
        instance: instanceNumber(e.labels),
        exitCode: e.exitCode ?? -1,
        at: e.at,
      })
      .catch(() => undefined);
  };
  // The engine's events, for as long as Pier runs. When the stream ends (the engine restarted), Pier
  // waits for the engine and reconciles: sandboxes first, then the instances in them, then the routes.
  void (async () => {
    while (!events.signal.aborted) {
      await engine
        .events((e) => void onEngineEvent(e), events.signal)
        .catch((err) => logger.warn({ err }, "engine events stream failed"));
      if (events.signal.aborted) return;
      logger.warn("engine events stream ended: waiting for the engine, then reconciling");
      while (!events.signal.aborted) {
        await new Promise((r) => setTimeout(r, 1000));
        if (
          await engine.ping().then(
            () => true,
            () => false,
          )
        )
          break;
      }
      if (events.signal.aborted) return;
      await reconcileAll().catch((err) =>
        logger.warn({ err }, "reconcile after the engine came back failed"),
      );
      // The sandboxes' "start" events of the engine's restart came before this stream: an instance the
      // engine started before its sandbox sits in a stale network namespace. Restart those into the new one.
      // One engine list for every app's sandboxes.
      const sandboxes = await engine.listSandboxes({ [LABEL.sandboxFor]: "instances" }).catch(() => []);
      for (const s of sandboxes.filter((x) => x.running)) {
        const appId = s.labels[LABEL.app];
        if (!appId) continue;
        const n = await instances.rejoin(appId, s.id).catch(() => 0);
        if (n > 0) logger.info({ appId, instances: n }, "instances rejoined their restarted sandbox");
      }
      logger.info("engine back: reconciled");
    }
  })();

  const api = createApi({
    store,
    limits,
    nodeVersions: () => availableNodeVersions(registry),
    apps,
    addons,
    domains,
    logs,
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

  const ssh = await startGitSshServer({
    host: config.ssh.host,
    port: config.ssh.port,
    hostKeyPath,
    socketPath: gitSocket,
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
    onPushStart: (appId) => warmBuilds.prepare(appId),
    authorizeRepo: (keyId, ref, op) => authorizeRepo(store, keyId, ref, op),
    onPush: async (req) => {
      const app = await store.findApp(req.appId);
      if (!app) return { ok: false, message: `App ${req.appId} not found.` };
      let queued: Awaited<ReturnType<Deployer["enqueue"]>>;
      try {
        queued = await deployer.enqueue(app, {
          commit: req.newSha,
          cause: `git push by key ${req.keyFingerprint}`,
          withoutCache: false,
          gitEnv: req.gitEnv,
        });
      } catch (e) {
        // APP_BUSY (the app is being stopped or deleted): the pusher reads why, not "internal error".
        if (!(e instanceof PierError)) throw e;
        return { ok: false, message: `Push rejected: ${e.message}${e.hint ? ` (${e.hint})` : ""}` };
      }
      const { deployment, done } = queued;
      // The pusher reads the log at its own pace: what it does not keep up with is dropped for it, with a
      // marker line (deploy-logs.ts); the deploy and the log's other followers never wait for it.
      const { lines, stop } = await logs.follower(deployment.id);
      const pumped = (async () => {
        for await (const l of lines) await req.log(isDropped(l) ? droppedLine(l.dropped) : l.line);
      })();
      const onAbort = () => {
        stop();
        void deployer.cancel(app.id, deployment.id).catch(() => undefined);
      };
      req.signal.addEventListener("abort", onAbort, { once: true });
      const end = await done;
      req.signal.removeEventListener("abort", onAbort);
      // The log's last lines go before the outcome; a pusher that stopped reading gets it 30 s later.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pumped, new Promise((r) => (timer = setTimeout(r, 30_000)))]);
      clearTimeout(timer);
      stop();
      return end.state === "succeeded"
        ? { ok: true, message: `Deployed ${app.name}: ${(await apps.view(app)).url}` }
        : {
            ok: false,
            message: `Push rejected: deployment ${end.id} ${end.state}; the previous release, if any, keeps serving.`,
          };
    },
  });

  const apiUrl = `http://${config.api.host}:${config.api.port}`;
  logger.info(
    { api: apiUrl, sshPort: ssh.port, httpPort: config.http.port, dataDir: config.dataDir, tokenFile },
    "pier server ready",
  );
  process.stderr.write(
    [
      "",
      `Pier ${VERSION} is running.`,
      `  console:          ${apiUrl}/`,
      `  API:              ${apiUrl}/v1  (OpenAPI: ${apiUrl}/v1/openapi.json)`,
      `  git over SSH:     port ${ssh.port}  (git+ssh://git@${config.gitHost}:${ssh.port}/<app_id>.git)`,
      `  HTTP edge:        http://<app>.${config.domain}:${config.http.port}`,
      `  HTTPS edge:       https://<custom domain>:${config.https.port} (pier domain add NAME --app APP; certificates: ${config.acme.directory ?? "your own only, ACME off"})`,
      `  admin token:      ${tokenFile} (the CLI on this host reads it; elsewhere set PIER_URL and PIER_TOKEN)`,
      "",
      "",
    ].join("\n"),
  );

  return {
    logger,
    close: async () => {
      events.abort();
      addons.stop();
      domains.stop();
      edge.unwatch();
      await ssh.close();
      await warmBuilds.close().catch(() => undefined);
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        // Followed logs (the console's, `pier logs --follow`) never end by themselves: they would keep the
        // server from stopping. Requests under way get a second to finish.
        if ("closeAllConnections" in http) setTimeout(() => http.closeAllConnections(), 1000).unref();
      });
      store.close();
    },
  };
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
