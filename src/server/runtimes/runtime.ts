import { readFile, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import { PierError } from "../../core/errors.js";
import type { App, Deployment } from "../../core/model.js";
import type { Engine } from "../../core/ports.js";

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

export const imageTag = (appId: string, deploymentId: string) => `pier-app/${appId}:${deploymentId}`;

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
  engine: Engine,
  previous: string | null,
  depsKey: string,
  toolchainId: string,
  write: (l: string) => void,
): Promise<{ image: string; depth: number } | null> {
  if (!previous) return null;
  const info = await engine.imageInfo(previous);
  if (!info || info.labels["pier.deps-key"] !== depsKey || info.labels["pier.toolchain"] !== toolchainId)
    return null;
  const depth = Number(info.labels["pier.reuse-depth"] ?? "0");
  if (depth >= MAX_REUSE_DEPTH) {
    write(`Installing from scratch: the last ${depth} builds each started from the one before.`);
    return null;
  }
  return { image: previous, depth };
}
