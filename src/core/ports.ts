/**
 * The ports between Pier's logic and the outside world. Each has one real adapter in src/adapters
 * and, where unit tests need it, a fake that passes the same conformance suite.
 */

import type { Socket } from "node:net";
import type { Addon, AddonBackup, AddonCredentials, AddonKind } from "./addons.js";
import type { BucketMount } from "./buckets.js";
import type { CertificatePair, Domain } from "./domains.js";
import type { IsolationPlan } from "./isolation.js";
import type { CeilingOverrides } from "./limits.js";
import type { ApiToken, App, Deployment, DeployState, Flavor, LogLine, Release, SshKey } from "./model.js";
import type { ClusterNode, JoinToken, NodeRole } from "./nodes.js";

/**
 * One address an instance answers HTTP on: a loopback address of the host (on a swarm, its task's address on
 * the app's overlay network).
 */
export interface RouteTarget {
  host: string;
  port: number;
}

/** A route the edge did not take, and why. */
export interface SkippedRoute {
  appId: string;
  hostname: string;
  reason: string;
}

/** `hostname` (e.g. `myapp.localhost`) is served by `targets`, balanced. No target: 503. */
export interface Route {
  appId: string;
  hostname: string;
  targets: RouteTarget[];
  /** The app's custom domains (ADR 0018), routed like `hostname`. */
  aliases?: string[];
  /** CC_FORCE_HTTPS of the serving release: HTTP requests are redirected to HTTPS. */
  forceHttps?: boolean;
}

export interface Edge {
  /** Starts the proxy if it does not run; adopts one that runs already (after a control-plane restart). */
  start(): Promise<void>;
  /**
   * Makes the proxy serve exactly these routes, without dropping a request in flight. A route the edge
   * cannot take (an invalid host name, one routed twice) is skipped and returned; the others are served.
   * A configuration the proxy rejects is not applied (the old one keeps serving) and the call throws.
   */
  apply(routes: readonly Route[]): Promise<{ skipped: SkippedRoute[] }>;
  /** Stops the proxy. `pier server` never calls it on exit: the data plane outlives the control plane. */
  stop(): Promise<void>;
}

export type NewApp = Pick<App, "id" | "name" | "type" | "flavor" | "buildFlavor" | "instances" | "task">;

/** A token to record: only its hash is kept. */
export interface NewApiToken {
  id: string;
  name: string;
  hash: string;
  appId: string | null;
  readOnly: boolean;
  bootstrap: boolean;
}

export type AppPatch = Partial<
  Pick<App, "flavor" | "buildFlavor" | "instances" | "allowDockerSocket" | "stopped">
>;

export interface DeploymentPatch {
  state?: DeployState;
  reason?: string | null;
  releaseId?: string | null;
  buildingAt?: string;
  deployingAt?: string;
  finishedAt?: string;
}

/**
 * Pier's state, in small ports named for what Pier keeps (ADR 0027): a service depends on the slices it uses;
 * `Store` is all of them. SQLite today; the async shape lets a PostgreSQL store follow. Every implementation
 * passes test/conformance/store.ts.
 */
/** Apps: created, found by id or name, listed by name, changed, deleted (with everything of theirs). */
export interface AppStore {
  createApp(app: NewApp): Promise<App>;
  /** By id or by name. */
  findApp(ref: string): Promise<App | null>;
  listApps(): Promise<App[]>;
  updateApp(id: string, patch: AppPatch): Promise<App>;
  deleteApp(id: string): Promise<void>;
}

/** An app's variables and its secrets other than variables, sealed at rest. */
export interface EnvStore {
  getEnv(appId: string): Promise<Record<string, string>>;
  /** An app's secret other than its variables (e.g. `ssh_private_key`), or null. Stored encrypted. */
  getAppSecret(appId: string, name: string): Promise<string | null>;
  /** Sets (or with null removes) an app's secret. */
  setAppSecret(appId: string, name: string, value: string | null): Promise<void>;
  /**
   * All-or-nothing. `accept` sees the app's variables as the change would leave them, in the same
   * transaction, and throws to refuse it (the caps of ADR 0022): nothing is changed then.
   */
  changeEnv(
    appId: string,
    set: Record<string, string>,
    unset: readonly string[],
    accept?: (next: Record<string, string>) => void,
  ): Promise<Record<string, string>>;
}

/** The ceiling an admin set on an app (ADR 0022). */
export interface LimitStore {
  /** The ceiling an admin set for the app (ADR 0022); null fields: the server's default. */
  appLimits(appId: string): Promise<CeilingOverrides>;
  /** Sets some of the app's ceiling (null: back to the server's default); returns the whole record. */
  setAppLimits(appId: string, patch: Partial<CeilingOverrides>): Promise<CeilingOverrides>;
}

/** Deployments and their logs. */
export interface DeploymentStore {
  createDeployment(
    d: Pick<Deployment, "id" | "appId" | "commit" | "cause" | "withoutCache">,
  ): Promise<Deployment>;
  getDeployment(id: string): Promise<Deployment | null>;
  listDeployments(appId: string, limit?: number): Promise<Deployment[]>;
  updateDeployment(id: string, patch: DeploymentPatch): Promise<Deployment>;
  /** Deployments not in a terminal state (for recovery after a restart). */
  unfinishedDeployments(): Promise<Deployment[]>;
  appendDeployLog(deploymentId: string, lines: readonly LogLine[]): Promise<void>;
  deployLog(deploymentId: string): Promise<LogLine[]>;
  /** Deletes the logs of the app's deployments but the newest `keep` ones; returns how many lost theirs. */
  pruneDeployLogs(appId: string, keep: number): Promise<number>;
}

/** Releases, and which one an app serves. */
export interface ReleaseStore {
  currentRelease(appId: string): Promise<Release | null>;
  setCurrentRelease(appId: string, releaseId: string | null): Promise<void>;

  createRelease(r: Omit<Release, "number" | "createdAt">): Promise<Release>;
  /**
   * Records a deploy as done, all at once or not at all: the new release, the app's current release and
   * size (`app`), and the deployment `succeeded` with its release.
   */
  commitRelease(
    r: Omit<Release, "number" | "createdAt">,
    app: AppPatch,
    finishedAt: string,
  ): Promise<Release>;
  getRelease(id: string): Promise<Release | null>;
  listReleases(appId: string): Promise<Release[]>;
}

/** SSH keys and their grants on apps (ADR 0008). */
export interface SshKeyStore {
  /** An admin key (every app). SSH_KEY_EXISTS if the key is registered already. */
  addSshKey(k: Omit<SshKey, "createdAt" | "global" | "apps">): Promise<SshKey>;
  /**
   * Grants a key on one app (registering it, not global, if it is new), or changes its grant there.
   * CONFLICT if the key is an admin key.
   */
  grantSshKey(
    k: Omit<SshKey, "createdAt" | "global" | "apps" | "readOnly">,
    appId: string,
    readOnly: boolean,
  ): Promise<{ key: SshKey; created: boolean }>;
  /** Removes a key's grant on an app; a key left with no grant is removed. False if there was none. */
  revokeSshKeyGrant(keyId: string, appId: string): Promise<boolean>;
  /** Every key; with an app, the keys granted on it (their `apps` then holds that app only). */
  listSshKeys(appId?: string): Promise<SshKey[]>;
  /** By id, fingerprint or name. */
  findSshKey(ref: string): Promise<SshKey | null>;
  findSshKeyByBlob(algo: string, blob: string): Promise<SshKey | null>;
  deleteSshKey(id: string): Promise<void>;
}

/** API tokens (only their hashes are kept). */
export interface TokenStore {
  /** CONFLICT if another token that is not the bootstrap one has this name. */
  addApiToken(t: NewApiToken): Promise<ApiToken>;
  findApiTokenByHash(hash: string): Promise<ApiToken | null>;
  listApiTokens(): Promise<ApiToken[]>;
  /** By name (not the bootstrap token); false if there is none. */
  deleteApiToken(name: string): Promise<boolean>;
  /** Removes every bootstrap token but the one with this hash: one bootstrap admin token is valid. */
  pruneBootstrapTokens(keepHash: string): Promise<number>;
}

/** How the instances of an app last exited (crash reports, ADR 0021). */
export interface ExitStore {
  recordExit(e: {
    appId: string;
    containerId: string;
    instance: number;
    exitCode: number;
    at: string;
  }): Promise<void>;
  lastExits(appId: string): Promise<Map<string, { code: number; at: string; count: number }>>;
}

/** Subnets of Pier's pool claimed by networks (ADR 0007). */
export interface SubnetStore {
  /**
   * Records `subnet` (from PIER_SUBNET_POOL) as the network's, unless the network has one already: returns
   * the network's subnet, or null when `subnet` is another network's.
   */
  claimSubnet(claim: SubnetClaim): Promise<string | null>;
  listSubnets(): Promise<SubnetClaim[]>;
  /** Frees the subnets of these networks (they are gone from the engine). */
  releaseSubnets(networks: readonly string[]): Promise<void>;
}

export interface Store
  extends AppStore,
    EnvStore,
    LimitStore,
    DeploymentStore,
    ReleaseStore,
    SshKeyStore,
    TokenStore,
    ExitStore,
    SubnetStore {
  close(): void;
}

/**
 * The host's packet filter for tenant isolation (ADR 0019): applies a whole plan at once (the previous one
 * is replaced atomically; a plan with no network removes Pier's rules). Rejects when the host refuses it.
 */
export interface Firewall {
  apply(plan: IsolationPlan): Promise<void>;
}

/** A subnet of Pier's pool, given to one network Pier created (of one app). */
export interface SubnetClaim {
  subnet: string;
  network: string;
  appId: string;
}

/** What it takes to build one image. `contextDir` holds the files of the commit. */
export interface ImageBuild {
  contextDir: string;
  dockerfile: string;
  tag: string;
  buildArgs: Record<string, string>;
  labels: Record<string, string>;
  /** The build flavor, named in the message when the build runs out of its memory. */
  flavor: string;
  memoryBytes: number;
  noCache: boolean;
  buildkit: boolean;
  login: { server: string | null; username: string; password: string } | null;
  /** The Docker network RUN steps use (classic builder; BuildKit knows only its own); null: default. */
  network: string | null;
}

/**
 * A build run in a container (Heroku's and Dokku's way): the commit's files are copied to `appDir`, the
 * script runs under the build flavor's memory limit with the app's caches mounted, and the container is
 * committed as the release image with `image` settings (the build's environment is not kept).
 */
export interface ContainerBuild extends BuildContainer {
  tag: string;
  contextDir: string;
  /** Where the commit's files go instead of appDir (the script moves them), e.g. `/tmp/pier-src`. */
  stageDir?: string;
  script: string;
  /** The release image's settings; `user` is who its instances run as (ADR 0023). */
  image: { cmd: string[]; env: Record<string, string>; workdir: string; user: string };
  /**
   * False: the container's result is not committed (the release image is made otherwise, e.g. by
   * imageFromFiles while the script writes only into volumes). Default true.
   */
  commit?: boolean;
}

/** The container of a build: what is fixed when it is created (a build may start it ahead: ADR 0012). */
export interface BuildContainer {
  from: string;
  appDir: string;
  env: Record<string, string>;
  /**
   * Named volumes (kept between builds: the dependency caches; a release volume) and read-only host
   * folders. A volume that does not exist is made with `labels` (default: the build's labels).
   */
  volumes: { name: string; target: string; labels?: Record<string, string>; readOnly?: boolean }[];
  binds: { source: string; target: string }[];
  flavor: string;
  memoryBytes: number;
  labels: Record<string, string>;
  /** The app's build slot, whose network the build joins; null: the engine's default network. */
  slot: BuildSlot | null;
}

/**
 * Where an app's builds run on the network: on `network` (PIER_BUILD_NETWORK, or the app's own network, so
 * one tenant's build never shares a network with another's). The engine keeps one slot per app ready for
 * them (Docker: a sandbox container whose network namespace build containers join), so a build starts
 * without the engine's network set-up. The network exists before a build or prepareBuildSlot names it.
 */
export interface BuildSlot {
  appId: string;
  network: string;
}

/**
 * One instance of a release: a container. An image labelled with a release volume (VOLUME_LABEL in
 * core/release-volumes.ts) has it mounted by the engine adapter; one labelled with writable paths
 * (WRITABLE_LABEL in core/instance-fs.ts) gets a read-only root, those paths as tmpfs bounded by a share of
 * `memoryBytes`, and its release volume read-only.
 */
export interface InstanceSpec {
  name: string;
  image: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  /** Overrides the image's command (argv), e.g. `["/bin/sh", "-c", CC_RUN_COMMAND]`. */
  cmd: string[] | null;
  httpPort: number | null;
  tcpPort: number | null;
  memoryBytes: number;
  network: { name: string; ipv6Subnet: string | null };
  mountDockerSocket: boolean;
  /** Restarted by the engine when it exits (with backoff): the instances of a web app. Not for tasks. */
  restart: boolean;
  /**
   * Start in one of the app's free instance slots for these ports and network (InstanceSlots; one is made
   * when none is free), or null: the instance gets its own place on `network` (a task).
   */
  slot: { appId: string } | null;
  /**
   * File-system buckets (fs add-ons, core/buckets.ts) mounted read-write at `target`: the add-on's data, the
   * same for every instance that mounts it, kept until the add-on is removed. The engine maps the add-on to
   * its data (Docker: its volume) and refuses an add-on that is not an fs add-on of this Pier. A target
   * that does not exist in the image is made, also under a read-only root.
   */
  buckets: readonly BucketMount[];
}

/** The ports an app's instance slots publish and the network they are on. */
export interface SlotShape {
  httpPort: number | null;
  tcpPort: number | null;
  network: { name: string; ipv6Subnet: string | null };
}

export interface InstanceInfo {
  id: string;
  name: string;
  labels: Record<string, string>;
  state: string;
  running: boolean;
  startedAt: string | null;
  restarts: number;
  exitCode: number | null;
  /** Where the HTTP port is published on the host (loopback), or on a swarm its task's overlay address. */
  http: RouteTarget | null;
  /** Where the TCP port is published on the host (on a swarm, the task's overlay address). */
  tcp: RouteTarget | null;
  /** The instance's address on its app network (for the "is it listening" probe). */
  networkAddress: string | null;
  /** The machine it runs on, on an engine of several (a swarm node's name); absent on one machine. */
  node?: string;
  /**
   * On an engine of several: the instance was placed on `node` again by the engine, not by Pier, after its
   * task on `from` was lost (`reason`, e.g. "node2 down"); `at` when the new task was made. Absent otherwise.
   */
  moved?: { from: string; reason: string; at: string | null };
}

export interface RoutableInstance {
  id: string;
  labels: Record<string, string>;
  running: boolean;
  /** Where the HTTP port is published on the host (loopback), or on a swarm its task's overlay address. */
  http: RouteTarget | null;
  /** The machine it runs on, on an engine of several (a swarm node's name); absent on one machine. */
  node?: string;
}

export interface NetworkSubnets {
  name: string;
  labels: Record<string, string>;
  /** CIDRs, IPv4 and IPv6. */
  subnets: string[];
}

/** Which part of an instance's log to read: from `since` to `until`, the last `tail` lines; `follow` on. */
export interface LogRange {
  since?: Date;
  until?: Date;
  tail?: number;
  follow: boolean;
}

export interface InstanceLogLine {
  at: string;
  stream: "stdout" | "stderr";
  line: string;
}

export interface EngineEvent {
  type: "die" | "start";
  containerId: string;
  /** The event is an instance slot's (its start: the instances in it may have lost their network). */
  slot: boolean;
  labels: Record<string, string>;
  exitCode: number | null;
  at: string;
  /** On an engine of several: the node the instance ran on (a die) or runs on now (a start). */
  node?: string;
  /** Why it ended when it did not end by itself (a die), e.g. "node2 down". */
  reason?: string;
  /** A start at a new address (a swarm task replaced its predecessor): the edge must follow it. */
  readdressed?: boolean;
}

/**
 * A build prepared ahead of its commit (ReleaseImages.prepareBuild): a token the server hands back to
 * `buildRelease` or discards, and never looks into. What it stands for (Docker: a started build container)
 * is the engine adapter's.
 */
export interface PreparedBuild {
  readonly ref: string;
}

/**
 * Release images: built (from a Dockerfile, or by running a build script whose result is the image),
 * looked up, listed per app, removed. A build may be prepared ahead, while the push is received, so that
 * it starts at once (ADR 0005, 0012).
 */
export interface ReleaseImages {
  buildImage(build: ImageBuild, onLine: (line: string) => void, signal: AbortSignal): Promise<void>;
  /**
   * Builds the release image `build.tag`: the commit's files are put where the build says, its script runs
   * under the build flavor's limits with its volumes and binds, and the result is the image (unless
   * `build.commit` is false). With `prepared` (made by prepareBuild with the same volumes, binds, limits
   * and slot, not yet used), the build runs there, and its script is the file at its `scriptPath`.
   * A prepared build serves one build: used or failed, it is gone.
   */
  buildRelease(
    build: ContainerBuild,
    onLine: (line: string) => void,
    signal: AbortSignal,
    prepared?: PreparedBuild,
  ): Promise<void>;
  /**
   * Prepares a build ahead of its commit (while the push is received): everything that does not depend on
   * the commit is made and started; the build then waits for the commit's files and runs the script at
   * `scriptPath` (in one of its binds, written before buildRelease is called).
   */
  prepareBuild(build: BuildContainer & { scriptPath: string }): Promise<PreparedBuild>;
  /** Whether a prepared build can still be used (the engine may have restarted and dropped it since). */
  preparedBuildAlive(prepared: PreparedBuild): Promise<boolean>;
  /** Discards a prepared build that will not be used. Gone already: nothing to do. */
  discardPreparedBuild(prepared: PreparedBuild): Promise<void>;
  /**
   * Makes `build.tag` without running anything: the commit's files are put at `build.appDir` of a container
   * of `build.from` that never starts (no process, no network), which is committed with `build.image` and
   * the labels. For a release with nothing to build (its dependencies reused as they are).
   */
  imageFromFiles(build: ContainerBuild): Promise<void>;
  imageExists(tag: string): Promise<boolean>;
  /** The image's id and labels, or null when there is no such image. */
  imageInfo(tag: string): Promise<{ id: string; labels: Record<string, string> } | null>;
  /** Removes an image; gone already: nothing to do. */
  removeImage(tag: string): Promise<void>;
  /** The tags of an app's release images (`releaseImageTag` in core/model.ts), from one engine call. */
  releaseImages(appId: string): Promise<string[]>;
}

/** One of an app's release volumes (ADR 0012): its name, and the deployment that made it. */
export interface ReleaseVolume {
  name: string;
  /** The deployment (or warm build) that made it; null when the engine does not say. */
  deploymentId: string | null;
}

/**
 * An app's volumes: its dependency cache (kept between builds) and its release volumes (ADR 0012), named
 * by what they are for. How the engine finds them (Docker: labels) is the adapter's.
 */
export interface AppVolumes {
  /**
   * Whether every instance runs beside the volumes this engine makes (one machine: true). False on a swarm:
   * a release volume would be on the manager only, so a release keeps its files (vendor/) in its image
   * (core/plan-php-vendor.ts, ADR 0030).
   */
  readonly instancesShareVolumes: boolean;
  /** Empties the app's dependency cache (a build without cache): the next build starts without it. */
  dropDependencyCache(appId: string): Promise<void>;
  /** The app's release volumes (from one engine call). */
  releaseVolumes(appId: string): Promise<ReleaseVolume[]>;
  /** Removes one release volume; false when a container still uses it (then it stays). Gone already: true. */
  removeReleaseVolume(name: string): Promise<boolean>;
  /** Removes every volume of the app, caches and release volumes (it is deleted); one still in use stays. */
  removeAppVolumes(appId: string): Promise<void>;
}

/** The private network of an app or an add-on (ADR 0007: each has a subnet of Pier's pool). */
export interface AppNetworks {
  /**
   * Whether a network of this name exists (any network, Pier's or not): one cheap call, asked where the
   * answer is most often yes (ensuring an app's network at each deploy, PIER_BUILD_NETWORK at start).
   */
  networkExists(name: string): Promise<boolean>;
  /**
   * Every network on the engine (Pier's or not) with its subnets and labels, from one call: the subnet
   * pool's view (what is taken), and which networks an app has (`pier.app`).
   */
  networksWithSubnets(): Promise<NetworkSubnets[]>;
  /**
   * Creates the bridge network unless it exists, with these subnets (null: the engine picks). Throws
   * SUBNET_OVERLAPS when a subnet overlaps a network that exists. Idempotent.
   */
  ensureNetwork(
    name: string,
    labels: Record<string, string>,
    subnets: { ipv4: string | null; ipv6: string | null },
  ): Promise<void>;
  /**
   * Removes the networks with these labels, except `keep`; a network still in use stays. Returns the names
   * of the networks that are gone.
   */
  removeNetworks(labels: Record<string, string>, keep?: string): Promise<string[]>;
}

/**
 * Instance slots (ADR 0021, 0025): an app's web instances start in slots made ahead, so that a start skips
 * the engine's network set-up (about 0.3 s); a slot holds one running instance, which keeps the slot's
 * address and published ports, and an app keeps two per instance, so a deploy's new instance starts beside
 * the old one. Which slot an instance gets, and what a slot is (Docker: a sandbox container holding a
 * network namespace), are the engine's. The app's network exists before its slots are prepared.
 */
export interface InstanceSlots {
  /**
   * Keeps `count` free slots of this shape ready for the app: missing ones are made, free ones of another
   * shape and free ones beyond `count` go. A slot handed to a start under way is not free, and stays.
   */
  prepareSlots(appId: string, shape: SlotShape, count: number): Promise<void>;
  /** Makes the app's build slot ready ahead of its first build (its network exists). */
  prepareBuildSlot(slot: BuildSlot): Promise<void>;
  /**
   * Slots started again (they stopped, or the engine restarted): the instances in them of the deployment
   * `serving` names for their app that stopped, or that started before their slot (they lost its network),
   * start again. `slot` (an event's `containerId`) limits it to one slot. How many, per app.
   */
  rejoinSlots(
    serving: ReadonlyMap<string, string>,
    opts: { graceMs: number; slot?: string },
  ): Promise<Map<string, number>>;
  /** Removes every slot of the app, its build slot too (it is deleted). */
  removeSlots(appId: string): Promise<void>;
  /** Removes the slots of apps not in `known` (deleted while Pier was away). */
  removeStraySlots(known: ReadonlySet<string>): Promise<void>;
}

/**
 * The instances of releases: run one, list them (with their labels and where they answer), inspect, stop,
 * start, restart, remove, wait for a task's end, run a command inside, read the logs. An unknown id is
 * null for `inspectInstance` and nothing to do for stop and remove (it is gone already); start, restart,
 * wait, exec and logs reject it with a PierError `NOT_FOUND`, and exec in an instance that does not run
 * with `CONFLICT`. A stopped instance's log (what it printed while it stopped too) and exit code stay
 * readable until it is removed.
 */
export interface ReleaseInstances {
  runInstance(spec: InstanceSpec): Promise<InstanceInfo>;
  inspectInstance(id: string): Promise<InstanceInfo | null>;
  /** SIGTERM, wait up to graceMs, then SIGKILL; then remove. */
  removeInstance(id: string, graceMs: number): Promise<void>;
  stopInstance(id: string, graceMs: number): Promise<void>;
  /**
   * Starts a stopped instance (its slot first, when that stopped too). Running already: nothing to do.
   * One the engine is bringing back itself (a swarm task its restart policy replaces) is waited for.
   */
  startInstance(id: string): Promise<void>;
  /** Stops (SIGTERM, then SIGKILL after graceMs) and starts the instance again. */
  restartInstance(id: string, graceMs: number): Promise<void>;
  /** The instances with these labels (slots and builds are not instances). */
  listInstances(labels: Record<string, string>): Promise<InstanceInfo[]>;
  /** What routing needs of every instance with these labels, from one engine call (no inspect each). */
  listRoutable(labels: Record<string, string>): Promise<RoutableInstance[]>;
  /** Waits until a task instance ends; resolves its exit code. */
  waitInstance(id: string, signal: AbortSignal): Promise<number>;
  /** Runs a command inside a running instance; resolves its exit code. */
  execInInstance(id: string, argv: string[], onLine: (line: string) => void): Promise<number>;
  /**
   * Runs a command once in a new container made like the instance (its image, variables, networks), where
   * the engine cannot enter a running instance wherever it is: a swarm (ADR 0030), whose API has no exec.
   * Resolves its exit code. Absent: the command runs in the instance (`execInInstance`).
   */
  runLike?(id: string, argv: string[], onLine: (line: string) => void): Promise<number>;
  logs(
    id: string,
    opts: LogRange,
    /** A promise it returns pauses the log (the engine's stream) until it settles: a follower's backpressure. */
    onLine: (l: InstanceLogLine) => void | Promise<void>,
    signal: AbortSignal,
  ): Promise<void>;
}

/** What the engine says of itself: it answers, an instance started or ended, which apps own objects. */
export interface EngineEvents {
  /** Throws ENGINE_ERROR when the engine does not answer. */
  ping(): Promise<void>;
  /** Calls `onEvent` for each start and end of one of this Pier's containers until `signal` aborts. */
  events(onEvent: (e: EngineEvent) => void, signal: AbortSignal): Promise<void>;
  /** The app ids that own a network or a volume of this Pier (its scope) on the engine. */
  ownerAppIds(): Promise<Set<string>>;
}

/**
 * The container engine: every port above, which a module takes only the parts of it needs. Docker today
 * (src/adapters/engine); one conformance suite (test/conformance/engine.ts) holds the real adapter and the
 * unit tests' fake to the same contract, so a Swarm or Kubernetes driver can follow behind it (ADR 0025).
 */
/**
 * Connections to instances from where the edge serves (ADR 0030): on one machine the edge runs on the host,
 * which is on every app network; on a swarm it runs in a sandbox on the manager that joins each app's
 * overlay, and the host has no route into an overlay. The health gate's probes go through it, so what
 * passes the gate is what the edge reaches.
 */
export interface InstanceReach {
  /**
   * A TCP connection to `host:port` (an IP address), once it is established; rejects with the network's
   * error code as the error's `code` (ECONNREFUSED, ETIMEDOUT after `timeoutMs`, EHOSTUNREACH).
   */
  connect(host: string, port: number, timeoutMs: number): Promise<Socket>;
}

export interface Engine
  extends ReleaseImages,
    AppVolumes,
    AppNetworks,
    InstanceSlots,
    ReleaseInstances,
    EngineEvents,
    AddonServers {}

/**
 * What an add-on's server runs with (ADR 0015): one process of its kind's image, with the flavor's memory,
 * its data kept apart from it, on its own network. It is known by the add-on's id; linked apps reach it at
 * `addonHost(id)` (core/addons.ts) on every network it is on.
 */
export interface AddonServerSpec {
  id: string;
  kind: AddonKind;
  image: string;
  /** Overrides the image's command (argv); null: the image's own (an add-on image serves). */
  cmd: string[] | null;
  env: Record<string, string>;
  memoryBytes: number;
  /** Where its data is, inside: kept across restarts and runs until the server is removed. */
  dataPath: string;
  /** Its own network. */
  network: string;
  /** Networks it is on before its process starts (when this run starts it): a linked app's. */
  joins: string[];
  /** The node it runs on, with its data (Addon.node, from `addonNode`); null or absent: the engine's own. */
  node?: string | null;
}

export interface AddonServerInfo {
  /** Its process runs (it may not answer yet: the provider asks it). */
  running: boolean;
  /** Its process ended and the engine is about to start it again. */
  restarting: boolean;
  /** How its process last ended, while it does not run. */
  exitCode: number | null;
  startedAt: string | null;
  memoryBytes: number;
  /** The networks it is on, by name. */
  networks: string[];
  /** Its address on each of them. */
  addresses: Record<string, string>;
}

/**
 * Add-on servers on the engine (ADR 0015, 0025): what every kind of add-on needs of an engine, so that a
 * kind is a small definition (src/adapters/addons/) and an engine implements these verbs once. Restarted
 * by the engine when they exit or when the engine comes back. An unknown id is null for `addonServer` and
 * nothing to do for remove and disconnect; restart and exec reject with NOT_FOUND (exec in a stopped server:
 * CONFLICT); the other verbs reject.
 */
export interface AddonServers {
  /**
   * Where a new add-on's server and data go (ADR 0030): on a swarm the node named (an unknown one:
   * INVALID_INPUT naming the nodes), by default the manager; on one dockerd null (a node asked for:
   * INVALID_INPUT saying there are no nodes).
   */
  addonNode(requested: string | null): Promise<string | null>;
  /**
   * Runs an add-on's server: its data and its process are made unless they exist (on `network`, and on
   * `joins` before it starts), then it is started unless it runs. Idempotent, also when two calls race. An
   * image the engine does not have: ENGINE_ERROR naming it. It does not wait for the server to answer.
   */
  runAddonServer(spec: AddonServerSpec): Promise<void>;
  addonServer(id: string): Promise<AddonServerInfo | null>;
  /** Stops the process (SIGTERM, then SIGKILL after graceMs) and starts it again; its data stays. */
  restartAddonServer(id: string, graceMs: number): Promise<void>;
  /**
   * Removes the server and its data. Gone already: nothing to do. Data that a running instance mounts (an
   * fs bucket) is refused with CONFLICT naming the instances, before anything is removed; stopped instances
   * that mount it (retired ones) are removed with it.
   */
  removeAddonServer(id: string): Promise<void>;
  /** Puts the server on a network (an app's), so that what runs there reaches it. Idempotent. */
  connectAddonServer(id: string, network: string): Promise<void>;
  disconnectAddonServer(id: string, network: string): Promise<void>;
  /**
   * Runs a command inside the running server. Its standard output is streamed to `stdout` when given (a
   * backup to a file; the stream is ended with the command), else returned; its standard error is returned.
   */
  execInAddonServer(
    id: string,
    argv: string[],
    stdout?: NodeJS.WritableStream,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  /** Copies the local file `file` to `path` inside the server (a backup to restore), streamed. */
  copyToAddonServer(id: string, file: string, path: string): Promise<void>;
  /** The last `tail` lines its process printed (to say why it did not answer). */
  addonServerLog(id: string, tail: number): Promise<string[]>;
}

/** What a provider needs to run one add-on (addons: ADR 0015). */
export interface AddonSpec {
  id: string;
  name: string;
  flavor: Flavor;
  memoryBytes: number;
  credentials: AddonCredentials;
  /** The add-on's own network (a subnet of Pier's pool). */
  network: string;
  /**
   * Networks (its linked apps') the container joins before its server starts, so that it answers `ready`
   * only once they reach it. Others are connected later (`connect`).
   */
  joins?: string[];
  /** The node it is pinned to (Addon.node); null or absent: the engine's own. */
  node?: string | null;
}

export interface AddonState {
  /** `running` (answers its protocol), `starting`, `stopped`, `missing` (no container). */
  state: "running" | "starting" | "stopped" | "missing";
  /** The networks the add-on's container is on. */
  networks: string[];
  startedAt: string | null;
}

/**
 * One kind of add-on (kv, postgresql, ...): a server on the engine (AddonServers) with its data kept apart.
 * Every provider passes the same conformance suite (test/conformance/addon-provider.ts), on the real engine
 * and over the fake one; a third kind is one file.
 */
export interface AddonProvider {
  readonly kind: AddonKind;
  /** The port it listens on, on every network it is on. */
  readonly port: number;
  /** New credentials for an add-on of this name (random password; user and database from the name). */
  credentials(name: string): AddonCredentials;
  /** The host name linked apps reach the add-on at (on every network it is on). */
  host(id: string): string;
  /** Creates the volume and the container, starts it, waits until it answers. Idempotent. */
  provision(spec: AddonSpec, signal?: AbortSignal): Promise<void>;
  status(id: string): Promise<AddonState>;
  /** Restarts the server (its data stays). */
  restart(id: string): Promise<void>;
  /** Removes the container and its volume: the data is gone. */
  remove(id: string): Promise<void>;
  /** Connects the add-on to a network (an app's), so that its instances and builds reach it. */
  connect(id: string, network: string): Promise<void>;
  disconnect(id: string, network: string): Promise<void>;
  /** Writes a consistent backup of the data to `file`; returns its size. */
  backup(id: string, file: string): Promise<number>;
  /**
   * Replaces the data by the backup in `file`. All or nothing: a backup that cannot be restored leaves the
   * data as it was, and the call throws.
   */
  restore(id: string, file: string): Promise<void>;
}

/** Add-ons and their credentials (ADR 0015). */
export interface AddonRecordStore {
  /** `node` absent: null (one dockerd). */
  createAddon(
    a: Omit<Addon, "createdAt" | "node"> & { node?: string | null },
    credentials: AddonCredentials,
  ): Promise<Addon>;
  /** By id or by name. */
  findAddon(ref: string): Promise<Addon | null>;
  listAddons(): Promise<Addon[]>;
  addonCredentials(id: string): Promise<AddonCredentials>;
  deleteAddon(id: string): Promise<void>;
}

/** Links: an app to an add-on, an app to another app (ADR 0016). */
export interface LinkStore {
  /** CONFLICT when linked already. */
  linkAddon(appId: string, addonId: string): Promise<void>;
  /** False when there was no such link. */
  unlinkAddon(appId: string, addonId: string): Promise<boolean>;
  /** The add-ons linked to an app, by name. */
  linkedAddons(appId: string): Promise<Addon[]>;
  /** The ids of the apps an add-on is linked to. */
  addonApps(addonId: string): Promise<string[]>;

  /** CONFLICT when linked already. */
  linkApp(appId: string, targetAppId: string): Promise<void>;
  unlinkApp(appId: string, targetAppId: string): Promise<boolean>;
  /** The apps an app is linked to (whose published variables it gets), by name. */
  linkedApps(appId: string): Promise<App[]>;
}

/** The variables an app publishes to the apps linked to it. */
export interface PublishedStore {
  /** What an app publishes to the apps linked to it. */
  getPublished(appId: string): Promise<Record<string, string>>;
  setPublished(appId: string, name: string, value: string | null): Promise<void>;
}

/** Add-on backups. */
export interface BackupStore {
  addBackup(b: Omit<AddonBackup, "createdAt"> & { createdAt?: string }): Promise<AddonBackup>;
  listBackups(addonId: string): Promise<AddonBackup[]>;
  deleteBackup(id: string): Promise<void>;
}

/** The store's add-ons, links, published variables and backups (src/adapters/store/sqlite-addons.ts). */
export interface AddonStore extends AddonRecordStore, LinkStore, PublishedStore, BackupStore {}

/** Custom domains and their certificates (ADR 0018). */
export interface DomainRecordStore {
  /** CONFLICT (naming the app) when the domain belongs to an app already. */
  addDomain(d: Pick<Domain, "name" | "appId" | "nextAttemptAt">): Promise<Domain>;
  findDomain(name: string): Promise<Domain | null>;
  /** Every domain, or an app's, by name. */
  listDomains(appId?: string): Promise<Domain[]>;
  updateDomain(
    name: string,
    patch: Partial<Omit<Domain, "name" | "appId" | "createdAt">>,
    certificate?: CertificatePair,
  ): Promise<Domain>;
  /** The certificate serving the domain, with its key (stored sealed), or null. */
  domainCertificate(name: string): Promise<CertificatePair | null>;
  deleteDomain(name: string): Promise<void>;
}

/** ACME account keys, one per directory URL. */
export interface AcmeAccountStore {
  /** The ACME account key (PEM, stored sealed) Pier uses at this directory URL, or null. */
  acmeAccountKey(directory: string): Promise<string | null>;
  saveAcmeAccountKey(directory: string, keyPem: string): Promise<void>;
}

/** The store's custom domains, their certificates and ACME accounts (src/adapters/store/sqlite-domains.ts). */
export interface DomainStore extends DomainRecordStore, AcmeAccountStore {}

/** The edge's TLS side (src/adapters/edge/haproxy.ts): certificates and HTTP-01 answers, changed live. */
export interface TlsEdge {
  /** Serves `pem` (chain and key) for `name`, without a reload; kept on disk for a restarted edge. */
  installCertificate(name: string, pem: string): Promise<void>;
  removeCertificate(name: string): Promise<void>;
  /** The names that have a certificate on the edge, in part or whole (on disk, or in the running edge). */
  certificates(): Promise<string[]>;
  /** The names whose certificate the edge serves now (the running edge's list; the files when it is down). */
  served(): Promise<string[]>;
  /** Answers `GET /.well-known/acme-challenge/<token>` on the HTTP edge with `keyAuthorization`. */
  setChallenge(token: string, keyAuthorization: string): Promise<void>;
  removeChallenge(token: string): Promise<void>;
}

/**
 * The machines of the engine's cluster (a Docker Swarm; ADR 0030): list them, what a new one needs to
 * join, and whether each takes work. Asked of a manager.
 */
export interface Nodes {
  /** Every node, in the engine's order. */
  listNodes(): Promise<ClusterNode[]>;
  /** The join token of `role` and the managers' addresses (host:port). A secret: never logged. */
  joinToken(role: NodeRole): Promise<JoinToken>;
  /**
   * Sets a node's availability (by its name or id): `drain` moves its work to the others, `active` lets it
   * take work again. Its new state. An unknown node: NODE_NOT_FOUND.
   */
  setAvailability(name: string, availability: "active" | "drain"): Promise<ClusterNode>;
}

/**
 * Where release images go so that every node of a swarm can pull them (ADR 0030): a registry Pier pushes
 * to, deployed by digest.
 */
export interface ReleaseRegistry {
  /** The registry's address (host:port). */
  readonly address: string;
  /**
   * Pushes a local image of the engine Pier builds on (`repo:tag`) to the registry; its reference by digest
   * (`<address>/<repo>@sha256:...`). An unknown image: NOT_FOUND; a registry that refuses (TLS, password):
   * ENGINE_ERROR naming the registry and its reason (never the password).
   */
  publish(image: string): Promise<string>;
  /**
   * Forgets what was published to a repository (`pier-app/<app id>`) but the images in `keep` (`repo:tag`,
   * as given to publish): their manifests are deleted unless a kept image resolves to the same digest
   * (identical builds share one), so a pull of a forgotten digest fails and a kept one still pulls. The
   * registry's disk space comes back with its garbage collection (ADR 0030). A repository or tag that is
   * gone: nothing to do. A registry that refuses: ENGINE_ERROR naming it (never the password). The
   * references of the deleted manifests, as publish returns them (`<address>/<repo>@sha256:...`), sorted:
   * what the nodes pulled and may drop too.
   */
  forget(repository: string, keep: readonly string[]): Promise<string[]>;
}
