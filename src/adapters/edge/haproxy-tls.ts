import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tlsPaths } from "../../core/edge-config.js";
import { PierError } from "../../core/errors.js";
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
  if (!existsSync(`${dir}/acme.map`)) await writeFile(`${dir}/acme.map`, "");
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

  async certificates(): Promise<string[]> {
    return this.listLines().map((l) => l.split(" ")[1] ?? "");
  }

  private async expect(answer: Promise<string>, ok: RegExp, what: string): Promise<void> {
    const text = await answer;
    if (!ok.test(text)) throw new PierError("EDGE_ERROR", `HAProxy refused to ${what}: ${text.trim()}`);
  }

  installCertificate(name: string, pem: string): Promise<void> {
    return this.edge.serialize(async () => {
      const path = this.tls.cert(name);
      const line = `${path} ${name}`;
      await writeFile(`${path}.tmp`, pem, { mode: 0o600 });
      await rename(`${path}.tmp`, path);
      const lines = this.listLines();
      if (!lines.includes(line)) await this.writeList([...lines, line]);
      if (this.edge.pid() === null) return; // HAProxy reads the files when it starts.
      const loaded = (await this.edge.runtime(["show ssl cert"])).split("\n").some((l) => l.trim() === path);
      if (!loaded)
        await this.expect(this.edge.runtime([`new ssl cert ${path}`]), /New empty/i, "add a certificate");
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
      if (!loaded)
        await this.expect(
          this.edge.runtimePayload(`add ssl crt-list ${this.tls.crtList}`, line),
          /Success/i,
          `serve the certificate of ${name}`,
        );
    });
  }

  removeCertificate(name: string): Promise<void> {
    return this.edge.serialize(async () => {
      const path = this.tls.cert(name);
      await this.writeList(this.listLines().filter((l) => l.split(" ")[0] !== path));
      if (this.edge.pid() !== null) {
        const loaded = (await this.edge.runtime(["show ssl cert"]))
          .split("\n")
          .some((l) => l.trim() === path);
        if (loaded) {
          await this.edge.runtime([`del ssl crt-list ${this.tls.crtList} ${path}`]);
          await this.edge.runtime([`del ssl cert ${path}`]);
        }
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
      await writeFile(this.acmeMap, [...rest, `${token} ${keyAuthorization}`].map((l) => `${l}\n`).join(""));
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
