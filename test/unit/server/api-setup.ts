// The one builder of the API over the fakes (test/support: the fake engine and edge, the memory store, a
// manual clock) for the API's unit tests (api-answers, limits-api, routes): the real services (apps, deploys,
// add-ons, domains, limits) behind `createApi`, requests through Hono's app.request().
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hono } from "hono";
import pino from "pino";
import { addonProviders } from "../../../src/adapters/addons/providers.js";
import type { Ceiling } from "../../../src/core/limits.js";
import { type Cidr, parseCidr } from "../../../src/core/subnets.js";
import { hashToken } from "../../../src/server/access.js";
import { AddonService } from "../../../src/server/addons.js";
import { type ApiDeps, createApi } from "../../../src/server/api.js";
import type { AppService } from "../../../src/server/apps.js";
import { DeployLogs } from "../../../src/server/deploy-logs.js";
import type { Deployer } from "../../../src/server/deployer.js";
import { DomainService } from "../../../src/server/domains.js";
import { tellFollowers } from "../../../src/server/engine-loop.js";
import { Instances } from "../../../src/server/instances.js";
import { AppLimits } from "../../../src/server/limits.js";
import type { InstanceStarts } from "../../../src/server/log-follow.js";
import { Networks } from "../../../src/server/networks.js";
import { NodeService } from "../../../src/server/nodes.js";
import type { ApiEnv } from "../../../src/server/routes/mount.js";
import type { Runtime } from "../../../src/server/runtimes/runtime.js";
import { withAddonImages } from "../../support/addon-images.js";
import { FakeEdge, FakeTls } from "../../support/fake-edge.js";
import type { FakeEngine } from "../../support/fake-engine.js";
import { FakeIssuer } from "../../support/fake-issuer.js";
import { FakeNodes } from "../../support/fake-nodes.js";
import { ManualClock } from "../../support/manual-clock.js";
import { MemoryStore } from "../../support/memory-store.js";
import { builtImage, deployEngine, deployServices, listen, oneCommitRepo } from "./fakes.js";

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown> & { error?: { code: string; message: string; hint?: string } };
}

export interface ApiOverFakes {
  /** The API, with the answer check on unless `checkAnswers: false` was asked. */
  api: Hono<ApiEnv>;
  deps: ApiDeps;
  store: MemoryStore;
  engine: FakeEngine;
  edge: FakeEdge;
  clock: ManualClock;
  apps: AppService;
  deployer: Deployer;
  /** Who is told of the apps' instance starts: the followers of their logs. */
  starts: InstanceStarts;
  /** Each build waits while this is set (a deploy under way, to cancel). */
  hold: { builds: Promise<void> | null };
  dir: string;
  /** Records an API token; the bearer string is `secret`. */
  token(name: string, secret: string, opts?: { appId?: string; readOnly?: boolean }): Promise<unknown>;
  /** One request with `token`, its body JSON; the answer's JSON body parsed, a text one as `{ text }`. */
  call(token: string, method: string, path: string, body?: unknown): Promise<ApiAnswer>;
  close(): void;
}

/** Resolves when `p` does, rejects with the signal's reason when it aborts first. */
const unlessAborted = (p: Promise<void>, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    p.then(resolve);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });

/** The API over the fakes: one Dockerfile runtime whose builds take no time, instances that answer 200. */
export async function apiOverFakes(
  o: {
    defaults?: Ceiling;
    maxBodyBytes?: number;
    checkAnswers?: boolean;
    nodeVersions?: ApiDeps["nodeVersions"];
    /** The swarm's nodes (a FakeNodes by default); null: one dockerd, the nodes' routes answer NO_SWARM. */
    nodes?: FakeNodes | null;
    /** How often a quiet followed stream says it is alive (the server's 20 s by default). */
    keepAliveMs?: number;
  } = {},
): Promise<ApiOverFakes> {
  const dir = mkdtempSync(join(tmpdir(), "pier-api-"));
  const { server, port } = await listen();
  const { engine, servers } = deployEngine(port);
  withAddonImages(engine);
  const store = new MemoryStore();
  const edge = new FakeEdge();
  const clock = new ManualClock();
  const logger = pino({ level: "silent" });
  const limits = new AppLimits({
    store,
    defaults: o.defaults ?? { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 2 ** 20 },
  });
  // The real subnet pool over the fake engine (add-on servers join networks that exist); isolation rules
  // are the firewall's business, tested apart (networks.test.ts).
  const networks = new Networks({
    engine,
    store,
    pool: parseCidr("10.240.0.0/16") as Cidr,
    prefix: 26,
    isolation: { add: async () => undefined, remove: async () => undefined },
  });
  const domainStore = store.domains();
  const instances = new Instances({ engine, edge, store, networks, domain: "localhost", stopGraceMs: 10 });
  const hold: ApiOverFakes["hold"] = { builds: null };
  const runtime: Runtime = {
    settings: () => ({
      settings: { httpPort: port, tcpPort: null, ipv6Subnet: null, mountDockerSocket: false, cmd: null },
      errors: [],
    }),
    build: async (ctx) => {
      if (hold.builds) await unlessAborted(hold.builds, ctx.signal);
      return builtImage(engine, `pier-app/${ctx.app.id}:${ctx.deployment.id}`);
    },
  };
  const { deployer, apps, starts } = deployServices({
    store,
    engine,
    instances,
    runtime,
    repo: oneCommitRepo(dir),
    logger,
    limits,
  });
  const addons = new AddonService({
    store,
    addons: store.addons(),
    engine,
    networks,
    // The real providers over the fake engine, whose add-on servers play the images' entrypoint (ADR 0015).
    providers: addonProviders(engine),
    logger,
    backupDir: join(dir, "backups"),
    backupDays: 7,
  });
  const domains = new DomainService({
    store: domainStore,
    tls: new FakeTls(),
    issuer: new FakeIssuer(),
    refreshEdge: (appId) => instances.refreshEdge(appId),
    logger,
    pierDomain: "localhost",
    httpsPort: 443,
    clock,
  });
  const deps: ApiDeps = {
    store,
    apps,
    addons,
    domains,
    logs: new DeployLogs(store),
    nodes: new NodeService(o.nodes === undefined ? new FakeNodes() : o.nodes),
    limits,
    logger,
    nodeVersions: o.nodeVersions ?? (async () => [{ version: "22.16.0", major: 22, lts: "Jod", eol: false }]),
    info: {
      version: "0",
      domain: "localhost",
      httpPort: 80,
      httpsPort: 443,
      sshPort: 22,
      gitHost: "localhost",
    },
    maxBodyBytes: o.maxBodyBytes ?? 2 ** 20,
    checkAnswers: o.checkAnswers ?? true,
    ...(o.keepAliveMs ? { keepAliveMs: o.keepAliveMs } : {}),
  };
  // The engine's starts reach the followers of runtime logs, as the engine loop has them do (main.ts).
  void engine.events((e) => tellFollowers(starts, e), new AbortController().signal);
  const api = createApi(deps);
  return {
    api,
    deps,
    store,
    engine,
    edge,
    clock,
    apps,
    deployer,
    starts,
    hold,
    dir,
    token: (name, secret, t = {}) =>
      store.addApiToken({
        id: `tok-${name}`,
        name,
        hash: hashToken(secret),
        appId: t.appId ?? null,
        readOnly: t.readOnly ?? false,
        bootstrap: false,
      }),
    async call(token, method, path, body) {
      const r = await api.request(path, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await r.text();
      const json = (r.headers.get("content-type") ?? "").includes("json");
      return { status: r.status, body: json ? JSON.parse(text) : text ? { text } : {} };
    },
    close() {
      for (const s of [server, ...servers]) s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
