// The fake engine's add-on servers (the AddonServers port), composed into FakeEngine
// (test/support/fake-engine.ts) and held to the same contract as the Docker adapter by
// test/conformance/engine.ts. An add-on image's entrypoint `pier-addon` (images/addons/) is played here
// (serve, ready, backup, restore, restore-stage) over a tiny key-value store kept with the server's data, so
// that the real providers (src/adapters/addons/) run over it and pass test/conformance/addon-provider.ts.
import { readFile } from "node:fs/promises";
import { oneEngineNode, swarmAddonNode } from "../../src/core/addon-nodes.js";
import { type AddonKind, addonHost } from "../../src/core/addons.js";
import { PierError } from "../../src/core/errors.js";
import type { AddonServerInfo, AddonServerSpec, AddonServers } from "../../src/core/ports.js";
import { interpret } from "./fake-shell.js";

/** What the add-on servers need of the rest of the fake engine. */
export interface FakeAddonWorld {
  hasImage(tag: string): boolean;
  hasNetwork(name: string): boolean;
}

/** An add-on's data: kept until its server is removed (on Docker, its volume). */
export interface FakeAddonData {
  /** The kind of the server that made it. */
  kind: AddonKind | null;
  /** What clients wrote (the played server's keys). */
  keys: Map<string, string>;
  /** Files under the server's data path. */
  files: Map<string, Buffer>;
  /** A restore staged by `pier-addon restore-stage`, loaded at the next start. */
  staged: Map<string, string> | null;
}

export interface FakeAddonServer {
  spec: AddonServerSpec;
  running: boolean;
  exitCode: number | null;
  startedAt: string | null;
  addresses: Record<string, string>;
  /** Files outside the data path (gone with the server). */
  files: Map<string, Buffer>;
}

/** What `pier-addon backup` prints here, before the keys as JSON. */
const BACKUP_MAGIC = "pier-fake-addon-backup\n";

const parseBackup = (b: Buffer | undefined): Map<string, string> | null => {
  const text = b?.toString("utf8") ?? "";
  if (!text.startsWith(BACKUP_MAGIC)) return null;
  try {
    return new Map(JSON.parse(text.slice(BACKUP_MAGIC.length)) as [string, string][]);
  } catch {
    return null;
  }
};

type ExecResult = { exitCode: number; stdout: string; stderr: string };

export class FakeAddonServers implements AddonServers {
  readonly servers = new Map<string, FakeAddonServer>();
  readonly data = new Map<string, FakeAddonData>();
  /** The specs runAddonServer was given, in order. */
  readonly specs: AddonServerSpec[] = [];
  /** Images whose server exits at start with this code (a broken image, a bad setting). */
  readonly exitAtStart = new Map<string, number>();
  private addressCount = 0;
  /** The swarm's nodes, the manager first (null: one dockerd): where `addonNode` lets an add-on go. */
  swarmNodes: string[] | null = null;

  async addonNode(requested: string | null): Promise<string | null> {
    const nodes = this.swarmNodes;
    if (!nodes) return oneEngineNode(requested);
    return swarmAddonNode(requested, nodes, nodes[0] ?? "");
  }

  constructor(private readonly world: FakeAddonWorld) {}

  /** The add-on's server is gone, as if removed outside Pier; its data stays. */
  lose(id: string): void {
    this.servers.delete(id);
  }

  /** The networks add-on servers are on (a network in use is not removed). */
  networksInUse(): string[] {
    return [...this.servers.values()].flatMap((s) => Object.keys(s.addresses));
  }

  /**
   * A client of the played protocol on `network`, at `host` (the add-on's name or an address), with a
   * password: what it prints and its exit code, as valkey-cli or psql would.
   */
  client(
    network: string,
    host: string,
    password: string,
    work: (keys: Map<string, string>) => string,
  ): { code: number; stdout: string; stderr: string } {
    const s = [...this.servers.values()].find(
      (x) =>
        x.addresses[network] !== undefined &&
        (addonHost(x.spec.id) === host || x.addresses[network] === host),
    );
    const refused = (stderr: string) => ({ code: 1, stdout: "", stderr });
    if (!s?.running) return refused(`Could not connect to ${host}: unknown host or refused`);
    if (s.spec.env.PIER_ADDON_PASSWORD !== password)
      return refused("WRONGPASS invalid username-password pair or user is disabled.");
    return { code: 0, stdout: work(this.dataOf(s.spec.id).keys), stderr: "" };
  }

  /**
   * The files of an fs add-on's bucket, by path inside it (its data's keys: backed up and restored as
   * the played entrypoint does every kind's), or null when `id` has no fs data (InstanceSpec.buckets).
   */
  bucket(id: string): Map<string, string> | null {
    const d = this.data.get(id);
    return d?.kind === "fs" ? d.keys : null;
  }

  private dataOf(id: string): FakeAddonData {
    let d = this.data.get(id);
    if (!d) {
      d = { kind: null, keys: new Map(), files: new Map(), staged: null };
      this.data.set(id, d);
    }
    return d;
  }

  private known(id: string): FakeAddonServer {
    const s = this.servers.get(id);
    if (!s) throw new PierError("NOT_FOUND", `No such container: ${addonHost(id)}`);
    return s;
  }

  private network(name: string): void {
    if (!this.world.hasNetwork(name)) throw new PierError("NOT_FOUND", `network ${name} not found`);
  }

  /** Its process starts: a staged restore is loaded first (as the kv entrypoint does). */
  private start(s: FakeAddonServer): void {
    const d = this.dataOf(s.spec.id);
    if (d.staged) d.keys = d.staged;
    d.staged = null;
    const broken = this.exitAtStart.get(s.spec.image);
    const run = s.spec.cmd ? interpret(s.spec.cmd) : { exitCode: broken ?? null };
    Object.assign(s, {
      running: run.exitCode === null,
      exitCode: run.exitCode,
      startedAt: new Date().toISOString(),
    });
  }

  async runAddonServer(spec: AddonServerSpec): Promise<void> {
    this.specs.push(spec);
    let s = this.servers.get(spec.id);
    if (!s) {
      if (!this.world.hasImage(spec.image))
        throw new PierError("ENGINE_ERROR", `The image ${spec.image} of ${spec.kind} add-ons is missing.`);
      this.network(spec.network);
      s = { spec, running: false, exitCode: null, startedAt: null, addresses: {}, files: new Map() };
      this.servers.set(spec.id, s);
      this.dataOf(spec.id).kind = spec.kind;
      await this.connectAddonServer(spec.id, spec.network);
    }
    for (const n of spec.joins) await this.connectAddonServer(spec.id, n);
    if (!s.running) this.start(s);
  }

  async addonServer(id: string): Promise<AddonServerInfo | null> {
    const s = this.servers.get(id);
    if (!s) return null;
    return {
      running: s.running,
      restarting: false,
      exitCode: s.running ? null : s.exitCode,
      startedAt: s.running ? s.startedAt : null,
      memoryBytes: s.spec.memoryBytes,
      networks: Object.keys(s.addresses).sort(),
      addresses: { ...s.addresses },
    };
  }

  async restartAddonServer(id: string): Promise<void> {
    this.start(this.known(id));
  }

  async removeAddonServer(id: string): Promise<void> {
    this.servers.delete(id);
    this.data.delete(id);
  }

  async connectAddonServer(id: string, network: string): Promise<void> {
    const s = this.known(id);
    this.network(network);
    if (s.addresses[network] !== undefined) return;
    this.addressCount++;
    s.addresses[network] = `10.254.${this.addressCount >> 8}.${this.addressCount & 255}`;
  }

  async disconnectAddonServer(id: string, network: string): Promise<void> {
    const s = this.servers.get(id);
    if (s) delete s.addresses[network];
  }

  async execInAddonServer(id: string, argv: string[], out?: NodeJS.WritableStream): Promise<ExecResult> {
    const s = this.known(id);
    if (!s.running) throw new PierError("CONFLICT", `Container ${addonHost(id)} is not running`);
    const r = this.command(s, argv);
    if (!out) return r;
    out.write(r.stdout);
    out.end();
    return { ...r, stdout: "" };
  }

  /** The played commands: `pier-addon ...`, `cat FILE`, `rm -f FILE`, or the fake shell's. */
  private command(s: FakeAddonServer, argv: string[]): ExecResult {
    const [cmd, verb, arg = ""] = argv;
    if (cmd === "pier-addon") return this.entrypoint(s, verb ?? "serve", arg);
    if (cmd === "cat") {
      const f = this.file(s, verb ?? "").get(verb ?? "");
      return f
        ? { exitCode: 0, stdout: f.toString("utf8"), stderr: "" }
        : { exitCode: 1, stdout: "", stderr: `cat: ${verb}: No such file or directory` };
    }
    if (cmd === "rm") {
      this.file(s, arg).delete(arg);
      return { exitCode: 0, stdout: "", stderr: "" };
    }
    const run = interpret(argv);
    return { exitCode: run.exitCode ?? 0, stdout: run.lines.map((l) => `${l}\n`).join(""), stderr: "" };
  }

  /** The files a path is in: the data's (kept) or the server's own (gone with it). */
  private file(s: FakeAddonServer, path: string): Map<string, Buffer> {
    return path.startsWith(`${s.spec.dataPath}/`) ? this.dataOf(s.spec.id).files : s.files;
  }

  private entrypoint(s: FakeAddonServer, verb: string, path: string): ExecResult {
    const d = this.dataOf(s.spec.id);
    const ok = (stdout = "") => ({ exitCode: 0, stdout, stderr: "" });
    if (verb === "ready") return ok();
    if (verb === "backup") return ok(`${BACKUP_MAGIC}${JSON.stringify([...d.keys])}`);
    if (verb === "restore" || verb === "restore-stage") {
      const keys = parseBackup(this.file(s, path).get(path));
      if (!keys) return { exitCode: 1, stdout: "", stderr: "the restore failed: the data is as it was" };
      if (verb === "restore") d.keys = keys;
      else d.staged = keys;
      return ok();
    }
    return { exitCode: 2, stdout: "", stderr: `pier-addon: unknown command '${verb}'` };
  }

  async copyToAddonServer(id: string, file: string, path: string): Promise<void> {
    const s = this.known(id);
    this.file(s, path).set(path, await readFile(file));
  }

  async addonServerLog(id: string): Promise<string[]> {
    this.known(id);
    return [];
  }
}
