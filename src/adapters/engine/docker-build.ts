import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { LineSplitter } from "../../core/bounded-queue.js";
import { PierError } from "../../core/errors.js";
import { BUILD_USER } from "../../core/instance-fs.js";
import { LABEL, ROLE } from "../../core/labels.js";
import { cpuLimits } from "../../core/model.js";
import type { BuildContainer, ContainerBuild } from "../../core/ports.js";
import { shellQuote } from "../../core/shell.js";
import { childEnv, type ExecError, spawnChecked } from "../exec.js";
import { DROPPED_CAPABILITIES, isNotFound } from "./docker-common.js";

/**
 * A release image built by a script run in a build container that is then committed (the Node.js and PHP
 * runtimes'), or made from files; a Dockerfile's build is docker-image-build.ts's. `own` are the labels
 * that mark Pier's objects.
 */

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
