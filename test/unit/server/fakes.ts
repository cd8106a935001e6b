// The deploy path's unit tests (transactions, concurrency) over the one fake engine (test/support) and a
// fake edge: every instance "listens" on an HTTP server of its own on loopback.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Logger } from "pino";
import { hostPlace } from "../../../src/adapters/edge/reach.js";
import type { Store } from "../../../src/core/ports.js";
import { AppService } from "../../../src/server/apps.js";
import { DeployLogs } from "../../../src/server/deploy-logs.js";
import { Deployer } from "../../../src/server/deployer.js";
import { Instances } from "../../../src/server/instances.js";
import { AppLimits } from "../../../src/server/limits.js";
import { InstanceStarts } from "../../../src/server/log-follow.js";
import type { Runtime } from "../../../src/server/runtimes/runtime.js";
import { FakeEdge } from "../../support/fake-edge.js";
import { FakeEngine } from "../../support/fake-engine.js";

type InstancesDeps = ConstructorParameters<typeof Instances>[0];

/**
 * Instances over the given fakes, as the server tests use them: networks made and removed at once, apps at
 * `<name>.localhost`, a 10 ms stop grace, the edge a FakeEdge, unless `d` says otherwise.
 */
export function fakeInstances(
  d: Pick<InstancesDeps, "engine" | "store"> & Partial<InstancesDeps>,
): Instances {
  return new Instances({
    edge: new FakeEdge(),
    networks: { ensure: async () => undefined, remove: async () => undefined },
    domain: "localhost",
    stopGraceMs: 10,
    ...d,
  });
}

/** A bare repository under `dir` holding one commit (a Dockerfile): what the deploy path reads. */
export function oneCommitRepo(dir: string): string {
  const repo = join(dir, "repo.git");
  execFileSync("git", ["init", "-q", "--bare", repo]);
  const work = join(dir, "work");
  execFileSync("git", ["init", "-q", "-b", "master", work]);
  writeFileSync(join(work, "Dockerfile"), "FROM scratch\n");
  const git = (...a: string[]) =>
    execFileSync("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@t", ...a]);
  git("add", "-A");
  git("commit", "-qm", "one");
  git("push", "-q", repo, "master");
  return repo;
}

/** The deploy path's services over the fakes: one Dockerfile runtime, no limit in the way, short timeouts. */
export function deployServices(d: {
  store: Store;
  engine: FakeEngine;
  instances: Instances;
  runtime: Runtime;
  repo: string;
  logger: Logger;
  /** Default: no limit in the way. */
  limits?: AppLimits;
}): { deployer: Deployer; apps: AppService; starts: InstanceStarts } {
  const { store, instances, logger, repo } = d;
  const { engine } = d;
  const limits =
    d.limits ??
    new AppLimits({
      store,
      defaults: { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 2 ** 20 },
    });
  const deployer = new Deployer({
    store,
    limits,
    engine,
    // The fake engine's instances listen on this machine's loopback: reached directly, as on one dockerd.
    reach: hostPlace,
    instances,
    logs: new DeployLogs(store),
    logger,
    repoDir: () => repo,
    runtimes: { docker: d.runtime },
    deployTimeoutMs: 30_000,
    listenTimeoutMs: 5_000,
    stopGraceMs: 10,
  });
  const starts = new InstanceStarts();
  const apps = new AppService({
    store,
    limits,
    engine,
    deployer,
    instances,
    starts,
    logger,
    repoDir: () => repo,
    gitUrl: (id) => `git+ssh://git@localhost/${id}.git`,
    appUrl: (name) => `http://${name}.localhost`,
    stopGraceMs: 10,
    domain: "localhost",
    buildNetwork: null,
  });
  return { deployer, apps, starts };
}

/** An HTTP server on loopback: 500 on /bad, else 200. */
export async function listen(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.statusCode = req.url === "/bad" ? 500 : 200;
    res.end("ok");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

/**
 * The one fake engine (test/support) for the deploy path: a sandbox publishes the test's HTTP server
 * (`port`), and each instance listens on an HTTP server of its own on loopback, so the routes tell them
 * apart. `servers` are those servers, for the test to close.
 */
export function deployEngine(port: number): { engine: FakeEngine; servers: Server[] } {
  const servers: Server[] = [];
  const engine = new FakeEngine({
    serve: async (kind) => {
      if (kind === "sandbox") return { http: { host: "127.0.0.1", port }, networkAddress: "127.0.0.1" };
      const own = await listen();
      servers.push(own.server);
      return { http: { host: "127.0.0.1", port: own.port }, networkAddress: "127.0.0.1", own: true };
    },
  });
  return { engine, servers };
}

/** The runtime's build leaves its image on the engine, as a real build does. */
export function builtImage(engine: FakeEngine, tag: string): string {
  engine.addImage(tag);
  return tag;
}

/** The one fake edge lives in test/support (it passes the Edge conformance suite). */
export { FakeEdge };
