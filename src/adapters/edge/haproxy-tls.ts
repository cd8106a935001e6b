import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tlsPaths } from "../../core/edge-config.js";
import { PierError } from "../../core/errors.js";
import { hostnameProblem } from "../../core/names.js";
import type { TlsEdge } from "../../core/ports.js";
import { ExecError, exec } from "../exec.js";

/** What the TLS side needs of the edge: its runtime API, whether HAProxy runs, and its change queue. */
export interface RuntimeEdge {
  readonly dir: string;
  pid(): number | null;
  runtime(commands: readonly string[]): Promise<string>;
  /** Sends one command followed by a payload (HAProxy's `<<` syntax). */
  runtimePayload(command: string, payload: string): Promise<string>;
  /** Runs `f` in line with the edge's other changes (reloads, route switches), never during one. */
  serialize<T>(f: () => Promise<T>): Promise<T>;
}

const ACME_TOKEN = /^[A-Za-z0-9_-]{1,200}$/;
const KEY_AUTH = /^[A-Za-z0-9_.-]{1,400}$/;
/** What a certificate payload may be (edgePem's output): PEM blocks of base64 lines, nothing else. */
const PEM_ONLY =
  /^(-----BEGIN [A-Z ]{1,40}-----\n([A-Za-z0-9+/=]{1,76}\n){1,400}-----END [A-Z ]{1,40}-----\n){2,12}$/;

/** The runtime API and the crt-list take the name as a word: a DNS name, checked here too. */
function checkName(name: string): void {
  const bad = hostnameProblem(name);
  if (bad)
    throw new PierError("EDGE_ERROR", `The edge takes no certificate for ${JSON.stringify(name)}: ${bad}`);
}

/**
 * Makes the files the HTTPS frontend needs before HAProxy reads its configuration: the tls directory
 * (mode 0700: private keys), a self-signed default certificate (served for an unknown SNI; HAProxy binds
 * ssl only with one), the crt-list and the ACME map (both may be empty).
 */
export async function prepareTlsFiles(dir: string, opensslBin = "openssl"): Promise<void> {
  const tls = tlsPaths(dir);
  await mkdir(tls.dir, { recursive: true, mode: 0o700 });
  await chmod(tls.dir, 0o700);
  if (!existsSync(tls.defaultCert)) {
    const key = `${tls.defaultCert}.key.tmp`;
    const crt = `${tls.defaultCert}.crt.tmp`;
    const made = exec([
      opensslBin,
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "3650",
      "-subj",
      "/CN=pier-default.invalid",
      "-keyout",
      key,
      "-out",
      crt,
    ]);
    await made.catch((e: Error) => {
      throw new PierError(
        "EDGE_ERROR",
        `Could not make the edge's default TLS certificate with ${opensslBin}: ${e instanceof ExecError ? e.stderrTail.trim() : e.message}`,
        "Install openssl (apt-get install openssl).",
      );
    });
    const pem = `${(await readFile(crt, "utf8")).trim()}\n${(await readFile(key, "utf8")).trim()}\n`;
    await writeFile(tls.defaultCert, pem, { mode: 0o600 });
    await rm(key, { force: true });
    await rm(crt, { force: true });
  }
  if (!existsSync(tls.crtList)) await writeFile(tls.crtList, "", { mode: 0o600 });
  if (!existsSync(`${dir}/acme.map`)) await writeFile(`${dir}/acme.map`, "", { mode: 0o600 });
}

/**
 * Certificates and HTTP-01 answers on Pier's HAProxy, changed through its runtime API (no reload, no
 * dropped connection: `new/set/commit ssl cert`, `add/del ssl crt-list`, `add/del map`), with the files
 * kept in step so that a restarted or reloaded HAProxy serves the same (ADR 0018).
 */
export class HaproxyTls implements TlsEdge {
  private readonly tls: ReturnType<typeof tlsPaths>;
  private readonly acmeMap: string;

  constructor(private readonly edge: RuntimeEdge) {
    this.tls = tlsPaths(edge.dir);
    this.acmeMap = `${edge.dir}/acme.map`;
  }

  private listLines(): string[] {
    if (!existsSync(this.tls.crtList)) return [];
    return readFileSync(this.tls.crtList, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
  }

  private async writeList(lines: string[]): Promise<void> {
    await writeFile(this.tls.crtList, lines.map((l) => `${l}\n`).join(""), { mode: 0o600 });
  }

  /** The names of the running HAProxy's crt-list (null when it does not run). */
  private async running(): Promise<string[] | null> {
    if (this.edge.pid() === null) return null;
    const answer = await this.edge.runtime([`show ssl crt-list ${this.tls.crtList}`]);
    return answer
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.startsWith("#"))
      .map((l) => l.trim().split(/\s+/)[1] ?? "")
      .filter((n) => n !== "");
  }

  async certificates(): Promise<string[]> {
    const onDisk = this.listLines().map((l) => l.split(" ")[1] ?? "");
    return [...new Set([...onDisk, ...((await this.running()) ?? [])])];
  }

  async served(): Promise<string[]> {
    const running = await this.running();
    return running ?? this.listLines().map((l) => l.split(" ")[1] ?? "");
  }

  private async expect(answer: Promise<string>, ok: RegExp, what: string): Promise<void> {
    const text = await answer;
    if (!ok.test(text)) throw new PierError("EDGE_ERROR", `HAProxy refused to ${what}: ${text.trim()}`);
  }

  /**
   * Serves `pem` for `name`. The files are written first (a restarted HAProxy reads them); when HAProxy
   * refuses the certificate, everything is put back as it was (files, crt-list, HAProxy's own state), so a
   * refused certificate never breaks the next reload nor blocks the next certificate change.
   */
  installCertificate(name: string, pem: string): Promise<void> {
    try {
      checkName(name);
    } catch (e) {
      return Promise.reject(e);
    }
    if (!PEM_ONLY.test(pem))
      return Promise.reject(
        new PierError(
          "EDGE_ERROR",
          `The certificate of ${name} is not plain PEM: the edge does not take it.`,
        ),
      );
    return this.edge.serialize(async () => {
      const path = this.tls.cert(name);
      const line = `${path} ${name}`;
      const before = existsSync(path) ? await readFile(path, "utf8") : null;
      const listed = this.listLines();
      await writeFile(`${path}.tmp`, pem, { mode: 0o600 });
      await chmod(`${path}.tmp`, 0o600);
      await rename(`${path}.tmp`, path);
      if (!listed.includes(line)) await this.writeList([...listed, line]);
      if (this.edge.pid() === null) return; // HAProxy reads the files when it starts.
      const shown = await this.edge.runtime(["show ssl cert"]);
      // A transaction left open (pier server stopped between `set` and `commit`) would refuse every other.
      const stale = /# transaction\n\*(\S+)/.exec(shown)?.[1];
      if (stale) await this.edge.runtime([`abort ssl cert ${stale}`]);
      const loaded = shown.split("\n").some((l) => l.trim() === path);
      // Whether the running crt-list has it: a certificate can be loaded but not listed (pier server stopped
      // between `commit` and `add ssl crt-list`); then it is listed now.
      const listedLive = ((await this.running()) ?? []).includes(name);
      let created = false;
      let opened = false;
      try {
        if (!loaded) {
          await this.expect(this.edge.runtime([`new ssl cert ${path}`]), /New empty/i, "add a certificate");
          created = true;
        }
        opened = true;
        await this.expect(
          this.edge.runtimePayload(`set ssl cert ${path}`, pem),
          /Transaction (created|updated)/i,
          `load the certificate of ${name}`,
        );
        await this.expect(
          this.edge.runtime([`commit ssl cert ${path}`]),
          /Success/i,
          `switch to the certificate of ${name}`,
        );
        opened = false;
        if (!listedLive)
          await this.expect(
            this.edge.runtimePayload(`add ssl crt-list ${this.tls.crtList}`, line),
            /Success/i,
            `serve the certificate of ${name}`,
          );
      } catch (e) {
        if (opened) await this.edge.runtime([`abort ssl cert ${path}`]).catch(() => undefined);
        if (created) await this.edge.runtime([`del ssl cert ${path}`]).catch(() => undefined);
        if (before !== null) {
          await writeFile(`${path}.tmp`, before, { mode: 0o600 });
          await rename(`${path}.tmp`, path);
        } else await rm(path, { force: true });
        await this.writeList(listed);
        throw e;
      }
    });
  }

  removeCertificate(name: string): Promise<void> {
    try {
      checkName(name);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.edge.serialize(async () => {
      const path = this.tls.cert(name);
      await this.writeList(this.listLines().filter((l) => l.split(" ")[0] !== path));
      if (this.edge.pid() !== null) {
        if (((await this.running()) ?? []).includes(name))
          await this.edge.runtime([`del ssl crt-list ${this.tls.crtList} ${path}`]);
        const loaded = (await this.edge.runtime(["show ssl cert"]))
          .split("\n")
          .some((l) => l.trim() === path);
        if (loaded) await this.edge.runtime([`del ssl cert ${path}`]);
      }
      await rm(path, { force: true });
    });
  }

  private mapLines(): string[] {
    if (!existsSync(this.acmeMap)) return [];
    return readFileSync(this.acmeMap, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
  }

  setChallenge(token: string, keyAuthorization: string): Promise<void> {
    if (!ACME_TOKEN.test(token) || !KEY_AUTH.test(keyAuthorization))
      return Promise.reject(
        new PierError("ACME_ERROR", "The ACME server sent a challenge token of odd characters."),
      );
    return this.edge.serialize(async () => {
      const rest = this.mapLines().filter((l) => l.split(" ")[0] !== token);
      await writeFile(this.acmeMap, [...rest, `${token} ${keyAuthorization}`].map((l) => `${l}\n`).join(""), {
        mode: 0o600,
      });
      if (this.edge.pid() === null) return;
      await this.edge.runtime([`del map ${this.acmeMap} ${token}`]);
      await this.expect(
        this.edge.runtime([`add map ${this.acmeMap} ${token} ${keyAuthorization}`]),
        /^\s*$/,
        "answer the ACME challenge",
      );
    });
  }

  removeChallenge(token: string): Promise<void> {
    if (!ACME_TOKEN.test(token)) return Promise.resolve();
    return this.edge.serialize(async () => {
      await writeFile(
        this.acmeMap,
        this.mapLines()
          .filter((l) => l.split(" ")[0] !== token)
          .map((l) => `${l}\n`)
          .join(""),
      );
      if (this.edge.pid() !== null) await this.edge.runtime([`del map ${this.acmeMap} ${token}`]);
    });
  }
}
