// Pier's own registry for a swarm (ADR 0030): Debian's docker-registry (distribution 2.8) that pier server
// runs beside itself on the manager when the operator names none. Its files live in Pier's data dir: a CA
// made for it (the nodes trust it: `pier nodes join-command` prints how), a certificate for the address the
// nodes reach it at, htpasswd (bcrypt) with a random password kept in a 0600 file, its storage. It is a
// daemon, like the edge: it outlives pier server, and a restarted pier server adopts it; unless manifests
// were deleted since its last garbage collection: then that pier server stops it, collects, and starts it.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, openSync } from "node:fs";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { PierError } from "../../core/errors.js";
import type { ReleaseRegistry } from "../../core/ports.js";
import { ExecError, exec } from "../exec.js";
import { RegistryApi } from "./registry-api.js";

export const OWN_REGISTRY_USER = "pier";

export interface OwnRegistryOptions {
  /** Its directory (0700), in Pier's data dir. */
  dir: string;
  /** host:port the nodes reach it at; it listens there. */
  listen: string;
  /** Where the manager's dockerd reads registries' CAs (`/etc/docker/certs.d`): Pier's goes there. */
  certsDir: string;
  bin?: string;
  logger?: { info: (o: object, m?: string) => void; warn: (o: object, m?: string) => void };
}

export interface OwnRegistryAccess {
  address: string;
  username: string;
  password: string;
  /** The CA every node must trust, PEM. */
  caPem: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Marks a garbage collection due (a manifest was deleted since the last one). */
const GC_DUE = "gc-due";

/** Whether a process runs (one that exited and waits for its parent to reap it does not). */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  return stat !== null && !/\) Z /.test(stat);
}

/** Bytes a directory's files take on disk (`du`), or null when it cannot be read. */
async function diskUse(dir: string): Promise<number | null> {
  try {
    return Number((await exec(["du", "-sb", dir])).stdout.split("\t")[0]);
  } catch {
    return null;
  }
}

async function run(argv: string[], what: string, input?: string): Promise<string> {
  try {
    return (await exec(argv, input === undefined ? {} : { input })).stdout;
  } catch (e) {
    const why = e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message;
    throw new PierError("CONFIG_INVALID", `Pier's swarm registry: could not ${what}: ${why}`);
  }
}

export class OwnRegistry {
  private readonly host: string;

  constructor(private readonly opts: OwnRegistryOptions) {
    this.host = opts.listen.slice(0, opts.listen.lastIndexOf(":"));
  }

  private path(f: string): string {
    return join(this.opts.dir, f);
  }

  /** Its files made (once), the manager's dockerd trusting it, the daemon answering; how to reach it. */
  async ensure(): Promise<OwnRegistryAccess> {
    await mkdir(join(this.opts.dir, "data"), { recursive: true, mode: 0o700 });
    await chmod(this.opts.dir, 0o700);
    await this.ensureCa();
    await this.ensureCertificate();
    const password = await this.ensurePassword();
    await writeFile(this.path("config.yml"), this.config(), { mode: 0o600 });
    const caPem = await readFile(this.path("ca.crt"), "utf8");
    await this.trustOnManager(caPem);
    if (existsSync(this.path(GC_DUE))) await this.collect(caPem);
    if (!(await this.answers(caPem))) await this.start(caPem);
    return { address: this.opts.listen, username: OWN_REGISTRY_USER, password, caPem };
  }

  /**
   * `registry`, which marks a garbage collection due whenever it forgets a manifest: the blobs only it
   * used take disk space until `registry garbage-collect` runs, with the daemon stopped (ADR 0030).
   */
  collecting(registry: ReleaseRegistry): ReleaseRegistry {
    return {
      address: registry.address,
      publish: (image) => registry.publish(image),
      forget: async (repository, keep) => {
        const forgotten = await registry.forget(repository, keep);
        if (forgotten.length > 0)
          await writeFile(this.path(GC_DUE), `${new Date().toISOString()}\n`, { mode: 0o600 });
        return forgotten;
      },
    };
  }

  /**
   * At start, before anything pushes: the adopted daemon stopped, the blobs no manifest names removed
   * (`garbage-collect`), the mark cleared. A collection that fails is logged and tried at the next start;
   * the registry serves either way.
   */
  private async collect(caPem: string): Promise<void> {
    await this.stopAdopted();
    if (await this.answers(caPem)) {
      this.opts.logger?.warn(
        { listen: this.opts.listen },
        "swarm registry: another process answers on its address; its garbage collection waits",
      );
      return;
    }
    const bin = this.opts.bin ?? "docker-registry";
    const before = await diskUse(this.path("data"));
    try {
      await exec([bin, "garbage-collect", this.path("config.yml")]);
      await rm(this.path(GC_DUE), { force: true });
      const after = await diskUse(this.path("data"));
      this.opts.logger?.info({ before, after }, "swarm registry: garbage collected (bytes of its storage)");
    } catch (e) {
      const why = e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message;
      this.opts.logger?.warn({ err: why }, "swarm registry: garbage collection failed; tried at next start");
    }
  }

  /** The daemon a previous pier server started (its pid file, and its command line naming our config). */
  private async stopAdopted(): Promise<void> {
    const pid = Number((await readFile(this.path("registry.pid"), "utf8").catch(() => "")).trim());
    if (!Number.isInteger(pid) || pid <= 0) return;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (!cmdline.includes(this.path("config.yml"))) return;
    process.kill(pid, "SIGTERM");
    for (let i = 0; i < 50 && (await alive(pid)); i++) await sleep(100);
    if (await alive(pid)) process.kill(pid, "SIGKILL");
    for (let i = 0; i < 50 && (await alive(pid)); i++) await sleep(100);
  }

  private async ensureCa(): Promise<void> {
    if (existsSync(this.path("ca.crt"))) return;
    await run(
      [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "3650",
        "-subj",
        "/CN=Pier swarm registry CA",
        "-keyout",
        this.path("ca.key"),
        "-out",
        this.path("ca.crt"),
      ],
      "make its CA with openssl",
    );
    await chmod(this.path("ca.key"), 0o600);
  }

  /** A certificate for the address it listens on (made again when that address changes). */
  private async ensureCertificate(): Promise<void> {
    const san = `${isIP(this.host) ? "IP" : "DNS"}:${this.host}`;
    const stamp = this.path("tls.san");
    if (existsSync(this.path("tls.crt")) && existsSync(stamp) && (await readFile(stamp, "utf8")) === san)
      return;
    await run(
      [
        "openssl",
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        `/CN=${this.host}`,
        "-keyout",
        this.path("tls.key"),
        "-out",
        this.path("tls.csr"),
      ],
      "make its key with openssl",
    );
    await writeFile(this.path("tls.ext"), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`);
    await run(
      [
        "openssl",
        "x509",
        "-req",
        "-in",
        this.path("tls.csr"),
        "-CA",
        this.path("ca.crt"),
        "-CAkey",
        this.path("ca.key"),
        "-CAcreateserial",
        "-days",
        "825",
        "-extfile",
        this.path("tls.ext"),
        "-out",
        this.path("tls.crt"),
      ],
      "sign its certificate with openssl",
    );
    await chmod(this.path("tls.key"), 0o600);
    await writeFile(stamp, san);
  }

  /** A random password (kept 0600) and its bcrypt htpasswd line: given on stdin, never on a command line. */
  private async ensurePassword(): Promise<string> {
    const file = this.path("password");
    if (!existsSync(file) || !existsSync(this.path("htpasswd"))) {
      const password = randomBytes(24).toString("hex");
      const line = await run(
        ["htpasswd", "-niB", OWN_REGISTRY_USER],
        "hash its password with htpasswd (apache2-utils)",
        `${password}\n`,
      );
      await writeFile(this.path("htpasswd"), line, { mode: 0o600 });
      await writeFile(file, `${password}\n`, { mode: 0o600 });
    }
    return (await readFile(file, "utf8")).trim();
  }

  private config(): string {
    return [
      "version: 0.1",
      "log:",
      "  level: warn",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${this.path("data")}`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: ${this.opts.listen}`,
      "  tls:",
      `    certificate: ${this.path("tls.crt")}`,
      `    key: ${this.path("tls.key")}`,
      "auth:",
      "  htpasswd:",
      "    realm: pier",
      `    path: ${this.path("htpasswd")}`,
      "",
    ].join("\n");
  }

  /** The manager's dockerd pushes to it: it trusts Pier's CA for this address (read at each push). */
  private async trustOnManager(caPem: string): Promise<void> {
    const dir = join(this.opts.certsDir, this.opts.listen);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "ca.crt"), caPem);
  }

  /** Whether it answers `/v2/` over TLS with its CA (401: it asks for the password). */
  private async answers(caPem: string): Promise<boolean> {
    return (await RegistryApi.probe(this.opts.listen, caPem, 2000)) === 401;
  }

  private async start(caPem: string): Promise<void> {
    const bin = this.opts.bin ?? "docker-registry";
    const log = openSync(this.path("registry.log"), "a", 0o600);
    const child = spawn(bin, ["serve", this.path("config.yml")], {
      detached: true,
      stdio: ["ignore", log, log],
    });
    const failed = new Promise<string>((resolve) => {
      child.once("error", (e) => resolve(e.message));
      child.once("exit", (code) => resolve(`it exited with code ${code}`));
    });
    child.unref();
    for (let i = 0; i < 100; i++) {
      const outcome = await Promise.race([failed, sleep(200).then(() => null)]);
      if (outcome !== null) {
        const tail = (await readFile(this.path("registry.log"), "utf8").catch(() => ""))
          .trim()
          .split("\n")
          .slice(-3)
          .join(" | ");
        throw new PierError(
          "CONFIG_INVALID",
          `Pier's swarm registry did not start on ${this.opts.listen}: ${outcome}${tail ? ` (${tail})` : ""}.`,
          "Is docker-registry installed (scripts/setup.sh installs it with PIER_ENGINE=swarm), and is PIER_SWARM_REGISTRY_LISTEN an address of this machine with a free port?",
        );
      }
      if (await this.answers(caPem)) {
        await writeFile(this.path("registry.pid"), `${child.pid}\n`, { mode: 0o600 });
        this.opts.logger?.info({ listen: this.opts.listen, pid: child.pid }, "swarm registry started");
        return;
      }
    }
    throw new PierError(
      "CONFIG_INVALID",
      `Pier's swarm registry did not answer on https://${this.opts.listen}/v2/ within 20 s.`,
    );
  }
}
