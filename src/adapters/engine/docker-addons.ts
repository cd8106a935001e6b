import { once } from "node:events";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { posix } from "node:path";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { oneEngineNode } from "../../core/addon-nodes.js";
import { addonHost } from "../../core/addons.js";
import type { BucketMount } from "../../core/buckets.js";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import { cpuLimits } from "../../core/model.js";
import type { AddonServerInfo, AddonServerSpec, AddonServers } from "../../core/ports.js";
import { DROPPED_CAPABILITIES, engineCpus, isNotFound } from "./docker-common.js";

/** The volume an add-on's data lives in, on its node (an fs bucket's: what its apps' instances mount). */
export const addonVolume = (id: string): string => `${addonHost(id)}-data`;

const statusOf = (e: unknown) => (e as { statusCode?: number }).statusCode;

/** Waits for an engine call; the answers in `fine` (e.g. 404: gone already; 409: made already) are no error. */
async function unless(call: Promise<unknown>, ...fine: number[]): Promise<void> {
  try {
    await call;
  } catch (e) {
    if (!fine.includes(statusOf(e) ?? 0)) throw e;
  }
}

/** An engine call on an add-on server: an unknown one rejects with NOT_FOUND, a stopped one with CONFLICT. */
async function onServer<T>(id: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    const code = statusOf(e);
    if (code === 404) throw new PierError("NOT_FOUND", `No add-on server ${addonHost(id)} on the engine.`);
    if (code === 409) throw new PierError("CONFLICT", `The add-on server ${addonHost(id)} is not running.`);
    throw e;
  }
}

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

/**
 * Add-on servers as Docker containers (the AddonServers port): container `pier-addon-<id>` (also its host
 * name, which linked apps resolve on each network it is on), its data on the volume `pier-addon-<id>-data`,
 * the flavor's memory and CPU share and the instances' hardening (no NET_RAW/MKNOD, no-new-privileges, a
 * pids limit), restart policy `unless-stopped` (it comes back with dockerd). Its objects carry `pier.addon`
 * and `pier.addon-scope`, never `pier.app` nor `pier.scope`: the reconciler and the leftovers sweep, which
 * remove what no app owns, never see them.
 */
export class DockerAddonServers implements AddonServers {
  constructor(
    private readonly docker: Docker,
    private readonly scope: string,
  ) {}

  private readonly cpus = engineCpus(() => this.docker);

  /** One dockerd: the add-on goes on it; a node asked for is refused. */
  async addonNode(requested: string | null): Promise<string | null> {
    return oneEngineNode(requested);
  }

  private volume(id: string): string {
    return addonVolume(id);
  }

  /**
   * The binds of an instance's file-system buckets (InstanceSpec.buckets): each fs add-on's volume,
   * read-write at its target. The volume must be an fs add-on's of this Pier: the engine would otherwise
   * make an empty one (the app would write where no backup looks), and no other add-on's data (a
   * database's files) may reach an app. Docker makes a missing target, also under a read-only root.
   */
  async bucketBinds(buckets: readonly BucketMount[]): Promise<string[]> {
    const binds: string[] = [];
    for (const b of buckets) {
      const name = this.volume(b.addonId);
      let labels: Record<string, string> = {};
      try {
        labels = (await this.docker.getVolume(name).inspect()).Labels ?? {};
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      const mine = { [LABEL.addon]: b.addonId, [LABEL.addonKind]: "fs", [LABEL.addonScope]: this.scope };
      if (Object.entries(mine).some(([k, v]) => labels[k] !== v))
        throw new PierError(
          "ADDON_NOT_FOUND",
          `The bucket ${addonHost(b.addonId)} to mount at ${b.target} is not an fs add-on of this Pier (its volume is gone or another's).`,
          "See `pier addon list`; link an fs add-on and name its BUCKET_HOST in CC_FS_BUCKET.",
        );
      if (!b.target.startsWith("/") || b.target.includes(":") || b.target.includes(","))
        throw new PierError(
          "INVALID_INPUT",
          `The bucket's mount point '${b.target}' is not an absolute path.`,
        );
      binds.push(`${name}:${b.target}`);
    }
    return binds;
  }

  private labels(spec: AddonServerSpec): Record<string, string> {
    return {
      [LABEL.managed]: "true",
      [LABEL.addon]: spec.id,
      [LABEL.addonKind]: spec.kind,
      [LABEL.addonScope]: this.scope,
      ...(spec.node ? { [LABEL.addonNode]: spec.node } : {}),
    };
  }

  private async inspect(id: string): Promise<Docker.ContainerInspectInfo | null> {
    try {
      return await this.docker.getContainer(addonHost(id)).inspect();
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async runAddonServer(spec: AddonServerSpec): Promise<void> {
    const existing = await this.inspect(spec.id);
    if (!existing) {
      await this.needImage(spec);
      await unless(this.docker.createVolume({ Name: this.volume(spec.id), Labels: this.labels(spec) }), 409);
      await this.create(spec);
    }
    // The joins before the process starts: once it answers, what runs on them reaches it.
    for (const network of spec.joins) await this.connectAddonServer(spec.id, network);
    if (!existing?.State.Running) await unless(this.docker.getContainer(addonHost(spec.id)).start(), 304);
  }

  private async needImage(spec: AddonServerSpec): Promise<void> {
    try {
      await this.docker.getImage(spec.image).inspect();
    } catch (e) {
      if (!isNotFound(e)) throw e;
      throw new PierError(
        "ENGINE_ERROR",
        `The image ${spec.image} of ${spec.kind} add-ons is missing on this engine.`,
        "Run scripts/setup.sh (it builds the add-on images from Debian packages).",
      );
    }
  }

  /** Creates the container; one of that name made meanwhile (a concurrent run) is fine. */
  private async create(spec: AddonServerSpec): Promise<void> {
    const name = addonHost(spec.id);
    const { nanoCpus, cpuShares } = cpuLimits(spec.memoryBytes, await this.cpus());
    const create = this.docker.createContainer({
      name,
      Hostname: name,
      Image: spec.image,
      ...(spec.cmd ? { Cmd: spec.cmd } : {}),
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      Labels: this.labels(spec),
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
        Binds: [`${this.volume(spec.id)}:${spec.dataPath}`],
        ShmSize: 128 * 2 ** 20,
        LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
      },
    });
    await unless(create, 409);
  }

  async addonServer(id: string): Promise<AddonServerInfo | null> {
    const c = await this.inspect(id);
    if (!c) return null;
    const nets = c.NetworkSettings.Networks ?? {};
    const running = c.State.Running && !c.State.Restarting;
    return {
      running,
      restarting: c.State.Restarting,
      exitCode: running ? null : c.State.ExitCode,
      startedAt: running ? c.State.StartedAt : null,
      memoryBytes: c.HostConfig.Memory ?? 0,
      networks: Object.keys(nets).sort(),
      addresses: Object.fromEntries(Object.entries(nets).map(([name, n]) => [name, n.IPAddress])),
    };
  }

  async restartAddonServer(id: string, graceMs: number): Promise<void> {
    await onServer(id, () =>
      this.docker.getContainer(addonHost(id)).restart({ t: Math.ceil(graceMs / 1000) }),
    );
  }

  async removeAddonServer(id: string): Promise<void> {
    await this.releaseBucket(id);
    await unless(this.docker.getContainer(addonHost(id)).remove({ force: true }), 404);
    await unless(this.docker.getVolume(this.volume(id)).remove(), 404);
  }

  /**
   * The instances that mount the add-on's volume as a bucket, but its own server: running ones refuse the
   * removal (the engine would refuse the volume's, after the server went); stopped ones (retired instances
   * kept for their logs) go, so that the volume can.
   */
  private async releaseBucket(id: string): Promise<void> {
    const users = (
      await this.docker.listContainers({ all: true, filters: { volume: [this.volume(id)] } })
    ).filter((c) => !c.Names.includes(`/${addonHost(id)}`));
    const running = users.filter((c) => c.State === "running" || c.State === "restarting");
    if (running.length > 0)
      throw new PierError(
        "CONFLICT",
        `The bucket ${addonHost(id)} is mounted by running instances (${running.map((c) => c.Names[0]?.slice(1)).join(", ")}): it was not deleted.`,
        "Unset CC_FS_BUCKET (or unlink the add-on) and restart the apps that mount it, then delete it.",
      );
    for (const c of users) await unless(this.docker.getContainer(c.Id).remove({ force: true }), 404);
  }

  async connectAddonServer(id: string, network: string): Promise<void> {
    const c = await this.inspect(id);
    if (c && Object.hasOwn(c.NetworkSettings.Networks ?? {}, network)) return;
    await this.docker.getNetwork(network).connect({ Container: addonHost(id) });
  }

  async disconnectAddonServer(id: string, network: string): Promise<void> {
    const c = await this.inspect(id);
    if (!c || !Object.hasOwn(c.NetworkSettings.Networks ?? {}, network)) return;
    await this.docker.getNetwork(network).disconnect({ Container: addonHost(id), Force: true });
  }

  async execInAddonServer(
    id: string,
    argv: string[],
    out?: NodeJS.WritableStream,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    const ex = await onServer(id, () =>
      this.docker.getContainer(addonHost(id)).exec({ Cmd: argv, AttachStdout: true, AttachStderr: true }),
    );
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
    return { exitCode: r.ExitCode ?? 1, stdout: so, stderr: se.trim() };
  }

  async copyToAddonServer(id: string, file: string, path: string): Promise<void> {
    const { size } = await stat(file);
    await this.docker
      .getContainer(addonHost(id))
      .putArchive(tarOf(posix.basename(path), file, size), { path: posix.dirname(path) });
  }

  async addonServerLog(id: string, tail: number): Promise<string[]> {
    const buf = (await this.docker
      .getContainer(addonHost(id))
      .logs({ stdout: true, stderr: true, tail, follow: false })
      .catch(() => Buffer.alloc(0))) as Buffer;
    // Docker's multiplexed frames: 8-byte headers; keep the printable text.
    return buf
      .toString("utf8")
      .split("\n")
      .map((l) => l.replace(/[^\x20-\x7e]/g, "").trim())
      .filter(Boolean);
  }
}
