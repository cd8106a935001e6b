// A release image built from a Dockerfile by the engine (classic builder or BuildKit), with the app's
// registry login (never sent to the host's own services), its CPU and memory bounds, and its output as
// lines a user reads.
import { lookup } from "node:dns/promises";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { splitLines } from "../../core/lines.js";
import { cpuLimits } from "../../core/model.js";
import { isHostOnlyAddress, loginServerProblem, registryServerHost } from "../../core/plan-docker.js";
import type { ImageBuild } from "../../core/ports.js";
import { type ExecError, spawnChecked } from "../exec.js";
import { cleanBuildLine, imageExists } from "./docker-build.js";

type FollowProgress = (
  stream: NodeJS.ReadableStream,
  onFinished: (err: Error | null) => void,
  onProgress: (ev: {
    stream?: string;
    error?: string;
    errorDetail?: { message?: string };
    status?: string;
  }) => void,
) => void;

/** dockerode 5's followProgress, which decodes BuildKit's protobuf status too (@types lags behind it). */
function followProgress(docker: Docker, ...args: Parameters<FollowProgress>): void {
  if (!("followProgress" in docker) || typeof docker.followProgress !== "function")
    throw new PierError(
      "ENGINE_ERROR",
      "This dockerode has no followProgress.",
      "Install dockerode 5 or later.",
    );
  docker.followProgress(...args);
}

/**
 * The registry's name must not resolve to the host itself (loopback, link-local): the engine would log in
 * to a host-only service with the app's credentials (and its error would say which ports are open).
 * Checked before any connection is made. A name that does not resolve is left to the engine.
 */
async function refuseHostOnlyRegistry(server: string): Promise<void> {
  const direct = loginServerProblem(server);
  if (direct) throw new PierError("INVALID_VARIABLE", direct);
  const host = registryServerHost(server);
  const addresses = await lookup(host, { all: true }).catch(() => []);
  const bad = addresses.find((a) => isHostOnlyAddress(a.address));
  if (bad) {
    throw new PierError(
      "INVALID_VARIABLE",
      `CC_DOCKER_LOGIN_SERVER=${JSON.stringify(server)}: ${host} resolves to a loopback or link-local address (${bad.address}): Pier does not send registry credentials to the host's own services.`,
      "Use the registry's network name or address.",
    );
  }
}

type RegistryAuth = { username: string; password: string; serveraddress: string };

export async function buildImage(
  docker: Docker,
  own: Record<string, string>,
  b: ImageBuild,
  onLine: (line: string) => void,
  signal: AbortSignal,
  hostCpus: number,
): Promise<void> {
  const auth = await registryAuth(docker, b);
  const tar = spawnChecked(["tar", "-C", b.contextDir, "-c", "."]);
  const context = new PassThrough();
  tar.stdout.pipe(context);
  let stream: NodeJS.ReadableStream;
  try {
    stream = await docker.buildImage(context, buildOptions(b, own, hostCpus, auth, signal));
  } catch (e) {
    tar.kill();
    throw new PierError("BUILD_FAILED", `The engine refused the build: ${(e as Error).message}`);
  }
  try {
    const failure = await followBuild(docker, stream, b, onLine, signal);
    if (signal.aborted) throw signal.reason;
    if (failure) throw buildFailure(failure, b);
    // A file tar could not read would otherwise be missing from a build that succeeds.
    await tar.done.catch((e: ExecError) => {
      throw new PierError("BUILD_FAILED", `Could not read the commit's files: ${e.stderrTail.trim()}`);
    });
  } finally {
    tar.kill();
  }
  if (!(await imageExists(docker, b.tag)))
    throw new PierError("BUILD_FAILED", `The build produced no image ${b.tag}.`);
}

/** The registry login of a build (CC_DOCKER_LOGIN_*), checked against the registry before the build. */
async function registryAuth(docker: Docker, b: ImageBuild): Promise<RegistryAuth | undefined> {
  if (!b.login) return undefined;
  const auth = {
    username: b.login.username,
    password: b.login.password,
    serveraddress: b.login.server ?? "https://index.docker.io/v1/",
  };
  if (b.login.server) await refuseHostOnlyRegistry(b.login.server);
  try {
    await docker.checkAuth(auth);
  } catch (e) {
    throw new PierError(
      "BUILD_FAILED",
      `Registry login to ${b.login.server ?? "the default registry"} as ${b.login.username} failed: ${(e as { json?: { message?: string } }).json?.message ?? (e as Error).message}`,
      "Check CC_DOCKER_LOGIN_USERNAME, CC_DOCKER_LOGIN_PASSWORD and CC_DOCKER_LOGIN_SERVER.",
    );
  }
  return auth;
}

/** The engine's build options: the build flavor's memory and CPU, labels or network, the login. */
function buildOptions(
  b: ImageBuild,
  own: Record<string, string>,
  hostCpus: number,
  auth: RegistryAuth | undefined,
  signal: AbortSignal,
): Record<string, unknown> {
  const options: Record<string, unknown> = {
    t: b.tag,
    dockerfile: b.dockerfile,
    buildargs: b.buildArgs,
    nocache: b.noCache,
    rm: true,
    forcerm: true,
    memory: b.memoryBytes,
    memswap: b.memoryBytes,
    // The build flavor's CPU share (the classic builder's RUN containers; BuildKit ignores these).
    cpuperiod: 100_000,
    cpuquota: Math.round(cpuLimits(b.memoryBytes, hostCpus).nanoCpus / 10_000),
    cpushares: cpuLimits(b.memoryBytes, hostCpus).cpuShares,
    abortSignal: signal,
  };
  // The classic builder turns each image label into one more build step with its own container
  // (about 100 ms each); images are known by their name (pier-app/<app>:<deployment>) instead.
  if (b.buildkit) {
    options.version = "2";
    options.labels = { ...b.labels, ...own };
  } else if (b.network) {
    options.networkmode = b.network;
  }
  if (auth) {
    options.registryconfig = { [auth.serveraddress]: auth };
    options.authconfig = auth;
  }
  return options;
}

/** Follows the build's progress, its lines to `onLine`; the engine's error message if the build failed. */
async function followBuild(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  b: ImageBuild,
  onLine: (line: string) => void,
  signal: AbortSignal,
): Promise<string | null> {
  const onAbort = () => {
    if (stream instanceof Readable) stream.destroy();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  let failure: string | null = null;
  try {
    await new Promise<void>((resolve, reject) => {
      followProgress(
        docker,
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        (ev: { stream?: string; error?: string; errorDetail?: { message?: string }; status?: string }) => {
          if (ev.error) failure = ev.errorDetail?.message ?? ev.error;
          const text = ev.stream ?? ev.status ?? ev.error;
          if (!text) return;
          for (const raw of splitLines(text)) {
            for (const l of cleanBuildLine(raw, b.buildkit).split("\n")) if (l.trim()) onLine(l);
          }
        },
      );
    });
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    throw new PierError("BUILD_FAILED", `The build stream broke: ${(e as Error).message}`);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  return failure;
}

/** A failed build's error: out of memory (with the build flavor's size and the fix), or the engine's message. */
function buildFailure(failure: string, b: ImageBuild): PierError {
  const oom = /exit code: 137|signal: killed|returned a non-zero code: 137/.test(failure);
  return new PierError(
    "BUILD_FAILED",
    oom
      ? `The build ran out of memory: the ${b.flavor} build flavor has ${Math.round(b.memoryBytes / 2 ** 20)} MiB (${failure})`
      : `The build failed: ${failure}`,
    oom ? "Give builds a larger flavor: pier scale --build-flavor <S|M|L|XL>" : undefined,
  );
}

/** The volumes of a build container exist (made with their labels) before it is created. */
