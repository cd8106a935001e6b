/** Pier's domain records, as stored and as served by the API. Plain data, no I/O. */

export const RUNTIMES = ["docker", "node", "phpserver"] as const;
export type Runtime = (typeof RUNTIMES)[number];

export const FLAVORS = ["pico", "nano", "XS", "S", "M", "L", "XL"] as const;
export type Flavor = (typeof FLAVORS)[number];

/** Memory limit of each flavor, in MiB. */
export const FLAVOR_MEMORY_MIB: Record<Flavor, number> = {
  pico: 256,
  nano: 512,
  XS: 1024,
  S: 2048,
  M: 4096,
  L: 8192,
  XL: 16384,
};

/**
 * The CPU share of each flavor, in CPUs: one CPU per GiB of memory (pico a quarter of one). The engine
 * enforces it as a hard limit (cgroup cpu.max) and a weight under contention (cpu.weight), capped at the
 * engine host's CPU count. Builds get their build flavor's.
 */
export const FLAVOR_CPUS: Record<Flavor, number> = {
  pico: 0.25,
  nano: 0.5,
  XS: 1,
  S: 2,
  M: 4,
  L: 8,
  XL: 16,
};

/**
 * The engine's CPU limits for a container of `memoryBytes` (its flavor's memory): the flavor's CPUs
 * ({@link FLAVOR_CPUS}: one per GiB, at least 0.25), capped at `hostCpus`, as nano-CPUs (cpu.max) and CPU
 * shares (1024 per CPU: cpu.weight).
 */
export function cpuLimits(memoryBytes: number, hostCpus: number): { nanoCpus: number; cpuShares: number } {
  const cpus = Math.min(Math.max(memoryBytes / 2 ** 30, 0.25), Math.max(hostCpus, 0.25));
  return { nanoCpus: Math.round(cpus * 1e9), cpuShares: Math.max(2, Math.round(cpus * 1024)) };
}

export interface App {
  id: string;
  name: string;
  type: Runtime;
  flavor: Flavor;
  buildFlavor: Flavor;
  instances: number;
  /** A task app runs this command once to completion: no HTTP, no health gate. */
  task: string | null;
  /** An admin allowed CC_MOUNT_DOCKER_SOCKET for this app. */
  allowDockerSocket: boolean;
  /** Stopped by the user: no instance runs until the next deploy or restart. */
  stopped: boolean;
  createdAt: string;
}

export const DEPLOY_STATES = ["queued", "building", "deploying", "succeeded", "failed", "cancelled"] as const;
export type DeployState = (typeof DEPLOY_STATES)[number];
export const TERMINAL_STATES: readonly DeployState[] = ["succeeded", "failed", "cancelled"];

export interface Deployment {
  id: string;
  appId: string;
  state: DeployState;
  commit: string;
  /** What caused it: `git push (key <fingerprint>)`, `restart`, `scale`, `rollback to v3`. */
  cause: string;
  withoutCache: boolean;
  reason: string | null;
  releaseId: string | null;
  createdAt: string;
  buildingAt: string | null;
  deployingAt: string | null;
  finishedAt: string | null;
}

export interface Release {
  id: string;
  appId: string;
  /** 1, 2, 3... per app. */
  number: number;
  deploymentId: string;
  image: string;
  commit: string;
  /** The full environment given to instances of this release (app vars and platform vars). */
  env: Record<string, string>;
  /** HTTP port inside the container, and the optional TCP port to expose. */
  httpPort: number;
  tcpPort: number | null;
  /** Runs once to completion, no HTTP (isTask in core/app-state.ts), as decided when it was made. */
  task: boolean;
  createdAt: string;
}

export interface SshKey {
  id: string;
  name: string;
  /** `SHA256:...` as ssh-keygen prints it. */
  fingerprint: string;
  /** The key's algorithm and base64 blob, as in an authorized_keys line. */
  algo: string;
  blob: string;
  /**
   * An admin key (added without an app) reaches every app; `readOnly` then says it may fetch
   * repositories (git-upload-pack) but not push: a deploy key for builds.
   */
  global: boolean;
  readOnly: boolean;
  /** The apps a key that is not global is granted on, each push or fetch-only (ADR 0008). */
  apps: SshKeyGrant[];
  createdAt: string;
}

export interface SshKeyGrant {
  id: string;
  name: string;
  readOnly: boolean;
}

/** An API token, as listed: the token itself is never kept, only its hash (ADR 0008). */
export interface ApiToken {
  id: string;
  name: string;
  /** The app the token is limited to, or null: every app (an admin token). */
  app: { id: string; name: string } | null;
  readOnly: boolean;
  /** The one admin token from PIER_ADMIN_TOKEN or generated into cli.json at start. */
  bootstrap: boolean;
  createdAt: string;
}

export interface LogLine {
  at: string;
  line: string;
}

/**
 * A release number as a user writes it: plain decimal, optionally after `v` (`3`, `v3`), or null.
 * `0x1`, `1e0`, ` 1`, `+1`, `01` are not release numbers.
 */
export function parseReleaseNumber(ref: string): number | null {
  if (!/^v?[1-9][0-9]{0,8}$/.test(ref)) return null;
  return Number(ref.replace(/^v/, ""));
}

/** The repository of an app's release images (one tag per deployment): `pier-app/<app id>`. */
export const releaseRepository = (appId: string) => `pier-app/${appId}`;

/** The release image a deployment of an app builds: `pier-app/<app id>:<deployment id>`. */
export const releaseImageTag = (appId: string, deploymentId: string) =>
  `${releaseRepository(appId)}:${deploymentId}`;
