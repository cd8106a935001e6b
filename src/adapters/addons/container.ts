import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { type AddonCredentials, type AddonKind, addonHost } from "../../core/addons.js";
import { PierError } from "../../core/errors.js";
import type { AddonProvider, AddonServers, AddonSpec, AddonState } from "../../core/ports.js";

/**
 * What makes one kind of add-on: its image (images/addons/, built by scripts/setup.sh) and how its
 * entrypoint `pier-addon` is asked to serve, say it is ready, back up and restore. Everything else (the
 * server, its data, limits, networks, files in and out) is the same for every kind: ContainerAddons, over
 * the engine's AddonServers port.
 */
export interface AddonKindDefinition {
  kind: AddonKind;
  image: string;
  port: number;
  credentials(name: string): AddonCredentials;
  /** The server's environment (read by its entrypoint). */
  env(spec: AddonSpec): Record<string, string>;
  /** A restore is staged, then the server restarts to load it (kv); or done live (postgresql). */
  restore: { argv: (file: string) => string[]; restart: boolean };
}

/** A random secret for passwords and tokens: 32 bytes in hex (nothing to quote in a URL or a shell, never a leading `-`). */
export const newSecret = () => randomBytes(32).toString("hex");

const READY_TIMEOUT_MS = 90_000;
/** Where every add-on image keeps its data (its entrypoint's contract). */
const DATA_PATH = "/data";
const RESTART_GRACE_MS = 30_000;

/**
 * An add-on as a server of its kind's image on the engine (AddonServers: on Docker a container, its data on
 * a volume), on its own network and the networks of the apps linked to it. It is `running` once its
 * entrypoint says `ready`. Backups stream the entrypoint's output to a file; a restore copies the file in
 * and lets the entrypoint restore it all or nothing.
 */
export class ContainerAddons implements AddonProvider {
  readonly kind: AddonKind;
  readonly port: number;

  constructor(
    private readonly def: AddonKindDefinition,
    private readonly servers: AddonServers,
  ) {
    this.kind = def.kind;
    this.port = def.port;
  }

  credentials(name: string): AddonCredentials {
    return this.def.credentials(name);
  }

  host(id: string): string {
    return addonHost(id);
  }

  async provision(spec: AddonSpec, signal?: AbortSignal): Promise<void> {
    // The linked apps' networks before the server starts: it is ready (and `running`) only once they reach it.
    await this.servers.runAddonServer({
      id: spec.id,
      kind: this.kind,
      image: this.def.image,
      cmd: null,
      env: this.def.env(spec),
      memoryBytes: spec.memoryBytes,
      dataPath: DATA_PATH,
      network: spec.network,
      joins: spec.joins ?? [],
      node: spec.node ?? null,
    });
    await this.waitReady(spec.id, signal);
  }

  private async ready(id: string): Promise<boolean> {
    const r = await this.servers
      .execInAddonServer(id, ["pier-addon", "ready"])
      .catch(() => ({ exitCode: 1 }));
    return r.exitCode === 0;
  }

  private async waitReady(id: string, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      signal?.throwIfAborted();
      const s = await this.servers.addonServer(id);
      if (!s) throw new PierError("ENGINE_ERROR", `The ${this.kind} add-on's container is gone.`);
      if (s.running && (await this.ready(id))) return;
      if (!s.running && !s.restarting && s.exitCode !== 0) {
        throw new PierError(
          "ENGINE_ERROR",
          `The ${this.kind} add-on's server exited with code ${s.exitCode}: ${(await this.tail(id)).join(" | ")}`,
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

  private tail(id: string): Promise<string[]> {
    return this.servers.addonServerLog(id, 5).catch(() => []);
  }

  async status(id: string): Promise<AddonState> {
    const s = await this.servers.addonServer(id);
    if (!s) return { state: "missing", networks: [], startedAt: null };
    if (!s.running && !s.restarting) return { state: "stopped", networks: s.networks, startedAt: null };
    return {
      state: s.running && (await this.ready(id)) ? "running" : "starting",
      networks: s.networks,
      startedAt: s.startedAt,
    };
  }

  async restart(id: string): Promise<void> {
    await this.servers.restartAddonServer(id, RESTART_GRACE_MS);
    await this.waitReady(id);
  }

  remove(id: string): Promise<void> {
    return this.servers.removeAddonServer(id);
  }

  connect(id: string, network: string): Promise<void> {
    return this.servers.connectAddonServer(id, network);
  }

  disconnect(id: string, network: string): Promise<void> {
    return this.servers.disconnectAddonServer(id, network);
  }

  async backup(id: string, file: string): Promise<number> {
    const part = `${file}.part`;
    const out = createWriteStream(part, { mode: 0o600 });
    const done = once(out, "close");
    let r: { exitCode: number; stderr: string };
    try {
      r = await this.servers.execInAddonServer(id, ["pier-addon", "backup"], out);
      await done;
    } catch (e) {
      out.destroy();
      await rm(part, { force: true });
      throw e;
    }
    if (r.exitCode !== 0) {
      await rm(part, { force: true });
      throw new PierError("ENGINE_ERROR", `The ${this.kind} backup failed (exit ${r.exitCode}): ${r.stderr}`);
    }
    await rename(part, file);
    return (await stat(file)).size;
  }

  async restore(id: string, file: string): Promise<void> {
    const inside = `/tmp/restore-${randomBytes(4).toString("hex")}`;
    await this.servers.copyToAddonServer(id, file, inside);
    const r = await this.servers.execInAddonServer(id, this.def.restore.argv(inside));
    await this.servers.execInAddonServer(id, ["rm", "-f", inside]).catch(() => undefined);
    if (r.exitCode !== 0) {
      throw new PierError(
        "INVALID_INPUT",
        `The backup could not be restored; the ${this.kind} add-on's data is as it was: ${r.stderr.split("\n").slice(-3).join(" ")}`,
      );
    }
    if (this.def.restore.restart) await this.restart(id);
  }
}
