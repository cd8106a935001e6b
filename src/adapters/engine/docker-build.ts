import { spawn } from "node:child_process";
import { lookup } from "node:dns/promises";
import { availableParallelism } from "node:os";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { LineSplitter } from "../../core/bounded-queue.js";
import { PierError } from "../../core/errors.js";
import { BUILD_USER } from "../../core/instance-fs.js";
import { LABEL, ROLE } from "../../core/labels.js";
import { splitLines } from "../../core/lines.js";
import { cpuLimits } from "../../core/model.js";
import { isHostOnlyAddress, loginServerProblem, registryServerHost } from "../../core/plan-docker.js";
import type { BuildContainer, ContainerBuild, ImageBuild } from "../../core/ports.js";
import { shellQuote } from "../../core/shell.js";
import { childEnv, type ExecError, spawnChecked } from "../exec.js";

/**
 * The Docker engine's two ways of building a release image: a Dockerfile build (classic builder or
 * BuildKit), and a build run in a container that is then committed (the Node.js runtime's). `own` are the
 * labels that mark Pier's objects.
 */

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

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escape sequences is the point.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * One line of build output as a user should read it: without terminal colour codes, and with BuildKit's
 * command output decoded (dockerode 5 hands the protobuf `bytes` of a log message on still in base64).
 */
export function cleanBuildLine(line: string, buildkit: boolean): string {
  let l = line;
  if (buildkit && BASE64.test(l)) {
    const decoded = Buffer.from(l, "base64").toString("utf8");
    if (!decoded.includes("\uFFFD")) l = decoded.replace(/\n$/, "");
  }
  return l.replace(ANSI, "").replace(/\r/g, "");
}

export function isNotFound(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { statusCode?: number }).statusCode === 404;
}

/** Whether an image exists in the engine. */
export async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
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

/**
 * Docker's default capabilities less these, in every container Pier runs (instances, sandboxes, builds):
 * NET_RAW (raw sockets: ARP/ICMP spoofing on the app's network) and MKNOD (device nodes).
 */
export const DROPPED_CAPABILITIES: readonly string[] = ["NET_RAW", "MKNOD"];

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
async function ensureVolumes(docker: Docker, own: Record<string, string>, b: BuildContainer): Promise<void> {
  for (const v of b.volumes) {
    try {
      await docker.getVolume(v.name).inspect();
    } catch (e) {
      if (!isNotFound(e)) throw e;
      await docker.createVolume({ Name: v.name, Labels: { ...(v.labels ?? b.labels), ...own } });
    }
  }
}

/**
 * The commit's files as every user may read them (folders searchable): instances run unprivileged (ADR
 * 0023), and the checkout's root is a private temporary folder (0700) whose mode `tar -x` gives /app.
 */
const READABLE = ["--mode=a+rX"];

/**
 * Creates a build container whose command `cmd` reads the commit's files from its stdin; it joins the
 * network namespace of `holder`, the app's build sandbox (null: the engine's default network).
 */
async function createBuildContainer(
  docker: Docker,
  own: Record<string, string>,
  b: BuildContainer,
  cmd: string,
  hostCpus: number,
  holder: string | null,
): Promise<Docker.Container> {
  const cpu = cpuLimits(b.memoryBytes, hostCpus);
  await ensureVolumes(docker, own, b);
  return docker.createContainer({
    Image: b.from,
    Cmd: ["/bin/sh", "-ec", cmd],
    OpenStdin: true,
    StdinOnce: true,
    AttachStdin: true,
    WorkingDir: b.appDir,
    // Root, whatever the image says (a build may start from a release image, which runs as the app user):
    // hooks install tools globally (`npm i -g pnpm`, `corepack enable`). ADR 0023.
    User: BUILD_USER,
    Env: Object.entries(b.env).map(([k, v]) => `${k}=${v}`),
    Labels: { ...b.labels, ...own, [LABEL.role]: ROLE.build, ...(holder ? { [LABEL.sandbox]: holder } : {}) },
    HostConfig: {
      Memory: b.memoryBytes,
      MemorySwap: b.memoryBytes,
      NanoCpus: cpu.nanoCpus,
      CpuShares: cpu.cpuShares,
      CapDrop: [...DROPPED_CAPABILITIES],
      SecurityOpt: ["no-new-privileges"],
      PidsLimit: 4096,
      Binds: [
        ...b.volumes.map((v) => `${v.name}:${v.target}${v.readOnly ? ":ro" : ""}`),
        ...b.binds.map((m) => `${m.source}:${m.target}:ro`),
      ],
      // Its output reaches Pier through the attach stream (the deploy log, capped); the engine's own copy
      // on disk is bounded too, or a chatty build would fill the disk while the deploy log drops its lines.
      LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
      // Its network is the build sandbox's (a container's network namespace).
      ...(holder ? { NetworkMode: `container:${holder}` } : {}),
    },
  });
}

/**
 * A build container started ahead of its build (while the push is received): it waits on its stdin for
 * the commit's files, then runs the script at `scriptPath`, which the runtime writes into one of its binds
 * before buildInContainer hands the files over. Returns the container's id.
 */
export async function startBuildContainer(
  docker: Docker,
  own: Record<string, string>,
  b: BuildContainer & { scriptPath: string },
  hostCpus: number,
  holder: string | null,
): Promise<string> {
  const cmd = `mkdir -p ${shellQuote(b.appDir)}\ntar -x -C ${shellQuote(b.appDir)}\n. ${shellQuote(b.scriptPath)}`;
  const container = await createBuildContainer(docker, own, b, cmd, hostCpus, holder);
  try {
    await container.start();
  } catch (e) {
    await container.remove({ force: true }).catch(() => undefined);
    throw e;
  }
  return container.id;
}

/**
 * Runs a build in a container and commits it as the release image: a new container, or `started`, one
 * that startBuildContainer made with the same volumes, binds, limits and network (its script is then the
 * file it runs, not `b.script`).
 */
export async function buildInContainer(
  docker: Docker,
  own: Record<string, string>,
  b: ContainerBuild,
  onLine: (line: string) => void,
  signal: AbortSignal,
  hostCpus: number,
  holder: string | null,
  started?: string,
): Promise<void> {
  // The commit's files reach the container through its stdin, as a tar that the container unpacks itself:
  // no upload of an archive before the start (a mount of the container and its volumes of its own, and an
  // unpacking process of the engine: about 50 ms of each build).
  const target = b.stageDir ?? b.appDir;
  const container = started
    ? docker.getContainer(started)
    : await createBuildContainer(
        docker,
        own,
        b,
        `mkdir -p ${shellQuote(target)}\ntar -x -C ${shellQuote(target)}\n${b.script}`,
        hostCpus,
        holder,
      );
  const onAbort = () => void container.kill().catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const stream = (await container.attach({
      stream: true,
      stdin: true,
      stdout: true,
      stderr: true,
      hijack: true,
    })) as NodeJS.ReadWriteStream;
    const out = new PassThrough();
    // Output without line ends (a progress bar) is cut at 16 KiB, never held whole.
    const lines = new LineSplitter();
    out.on("data", (c: Buffer) => {
      for (const l of lines.push(c)) onLine(cleanBuildLine(l, false));
    });
    docker.modem.demuxStream(stream, out, out);
    // A container started ahead waits on its stdin: it has written nothing yet.
    if (!started) await container.start();
    // The end of the tar closes the container's stdin (StdinOnce): the script's `tar -x` ends there.
    const tar = spawnChecked(["tar", "-C", b.contextDir, ...READABLE, "-c", "."]);
    // A container that ends before it read it all (a failing step) closes the connection: its exit code
    // tells what happened, not the broken pipe.
    stream.on("error", () => undefined);
    tar.stdout.pipe(stream as NodeJS.WritableStream);
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    // Ended (or killed) before it read the whole tar: tar would wait on its pipe forever.
    if (StatusCode !== 0) tar.kill();
    // A file tar could not read would otherwise be missing from a build that succeeds.
    else
      await tar.done.catch((e: ExecError) => {
        throw new PierError("BUILD_FAILED", `Could not read the commit's files: ${e.stderrTail.trim()}`);
      });
    for (const l of lines.end()) onLine(cleanBuildLine(l, false));
    if (signal.aborted) throw signal.reason;
    const { State: state } = await container.inspect();
    if (state.OOMKilled || StatusCode === 137) {
      throw new PierError(
        "BUILD_FAILED",
        `The build ran out of memory: the ${b.flavor} build flavor has ${Math.round(b.memoryBytes / 2 ** 20)} MiB.`,
        "Give builds a larger flavor: pier scale --build-flavor <S|M|L|XL>",
      );
    }
    if (StatusCode !== 0) throw new PierError("BUILD_FAILED", `The build failed (exit code ${StatusCode}).`);
    if (b.commit !== false) await commitRelease(container, own, b);
  } catch (e) {
    await container.remove({ force: true }).catch(() => undefined);
    throw e;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  // Committed: removing the container (its writable layer, vendor/ or node_modules included, about 0.2 s)
  // is off the deploy's critical path. The reconciler never takes a build container for an instance.
  void container.remove({ force: true }).catch(() => undefined);
}

/** Commits a build's container as its release image, with the image's settings and labels. */
async function commitRelease(container: Docker.Container, own: Record<string, string>, b: ContainerBuild) {
  const [repo, tag] = b.tag.split(":");
  // The engine merges the container's own Env into the image: only non-secret variables may be
  // given as `env`; the build's variables come in through a bind-mounted file (not committed).
  await container.commit({
    _query: { container: container.id, repo, tag },
    _body: {
      Cmd: b.image.cmd,
      Entrypoint: null,
      Env: Object.entries(b.image.env).map(([k, v]) => `${k}=${v}`),
      WorkingDir: b.image.workdir,
      User: b.image.user,
      // The engine keeps the container's labels it is not given: the build container's role is replaced.
      Labels: { ...b.labels, ...own, [LABEL.role]: ROLE.release },
    },
  });
}

/**
 * A release with nothing to run (its dependencies reused as they are): the commit's files go into a
 * container that never starts, as the same tar a build container unpacks (its `.` becomes appDir, as
 * `tar -x -C appDir` makes it), and the container is committed. About 0.1 s, where starting a container,
 * running it and waiting for its end takes 0.2-0.3 s more.
 */
export async function imageFromFiles(
  docker: Docker,
  own: Record<string, string>,
  b: ContainerBuild,
): Promise<void> {
  const container = await docker.createContainer({
    Image: b.from,
    Cmd: ["true"],
    NetworkDisabled: true,
    Labels: { ...b.labels, ...own, [LABEL.role]: ROLE.build },
    HostConfig: { NetworkMode: "none" },
  });
  try {
    const dir = b.appDir.replace(/^\/+/, "");
    const tar = spawn("tar", ["-C", b.contextDir, ...READABLE, "-c", "--transform", `s,^\\.,${dir},S`, "."], {
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    tar.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const ended = new Promise<number>((res) => tar.on("close", (code) => res(code ?? 1)));
    await container.putArchive(tar.stdout, { path: "/" });
    const code = await ended;
    if (code !== 0)
      throw new PierError("BUILD_FAILED", `Could not read the commit's files: ${stderr.trim()}`);
    await commitRelease(container, own, b);
  } finally {
    void container.remove({ force: true }).catch(() => undefined);
  }
}

/** The engine host's CPU count, asked once (flavors' CPU shares are capped at it); this machine's if the engine does not say. */
export function engineCpus(docker: () => Docker): () => Promise<number> {
  let asked: Promise<number> | null = null;
  return () => {
    asked ??= docker()
      .info()
      .then(
        (i: { NCPU?: number }) => i.NCPU ?? availableParallelism(),
        () => availableParallelism(),
      );
    return asked;
  };
}
