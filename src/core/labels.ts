import { createHash } from "node:crypto";

/**
 * Every label key Pier sets or reads, named once (issue 16). The values on real objects are these strings
 * byte for byte: a restarted Pier adopts what an earlier one made by reading them back.
 */
export const LABEL = {
  /** Every object Pier creates carries it; Pier touches nothing without it. */
  managed: "pier.managed",
  /** Which Pier installation (data dir) owns an object: two installations can share one engine. */
  scope: "pier.scope",
  app: "pier.app",
  deployment: "pier.deployment",
  /** What an object is: ROLE below, a sandbox's, a release volume's. */
  role: "pier.role",
  /** An instance's number in its app (1, 2, ...). */
  instance: "pier.instance",
  /** Only an instance has it (a uuid): tells instances from build containers. */
  instanceId: "pier.instance-id",
  network: "pier.network",
  forceHttps: "pier.force-https",
  httpPort: "pier.http-port",
  tcpPort: "pier.tcp-port",
  /** The sandbox an instance runs in, and what it publishes (`host:port`) and its address there. */
  sandbox: "pier.sandbox",
  sandboxFor: "pier.sandbox-for",
  httpTarget: "pier.http-target",
  tcpTarget: "pier.tcp-target",
  address: "pier.address",
  /** The edge's sandbox on a swarm's manager: the ports it publishes (`host:port,...`, ADR 0030). */
  edgePublish: "pier.edge.publish",
  /** Build caches and what a release image was built from. */
  cache: "pier.cache",
  depsKey: "pier.deps-key",
  reuseDepth: "pier.reuse-depth",
  toolchain: "pier.toolchain",
  base: "pier.base",
  baseGeneration: "pier.base.generation",
  nodeDockerfile: "pier.node.dockerfile",
  phpGeneration: "pier.php.generation",
  phpserver: "pier.phpserver",
  redeployRuns: "pier.redeploy-runs",
  /** A release volume an image's instances mount (core/release-volumes.ts). */
  volume: "pier.volume",
  /** The writable paths of an image's instances (core/instance-fs.ts). */
  writable: "pier.writable",
  addon: "pier.addon",
  addonKind: "pier.addon-kind",
  addonScope: "pier.addon-scope",
  /** The swarm node an add-on is pinned to (ADR 0030). */
  addonNode: "pier.addon-node",
} as const;

export type LabelKey = (typeof LABEL)[keyof typeof LABEL];

/**
 * The engine's label filter (`key=value` each) of objects carrying all of these labels; a key in a later set
 * replaces the same key of an earlier one.
 */
export function labelFilter(...sets: readonly Readonly<Record<string, string>>[]): string[] {
  return Object.entries(Object.assign({}, ...sets)).map(([k, v]) => `${k}=${v}`);
}

/** What `pier.sandbox-for` says: a sandbox for the app's instances or for its builds. */
export const SANDBOX_FOR = { instances: "instances", build: "build" } as const;

/** A label that holds a number (a port, a depth, an instance number), or null when absent or not one. */
export function labelNumber(labels: Readonly<Record<string, string>>, key: LabelKey): number | null {
  const text = labels[key];
  if (text === undefined || !/^\d+$/.test(text)) return null;
  return Number(text);
}

/** The number of an instance in its app (`pier.instance`), 0 when the label is missing. */
export function instanceNumber(labels: Readonly<Record<string, string>>): number {
  return labelNumber(labels, LABEL.instance) ?? 0;
}

/** `host:port` as a label carries it (an instance in a sandbox records the sandbox's published ports). */
export function labelTarget(
  labels: Readonly<Record<string, string>>,
  key: LabelKey,
): { host: string; port: number } | null {
  const text = labels[key];
  const m = text ? /^(.+):(\d+)$/.exec(text) : null;
  return m ? { host: m[1] as string, port: Number(m[2]) } : null;
}

/**
 * Labels under `pier.` are Pier's own: it reads them off containers to route (an instance's target, its
 * sandbox, `pier.force-https`), to tell instances from sandboxes and add-ons, and to find what to remove.
 * Docker gives a container its image's labels under the ones Pier sets, so a label that Pier sets only
 * sometimes could come from a Dockerfile (`LABEL pier.http-target=...`). An app's image may carry only the
 * ones Pier itself puts on images (its base images' and its builds').
 */
export const IMAGE_LABELS: ReadonlySet<string> = new Set([
  LABEL.managed,
  LABEL.scope,
  LABEL.app,
  LABEL.deployment,
  LABEL.base,
  LABEL.baseGeneration,
  LABEL.nodeDockerfile,
  LABEL.phpGeneration,
  LABEL.phpserver,
  LABEL.toolchain,
  LABEL.depsKey,
  LABEL.reuseDepth,
]);

/** The labels of an image that only Pier may set (under `pier.`, not one Pier puts on images), sorted. */
export function reservedLabels(labels: Readonly<Record<string, string>>): string[] {
  return Object.keys(labels)
    .filter((k) => k.toLowerCase().startsWith("pier.") && !IMAGE_LABELS.has(k))
    .sort();
}

/**
 * The `pier.role` of Pier's containers and images: an instance, a build container, the release image a build
 * commits (a sandbox's and a release volume's are in their own modules). Pier sets it last on every object
 * it makes, so a role never comes from an image: `docker commit` keeps the build container's labels in the
 * image, and an instance gets its image's labels under the ones Pier sets.
 */
export const ROLE = { instance: "instance", build: "build", release: "release" } as const;

/**
 * Whether a container is a build container (never adopted as an instance, its exit never recorded). Pier
 * before ADR 0021 gave instances of Node.js and PHP releases their image's `pier.role=build`; they are told
 * apart by `pier.instance-id`, which only an instance gets (Instances.start) and no image may carry
 * (`reservedLabels`).
 */
export function isBuildContainer(labels: Readonly<Record<string, string>>): boolean {
  return labels[LABEL.role] === ROLE.build && labels[LABEL.instanceId] === undefined;
}

/**
 * The `pier.scope` of an installation: 12 hex characters of the SHA-256 of its data directory, so two
 * installations on one engine tell their objects apart, and the same directory finds its own after a restart.
 */
export function scopeOf(dataDir: string): string {
  return createHash("sha256").update(dataDir).digest("hex").slice(0, 12);
}
