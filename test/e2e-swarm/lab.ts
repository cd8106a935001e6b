// The swarm lab (scripts/swarm-lab.sh, ADR 0030) as the swarm e2e files use it: up, kill, start, down,
// the docker CLI against one of its nodes, and a bounded wait.
//
// This process owns the lab it brings up: every call passes PIER_SWARM_LAB_OWNER (this process's pid), so
// `up` takes the lab's lock for it and holds it until the file's final `down` (or this process's death):
// another run's file on the same lab name refuses at once, naming this process, instead of bringing the
// lab down under it. A lock left by a dead process is taken over with a notice (scripts/swarm-lab.sh).
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Docker from "dockerode";
import { DockerRegistryPush } from "../../src/adapters/engine/registry-push.js";
import { SwarmEngine } from "../../src/adapters/engine/swarm.js";
import { LABEL } from "../../src/core/labels.js";
import type { InstanceSpec } from "../../src/core/ports.js";
import { Pier } from "../e2e/harness.js";

const pexec = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DOCKER = "/usr/bin/docker";

export interface LabNode {
  name: string;
  address: string;
  dockerHost: string;
  running: boolean;
}

/** What `swarm-lab up N --json` prints. */
export interface LabInfo {
  dockerHost: string;
  managerAddress: string;
  hostAddress: string;
  registry: { address: string; user: string; passwordFile: string; caFile: string };
  /** A docker CLI configuration directory logged in to the registry. */
  dockerConfig: string;
  nodes: LabNode[];
}

/** A node's engine socket (its DOCKER_HOST without the scheme). */
export const labSocket = (info: LabInfo, node: string): string =>
  info.nodes.find((n) => n.name === node)?.dockerHost.replace(/^unix:\/\//, "") ?? "";

/** The lab registry's credentials, as a swarm service's pull needs them. */
export function labRegistryAuth(info: LabInfo): {
  username: string;
  password: string;
  serveraddress: string;
} {
  const password = readFileSync(info.registry.passwordFile, "utf8").trim();
  return { username: info.registry.user, password, serveraddress: info.registry.address };
}

/** The classes a lab driver is made of: this build's by default, another build's for an A/B (bench/swarm-start). */
export interface DriverClasses {
  SwarmEngine: typeof SwarmEngine;
  DockerRegistryPush: typeof DockerRegistryPush;
}

/**
 * A swarm driver on the lab's manager with the lab's registry, as `pier server` makes one (without the
 * server): each node's engine reachable for exec unless `reachNodes` is false.
 */
export function labSwarmEngine(
  info: LabInfo,
  scope: string,
  opts: { reachNodes?: boolean; stopGraceMs?: number; classes?: DriverClasses } = {},
): SwarmEngine {
  const { SwarmEngine: Engine, DockerRegistryPush: Push } = opts.classes ?? {
    SwarmEngine,
    DockerRegistryPush,
  };
  const manager = new Docker({ socketPath: labSocket(info, "node1") });
  const auth = labRegistryAuth(info);
  const { serveraddress: address, username, password } = auth;
  return new Engine({
    docker: manager,
    scope,
    registry: new Push({ docker: manager, address, username, password }),
    pullAuth: auth,
    stopGraceMs: opts.stopGraceMs ?? 2000,
    // Beside the lab's own files (its client configuration): gone with the lab.
    keptDir: join(dirname(info.dockerConfig), "kept", scope),
    nodeEngine: (n) =>
      opts.reachNodes === false ? null : new Docker({ socketPath: labSocket(info, n.name) }),
  });
}

/** The busybox image the driver's lab tests and bench/swarm-start import on the manager (`importBusybox`). */
export const LAB_BUSYBOX = "pier-lab/busybox:1";

/**
 * An instance of `app` running busybox's httpd on port 8080, serving a page that names its container (its
 * host name), on the app's network `<app>-net`, with the app's and these labels.
 */
export function httpdInstance(name: string, app: string, labels: Record<string, string>): InstanceSpec {
  return {
    name,
    image: LAB_BUSYBOX,
    env: {},
    labels: { [LABEL.app]: app, ...labels },
    cmd: ["/bin/sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"],
    httpPort: 8080,
    tcpPort: null,
    memoryBytes: 32 * 2 ** 20,
    network: { name: `${app}-net`, ipv6Subnet: null },
    mountDockerSocket: false,
    restart: true,
    slot: { appId: app },
    buckets: [],
  };
}

/** `docker ps` arguments for an app's running instance containers on one engine. */
export const instancePs = (appId: string): string[] => [
  "ps",
  "-q",
  "--filter",
  `label=pier.app=${appId}`,
  "--filter",
  "label=pier.role=instance",
];

/** The settings of a `pier server` with PIER_ENGINE=swarm on `node`'s engine and the lab's registry. */
export function swarmSettings(info: LabInfo, node = "node1"): Record<string, string> {
  return {
    PIER_ENGINE: "swarm",
    PIER_DOCKER_SOCKET: labSocket(info, node),
    // The edge's ports are published on the manager's own address (its sandbox is on the manager).
    PIER_HTTP_HOST: info.nodes.find((n) => n.name === node)?.address ?? "",
    PIER_SWARM_REGISTRY: info.registry.address,
    PIER_SWARM_REGISTRY_USER: info.registry.user,
    PIER_SWARM_REGISTRY_PASSWORD_FILE: info.registry.passwordFile,
    // Where the manager's dockerd finds the registry's CA (its own /etc/docker on the lab): Pier's calls to the
    // registry's API (tags, deletes) trust what the manager trusts, as on a machine Pier shares with it.
    PIER_DOCKER_CERTS_DIR: join(dirname(labSocket(info, node)), "etc-docker", "certs.d"),
  };
}

/** Runs the lab script as this process, the lab's owner; rejects with its stderr when it fails. */
export async function lab(...args: string[]): Promise<string> {
  return labAs(process.pid, ...args);
}

/** Runs the lab script for the owner `owner` (a pid), as another process's file would. */
export async function labAs(owner: number, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await pexec("bash", [join(ROOT, "scripts/swarm-lab.sh"), ...args], {
      env: { ...process.env, PIER_SWARM_LAB_OWNER: String(owner) },
      timeout: 180_000,
      maxBuffer: 2 ** 24,
    });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`swarm-lab ${args.join(" ")} failed: ${err.stderr ?? err.message}`);
  }
}

export async function labUp(nodes: number): Promise<LabInfo> {
  current = JSON.parse(await lab("up", String(nodes), "--json")) as LabInfo;
  return current;
}

/** The lab this file brought up last (its nodes' logs are shown when a test fails). */
let current: LabInfo | null = null;
const NODE_LOG_LINES = 40;

// A failed test shows the end of each node's dockerd log while the lab is still up: a node's engine that
// died under a test (its socket refusing) says why there, and nowhere else once `down` removes the lab.
afterEach((t) => {
  if (t.passed || !current) return;
  for (const n of current.nodes) {
    const log = join(dirname(labSocket(current, n.name)), "dockerd.log");
    if (!existsSync(log)) continue;
    const tail = readFileSync(log, "utf8")
      .split("\n")
      .slice(-NODE_LOG_LINES - 1)
      .join("\n");
    console.error(
      `\n----- the test "${t.name}" failed: the last ${NODE_LOG_LINES} lines of ${n.name}'s dockerd log (${log}) -----\n${tail}\n----- end of ${n.name}'s dockerd log -----`,
    );
  }
  // A process the kernel killed for memory says so only there (its ring buffer soon rolls over).
  const oom = (spawnSync("dmesg", [], { encoding: "utf8" }).stdout ?? "")
    .split("\n")
    .filter((l) => /out of memory|oom-kill|killed process/i.test(l));
  if (oom.length > 0) console.error(`\n----- the kernel's OOM lines -----\n${oom.slice(-10).join("\n")}`);
});

/**
 * The docker CLI against a node of the lab (by name, node1 being the manager), logged in to the registry.
 * Its output without the final newline (a line may end with a space).
 */
export async function docker(info: LabInfo, node: string, args: string[]): Promise<string> {
  const n = info.nodes.find((x) => x.name === node);
  if (!n) throw new Error(`no lab node ${node}`);
  try {
    const { stdout } = await pexec(DOCKER, ["-H", n.dockerHost, ...args], {
      env: { ...process.env, DOCKER_CONFIG: info.dockerConfig },
      timeout: 120_000,
      maxBuffer: 2 ** 24,
    });
    return stdout.replace(/\n$/, "");
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`docker ${args.join(" ")} on ${node}: ${err.stderr ?? err.message}`);
  }
}

/** Polls `check` until it gives a value (not undefined), at most `seconds`; the error says what was awaited. */
export async function until<T>(
  what: string,
  seconds: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const end = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end)
      throw new Error(`not within ${seconds} s: ${what}${last ? ` (last error: ${last})` : ""}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A 2 MB image made from the host's static busybox (httpd, wget, nslookup), imported on a node: nothing
 * else reaches the lab's nodes but what is pushed through its registry. Returns the tag.
 */
export async function importBusybox(info: LabInfo, node: string, tag: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "pier-lab-image-"));
  try {
    const root = join(dir, "root");
    mkdirSync(join(root, "bin"), { recursive: true });
    mkdirSync(join(root, "usr/bin"), { recursive: true });
    mkdirSync(join(root, "www"));
    // Debian's busybox links its applets to /usr/bin/busybox.
    copyFileSync("/bin/busybox", join(root, "usr/bin/busybox"));
    await pexec("/bin/busybox", ["--install", "-s", join(root, "bin")]);
    const tar = join(dir, "image.tar");
    await pexec("tar", ["-C", root, "-cf", tar, "."]);
    await docker(info, node, ["import", tar, tag]);
    return tag;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Copies images of the host's engine to a node's (`docker save | docker load`): what `scripts/setup.sh` builds
 * on the machine where Pier runs (its base and runtime images), which builds on the lab's manager need.
 */
export async function copyImages(info: LabInfo, node: string, tags: string[]): Promise<void> {
  const n = info.nodes.find((x) => x.name === node);
  if (!n) throw new Error(`no lab node ${node}`);
  const save = spawn(DOCKER, ["save", ...tags], { stdio: ["ignore", "pipe", "pipe"] });
  const load = spawn(DOCKER, ["-H", n.dockerHost, "load", "-q"], { stdio: ["pipe", "ignore", "pipe"] });
  save.stdout.pipe(load.stdin);
  const ended = (p: ChildProcess, what: string) =>
    new Promise<void>((resolve, reject) => {
      let err = "";
      p.stderr?.on("data", (c: Buffer) => {
        err += c.toString();
      });
      p.once("error", reject);
      p.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${what}: ${err.trim()}`))));
    });
  await Promise.all([ended(save, `docker save ${tags.join(" ")}`), ended(load, `docker load on ${node}`)]);
}

/** What `down` must have removed: an empty list when nothing is left. */
export async function labLeftovers(): Promise<string[]> {
  return (await lab("leftovers")).split("\n").filter((l) => l.trim() !== "");
}

/** A swarm Pier on a fresh lab, as most swarm e2e files start: the lab and that Pier, ready for pushes. */
export interface SwarmPier {
  info: LabInfo;
  pier: Pier;
}

/**
 * Brings up a fresh lab of `nodes`, copies `images` (what scripts/setup.sh builds where Pier runs: the
 * manager builds with them) to the manager, and starts a swarm Pier on it with a key. `settings` replaces
 * swarmSettings (the lab's registry) when given; isolation is off unless a setting says otherwise.
 * (The harness reads its settings object when the server starts: what beforeStart adds is seen.)
 */
export async function swarmPier(opts: {
  images: string[];
  nodes?: number;
  settings?: (info: LabInfo) => Record<string, string> | Promise<Record<string, string>>;
  /** Before the server starts (its ports may be chosen here): more settings, e.g. an ACME server's. */
  beforeStart?: (pier: Pier, info: LabInfo) => Promise<Record<string, string>>;
}): Promise<SwarmPier> {
  await lab("down");
  const info = await labUp(opts.nodes ?? 3);
  await copyImages(info, "node1", opts.images);
  const settings = { PIER_ISOLATION: "off", ...(await (opts.settings ?? swarmSettings)(info)) };
  const pier = new Pier(settings);
  try {
    Object.assign(settings, await opts.beforeStart?.(pier, info));
    await pier.start();
    await pier.addKey();
  } catch (e) {
    await pier.destroy(); // the caller never sees this Pier: its after() cannot end it
    throw e;
  }
  return { info, pier };
}

/** The end of a swarmPier: its Pier destroyed (if it was made), the lab down. */
export async function swarmPierDown(pier: Pier | undefined): Promise<void> {
  try {
    await pier?.destroy();
  } finally {
    await lab("down"); // even when the destroy failed: no lab left to the next file
  }
}
