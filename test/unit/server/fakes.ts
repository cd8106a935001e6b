// Fakes of the engine and the edge for the unit tests of the deploy path (transactions, concurrency): the
// engine keeps containers in memory and every instance "listens" on an HTTP server of its own on loopback.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Logger } from "pino";
import type {
  Engine,
  InstanceInfo,
  InstanceSpec,
  RoutableInstance,
  SandboxInfo,
  SandboxSpec,
  Store,
} from "../../../src/core/ports.js";
import { AppService } from "../../../src/server/apps.js";
import { DeployLogs } from "../../../src/server/deploy-logs.js";
import { Deployer } from "../../../src/server/deployer.js";
import type { Instances } from "../../../src/server/instances.js";
import { AppLimits } from "../../../src/server/limits.js";
import type { Runtime } from "../../../src/server/runtimes/runtime.js";

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
}): { deployer: Deployer; apps: AppService } {
  const { store, instances, logger, repo } = d;
  // The fake implements the engine calls the deploy path makes, not the whole port (issue 16 reshapes it).
  const engine = d.engine as unknown as Engine;
  const limits = new AppLimits({
    store,
    defaults: { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 2 ** 20 },
  });
  const deployer = new Deployer({
    store,
    limits,
    engine,
    instances,
    logs: new DeployLogs(store),
    logger,
    repoDir: () => repo,
    runtimes: { docker: d.runtime },
    deployTimeoutMs: 30_000,
    listenTimeoutMs: 5_000,
    stopGraceMs: 10,
  });
  const apps = new AppService({
    store,
    limits,
    engine,
    deployer,
    instances,
    logger,
    repoDir: () => repo,
    gitUrl: (id) => `git+ssh://git@localhost/${id}.git`,
    appUrl: (name) => `http://${name}.localhost`,
    stopGraceMs: 10,
    domain: "localhost",
    buildNetwork: null,
  });
  return { deployer, apps };
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

/** Containers in memory; every instance "listens" on the test's HTTP server. */
export class FakeEngine {
  containers: InstanceInfo[] = [];
  sandboxes: SandboxInfo[] = [];
  failRun = false;
  /** Awaited at the start of each runInstance (a test holds a start half-way). */
  beforeRun: ((spec: InstanceSpec) => Promise<void>) | null = null;
  servers: Server[] = [];
  /** Containers created so far. */
  n = 0;
  constructor(private readonly port: number) {}

  async ping() {}
  async ensureNetwork() {}
  async removeNetworks() {}
  async removeVolumes() {}
  async listVolumes() {
    return [];
  }
  async removeVolume() {
    return true;
  }
  async imageExists() {
    return true;
  }
  async imageTags() {
    return [];
  }
  async removeImage() {}
  async listSandboxes(labels: Record<string, string>) {
    return this.sandboxes.filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }
  async createSandbox(spec: SandboxSpec): Promise<SandboxInfo> {
    const s: SandboxInfo = {
      id: `sb-${++this.n}`,
      labels: {
        ...spec.labels,
        "pier.network": spec.network.name,
        "pier.http-port": spec.httpPort === null ? "" : String(spec.httpPort),
        "pier.tcp-port": "",
      },
      running: true,
      http: { host: "127.0.0.1", port: this.port },
      tcp: null,
      networkAddress: "127.0.0.1",
    };
    this.sandboxes.push(s);
    return s;
  }
  async removeSandbox(id: string) {
    this.sandboxes = this.sandboxes.filter((s) => s.id !== id);
  }
  async runInstance(spec: InstanceSpec): Promise<InstanceInfo> {
    if (this.failRun) throw new Error("engine: no space left on device");
    await this.beforeRun?.(spec);
    const sandbox = spec.sandbox && this.sandboxes.find((s) => s.id === spec.sandbox?.id);
    if (spec.sandbox && !sandbox?.running)
      throw new Error(`cannot join network of a non running container: ${spec.sandbox.id}`);
    const own = await listen();
    this.servers.push(own.server);
    const i: InstanceInfo = {
      id: `c-${++this.n}`,
      name: spec.name,
      labels: { ...spec.labels, ...(spec.sandbox ? { "pier.sandbox": spec.sandbox.id } : {}) },
      state: "running",
      running: true,
      startedAt: new Date().toISOString(),
      restarts: 0,
      exitCode: null,
      // Each instance has its own address, so the routes tell them apart.
      http: { host: "127.0.0.1", port: own.port },
      tcp: null,
      networkAddress: "127.0.0.1",
    };
    this.containers.push(i);
    return i;
  }
  async listInstances(labels: Record<string, string>) {
    return this.containers.filter((c) => Object.entries(labels).every(([k, v]) => c.labels[k] === v));
  }
  async listRoutable(): Promise<RoutableInstance[]> {
    return this.containers.filter((c) => c.running);
  }
  async inspectInstance(id: string) {
    return this.containers.find((c) => c.id === id) ?? null;
  }
  async removeInstance(id: string) {
    this.containers = this.containers.filter((c) => c.id !== id);
  }
  async stopInstance(id: string) {
    const c = this.containers.find((x) => x.id === id);
    if (c) c.running = false;
  }
  async execInInstance() {
    return 1;
  }
  async logs() {}
}

/** The one fake edge lives in test/support (it passes the Edge conformance suite). */
export { FakeEdge } from "../../support/fake-edge.js";
