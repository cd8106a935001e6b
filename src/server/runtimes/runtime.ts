import { readFile, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import { PierError } from "../../core/errors.js";
import { APP_USER, WRITABLE_LABEL, WRITABLE_PATHS } from "../../core/instance-fs.js";
import { LABEL, labelNumber } from "../../core/labels.js";
import { type App, type Deployment, FLAVOR_MEMORY_MIB, releaseImageTag } from "../../core/model.js";
import type { BuildContainer, BuildSlot, ContainerBuild, ReleaseImages } from "../../core/ports.js";
import { type Worker, withWorkers } from "../../core/workers.js";

/** How a release of a runtime is served; read from the app's variables before the build. */
export interface RunSettings {
  httpPort: number;
  tcpPort: number | null;
  ipv6Subnet: string | null;
  mountDockerSocket: boolean;
  /** Overrides the image's command. */
  cmd: string[] | null;
}

export interface BuildContext {
  app: App;
  deployment: Deployment;
  vars: Record<string, string>;
  platformVars: Record<string, string>;
  /** The files of the commit. */
  sourceDir: string;
  /** The app's private SSH key for git dependencies (section 5.2), or null. Secret: never logged. */
  sshPrivateKey: string | null;
  /** The image of the app's current release, if any: a build may start from it (unchanged dependencies). */
  previousImage: string | null;
  write: (line: string) => void;
  signal: AbortSignal;
  /**
   * The app's network when add-ons are linked to it (ADR 0016), so that builds reach them: Dockerfile
   * builds' RUN steps join it (classic builder) unless PIER_BUILD_NETWORK is set. Null or absent: none.
   */
  addonNetwork?: string | null;
}

/** One runtime (docker, node, phpserver): its settings, and how it turns a commit into an image. */
export interface Runtime {
  settings(vars: Record<string, string>): { settings: RunSettings; errors: string[] };
  build(ctx: BuildContext, settings: RunSettings): Promise<string>;
}

/** The release image a deployment of an app builds (core/model.ts). */
export const imageTag = releaseImageTag;

/** Reads a file of the commit, refusing any path (or symlink) that leads outside of it. Null if absent. */
export async function readInside(root: string, relative: string): Promise<string | null> {
  const realRoot = await realpath(root);
  let real: string;
  try {
    real = await realpath(join(realRoot, relative));
  } catch {
    return null;
  }
  if (!real.startsWith(realRoot + sep)) {
    throw new PierError("INVALID_VARIABLE", `${relative} points outside of the repository.`);
  }
  try {
    return await readFile(real, "utf8");
  } catch {
    return null;
  }
}

/** How many builds in a row may each start from the one before (their layers stack up). */
export const MAX_REUSE_DEPTH = 20;

/**
 * The current release's image, when its dependencies (node_modules, vendor/) are what this build would
 * install with this toolchain: the build starts from it instead of installing again. Null otherwise.
 */
export async function reusableBase(
  engine: Pick<ReleaseImages, "imageInfo">,
  previous: string | null,
  depsKey: string,
  toolchainId: string,
  write: (l: string) => void,
): Promise<{ image: string; depth: number } | null> {
  if (!previous) return null;
  const info = await engine.imageInfo(previous);
  if (!info || info.labels[LABEL.depsKey] !== depsKey || info.labels[LABEL.toolchain] !== toolchainId)
    return null;
  const depth = labelNumber(info.labels, LABEL.reuseDepth) ?? 0;
  if (depth >= MAX_REUSE_DEPTH) {
    write(`Installing from scratch: the last ${depth} builds each started from the one before.`);
    return null;
  }
  return { image: previous, depth };
}

/** Where an app's files are in its image, and where a build starting from the current release stages them. */
export const APP_HOME = "/app";
export const STAGE = "/tmp/pier-src";

/**
 * The build container of a Node.js or PHP release: the toolchain image (or the current release's, when
 * its dependencies are reusable) runs `script` on the commit's files, with the app's dependency cache,
 * in the app's build slot, limited by its build flavor; its result is the release image.
 */
export function appBuild(o: {
  app: App;
  deployment: Deployment;
  toolchainImage: string;
  toolchainId: string;
  base: { image: string; depth: number } | null;
  depsKey: string | null;
  contextDir: string;
  script: string;
  binds: ContainerBuild["binds"];
  /** More volumes than the app's dependency cache (a release volume: core/release-volumes.ts). */
  volumes?: ContainerBuild["volumes"];
  /** More labels of the release image (the release volume it names). */
  labels?: Record<string, string>;
  slot: BuildSlot;
  plan: { start: readonly string[]; workers: readonly Worker[]; runEnv: Record<string, string> };
}): ContainerBuild {
  const { app, base } = o;
  return {
    ...buildContainer({
      app,
      from: base?.image ?? o.toolchainImage,
      slot: o.slot,
      binds: o.binds,
      volumes: o.volumes ?? [],
    }),
    tag: imageTag(app.id, o.deployment.id),
    contextDir: o.contextDir,
    ...(base ? { stageDir: STAGE } : {}),
    script: o.script,
    labels: {
      [LABEL.app]: app.id,
      [LABEL.deployment]: o.deployment.id,
      [LABEL.cache]: "deps",
      [LABEL.toolchain]: o.toolchainId,
      ...(o.depsKey ? { [LABEL.depsKey]: o.depsKey } : {}),
      [LABEL.reuseDepth]: String(base ? base.depth + 1 : 0),
      // Instances run unprivileged on a read-only root with a bounded tmpfs at /tmp (ADR 0023).
      [WRITABLE_LABEL]: WRITABLE_PATHS.join(","),
      ...o.labels,
    },
    image: {
      cmd: withWorkers(o.plan.start, o.plan.workers),
      // HOME: the build's (/root) would otherwise stay in the committed image.
      env: { ...o.plan.runEnv, APP_HOME, HOME: "/tmp" },
      workdir: APP_HOME,
      user: APP_USER,
    },
  };
}

/**
 * The container part of a build (fixed at its creation): the image, the app's dependency cache and
 * `volumes`, the read-only `binds`, the app's build slot and the build flavor's limits.
 */
export function buildContainer(o: {
  app: App;
  from: string;
  slot: BuildSlot;
  binds: BuildContainer["binds"];
  volumes: BuildContainer["volumes"];
  labels?: Record<string, string>;
}): BuildContainer {
  const { app } = o;
  return {
    from: o.from,
    appDir: APP_HOME,
    env: { HOME: "/root", APP_HOME },
    volumes: [
      {
        name: `pier-cache-${app.id}`,
        target: "/cache",
        labels: { [LABEL.app]: app.id, [LABEL.cache]: "deps" },
      },
      ...o.volumes,
    ],
    binds: o.binds,
    // The app's build slot holds the network (no network set-up per build).
    slot: o.slot,
    flavor: app.buildFlavor,
    memoryBytes: FLAVOR_MEMORY_MIB[app.buildFlavor] * 2 ** 20,
    labels: o.labels ?? { [LABEL.app]: app.id },
  };
}
