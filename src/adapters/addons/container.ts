import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { PassThrough, Readable } from "node:stream";
import Docker from "dockerode";
import type { AddonCredentials, AddonKind } from "../../core/addons.js";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import { cpuLimits } from "../../core/model.js";
import type { AddonProvider, AddonSpec, AddonState } from "../../core/ports.js";
import { DROPPED_CAPABILITIES, engineCpus, isNotFound } from "../engine/docker-build.js";

/**
 * What makes one kind of add-on: its image (images/addons/, built by scripts/setup.sh) and how its
 * entrypoint `pier-addon` is asked to serve, say it is ready, back up and restore. Everything else
 * (container, volume, limits, networks, files in and out) is the same for every kind: ContainerAddons.
 */
export interface AddonKindDefinition {
  kind: AddonKind;
  image: string;
  port: number;
  credentials(name: string): AddonCredentials;
  /** The container's environment (read by its entrypoint). */
  env(spec: AddonSpec): Record<string, string>;
  /** A restore is staged, then the server restarts to load it (kv); or done live (postgresql). */
  restore: { argv: (file: string) => string[]; restart: boolean };
}

/** A random secret for passwords and tokens: 32 bytes in hex (nothing to quote in a URL or a shell, never a leading `-`). */
export const newSecret = () => randomBytes(32).toString("hex");

const READY_TIMEOUT_MS = 90_000;

/** One file as a tar stream (what the engine's archive upload takes), streamed from disk. */
function tarOf(name: string, file: string, size: number): Readable {
  const h = Buffer.alloc(512);
  const oct = (n: number, len: number) => `${n.toString(8).padStart(len - 1, "0")}\0`;
  h.write(name, 0, 100, "utf8");
  h.write(oct(0o644, 8), 100);
  h.write(oct(0, 8), 108);
  h.write(oct(0, 8), 116);
  h.write(oct(size, 12), 124);
  h.write(oct(Math.floor(Date.now() / 1000), 12), 136);
  h.write("        ", 148);
  h.write("0", 156);
  h.write("ustar\0", 257);
  h.write("00", 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  const pad = Buffer.alloc((512 - (size % 512)) % 512);
  return Readable.from(
    (async function* () {
      yield h;
      for await (const chunk of createReadStream(file)) yield chunk as Buffer;
      yield pad;
      yield Buffer.alloc(1024);
    })(),
  );
}

/** Where add-on containers run: the engine adapter's client (DockerEngine.client), or a socket. */
export type AddonEngine = { scope: string } & ({ docker: Docker } | { socketPath: string });

/**
 * An add-on as a container of its kind's image, its data on a named volume, on its own network (and the
 * networks of the apps linked to it), with the flavor's memory and CPU limits and the instances' hardening
 * (no NET_RAW/MKNOD, no-new-privileges, a pids limit). The engine restarts it (unless-stopped), so it
 * comes back with dockerd. Its objects carry `pier.addon` and `pier.addon-scope`, never `pier.app` nor
 * `pier.scope`: the reconciler and the leftovers sweep, which remove what no app owns, never see them.
 */
export class ContainerAddons implements AddonProvider {
  private readonly docker: Docker;
  readonly kind: AddonKind;
  readonly port: number;

  constructor(
    private readonly def: AddonKindDefinition,
    private readonly opts: AddonEngine,
  ) {
    // The engine adapter's client when Pier runs (one client, one socket); a socket of its own in tests.
    this.docker = "docker" in opts ? opts.docker : new Docker({ socketPath: opts.socketPath });
    this.kind = def.kind;
    this.port = def.port;
  }

  credentials(name: string): AddonCredentials {
    return this.def.credentials(name);
  }

  host(id: string): string {
    return `pier-addon-${id}`;
  }

  private volume(id: string): string {
    return `pier-addon-${id}-data`;
  }

  private labels(id: string): Record<string, string> {
    return {
      [LABEL.managed]: "true",
      [LABEL.addon]: id,
      [LABEL.addonKind]: this.kind,
      [LABEL.addonScope]: this.opts.scope,
    };
  }

  private readonly cpus = engineCpus(() => this.docker);

  private async inspect(id: string) {
    try {
      return await this.docker.getContainer(this.host(id)).inspect();
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async provision(spec: AddonSpec, signal?: AbortSignal): Promise<void> {
    const name = this.host(spec.id);
    const existing = await this.inspect(spec.id);
    if (!existing) {
      try {
        await this.docker.getImage(this.def.image).inspect();
      } catch (e) {
        if (!isNotFound(e)) throw e;
        throw new PierError(
          "ENGINE_ERROR",
          `The image ${this.def.image} of ${this.kind} add-ons is missing on this engine.`,
          "Run scripts/setup.sh (it builds the add-on images from Debian packages).",
        );
      }
      await this.docker
        .createVolume({ Name: this.volume(spec.id), Labels: this.labels(spec.id) })
        .catch((e: unknown) => {
          if ((e as { statusCode?: number }).statusCode !== 409) throw e;
        });
      const { nanoCpus, cpuShares } = cpuLimits(spec.memoryBytes, await this.cpus());
      await this.create(name, spec, nanoCpus, cpuShares);
    }
    const c = this.docker.getContainer(name);
    // The linked apps' networks before the server starts: it is ready (and `running`) only once they reach it.
    for (const network of spec.joins ?? []) await this.connect(spec.id, network);
    if (!existing?.State.Running)
      await c.start().catch((e: { statusCode?: number }) => {
        if (e.statusCode !== 304) throw e;
      });
    await this.waitReady(spec.id, signal);
  }

  /** Creates the container; one of that name made meanwhile (a concurrent provision) is fine. */
  private async create(name: string, spec: AddonSpec, nanoCpus: number, cpuShares: number): Promise<void> {
    try {
      await this.docker.createContainer({
        name,
        Hostname: name,
        Image: this.def.image,
        Env: Object.entries(this.def.env(spec)).map(([k, v]) => `${k}=${v}`),
        Labels: this.labels(spec.id),
        HostConfig: {
          Memory: spec.memoryBytes,
          MemorySwap: spec.memoryBytes,
          NanoCpus: nanoCpus,
          CpuShares: cpuShares,
          CapDrop: [...DROPPED_CAPABILITIES],
          SecurityOpt: ["no-new-privileges"],
          PidsLimit: 4096,
          Init: true,
          RestartPolicy: { Name: "unless-stopped" },
          NetworkMode: spec.network,
          Binds: [`${this.volume(spec.id)}:/data`],
          ShmSize: 128 * 2 ** 20,
          LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
        },
      });
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 409) throw e;
    }
  }

  private async waitReady(id: string, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      signal?.throwIfAborted();
      const c = await this.inspect(id);
      if (!c) throw new PierError("ENGINE_ERROR", `The ${this.kind} add-on's container is gone.`);
      if (c.State.Running && (await this.exec(id, ["pier-addon", "ready"])).code === 0) return;
      if (!c.State.Running && !c.State.Restarting && c.State.ExitCode !== 0) {
        throw new PierError(
          "ENGINE_ERROR",
          `The ${this.kind} add-on's server exited with code ${c.State.ExitCode}: ${(await this.tail(id)).join(" | ")}`,
        );
      }
      if (Date.now() > until) {
        throw new PierError(
          "ENGINE_ERROR",
          `The ${this.kind} add-on did not answer within ${READY_TIMEOUT_MS / 1000} s: ${(await this.tail(id)).join(" | ")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async tail(id: string): Promise<string[]> {
    const buf = (await this.docker
      .getContainer(this.host(id))
      .logs({ stdout: true, stderr: true, tail: 5, follow: false })
      .catch(() => Buffer.alloc(0))) as Buffer;
    // Docker's multiplexed frames: 8-byte headers; keep the printable text.
    return buf
      .toString("utf8")
      .split("\n")
      .map((l) => l.replace(/[^\x20-\x7e]/g, "").trim())
      .filter(Boolean);
  }

  /** Runs a command in the container; stdout goes to `out` (a file) or is collected. */
  private async exec(
    id: string,
    argv: string[],
    out?: NodeJS.WritableStream,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const ex = await this.docker
      .getContainer(this.host(id))
      .exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
    const stream = await ex.start({ hijack: true, stdin: false });
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let so = "";
    let se = "";
    if (out) stdout.pipe(out);
    else stdout.on("data", (c: Buffer) => (so += c.toString("utf8")));
    stderr.on("data", (c: Buffer) => (se += c.toString("utf8")));
    this.docker.modem.demuxStream(stream, stdout, stderr);
    await once(stream, "end");
    stdout.end();
    stderr.end();
    const r = await ex.inspect();
    return { code: r.ExitCode ?? 1, stdout: so, stderr: se.trim() };
  }

  async status(id: string): Promise<AddonState> {
    const c = await this.inspect(id);
    if (!c) return { state: "missing", networks: [], startedAt: null };
    const networks = Object.keys(c.NetworkSettings.Networks ?? {}).sort();
    if (!c.State.Running) return { state: "stopped", networks, startedAt: null };
    const ready = (await this.exec(id, ["pier-addon", "ready"]).catch(() => ({ code: 1 }))).code === 0;
    return { state: ready ? "running" : "starting", networks, startedAt: c.State.StartedAt };
  }

  async restart(id: string): Promise<void> {
    await this.docker.getContainer(this.host(id)).restart({ t: 30 });
    await this.waitReady(id);
  }

  async remove(id: string): Promise<void> {
    await this.docker
      .getContainer(this.host(id))
      .remove({ force: true })
      .catch((e: unknown) => {
        if (!isNotFound(e)) throw e;
      });
    await this.docker
      .getVolume(this.volume(id))
      .remove()
      .catch((e: unknown) => {
        if (!isNotFound(e)) throw e;
      });
  }

  async connect(id: string, network: string): Promise<void> {
    const c = await this.inspect(id);
    if (c && Object.hasOwn(c.NetworkSettings.Networks ?? {}, network)) return;
    await this.docker.getNetwork(network).connect({ Container: this.host(id) });
  }

  async disconnect(id: string, network: string): Promise<void> {
    const c = await this.inspect(id);
    if (!c || !Object.hasOwn(c.NetworkSettings.Networks ?? {}, network)) return;
    await this.docker.getNetwork(network).disconnect({ Container: this.host(id), Force: true });
  }

  async backup(id: string, file: string): Promise<number> {
    const part = `${file}.part`;
    const out = createWriteStream(part, { mode: 0o600 });
    const done = once(out, "close");
    let r: { code: number; stderr: string };
    try {
      r = await this.exec(id, ["pier-addon", "backup"], out);
      await done;
    } catch (e) {
      out.destroy();
      await rm(part, { force: true });
      throw e;
    }
    if (r.code !== 0) {
      await rm(part, { force: true });
      throw new PierError("ENGINE_ERROR", `The ${this.kind} backup failed (exit ${r.code}): ${r.stderr}`);
    }
    await rename(part, file);
    return (await stat(file)).size;
  }

  async restore(id: string, file: string): Promise<void> {
    const { size } = await stat(file);
    const inside = `restore-${randomBytes(4).toString("hex")}`;
    const c = this.docker.getContainer(this.host(id));
    await c.putArchive(tarOf(inside, file, size), { path: "/tmp" });
    const r = await this.exec(id, this.def.restore.argv(`/tmp/${inside}`));
    await this.exec(id, ["rm", "-f", `/tmp/${inside}`]).catch(() => undefined);
    if (r.code !== 0) {
      throw new PierError(
        "INVALID_INPUT",
        `The backup could not be restored; the ${this.kind} add-on's data is as it was: ${r.stderr.split("\n").slice(-3).join(" ")}`,
      );
    }
    if (this.def.restore.restart) await this.restart(id);
  }
}
