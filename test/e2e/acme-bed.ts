// An ACME test bed for the e2e files (ADR 0018): Debian's pebble (an ACME server, RFC 8555) and
// pebble-challtestsrv (its DNS, every name at one address), on loopback, with the certificates they need.
// Pebble checks HTTP-01 on the edge's HTTP port at the address the DNS gives.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { freePort, run } from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function openssl(args: string[]): Promise<void> {
  const r = await run(["openssl", ...args]);
  if (r.code !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
}

/** An openssl config whose `v3` section holds the extensions of `ext`. */
function v3(ext: string): string {
  const file = `${ext}.cnf`;
  writeFileSync(file, `[req]\ndistinguished_name=dn\n[dn]\n[v3]\n${readFileSync(ext, "utf8")}`);
  return file;
}

/** A self-signed certificate (a CA when `ca`) for `cn`, or one signed by `issuer` (a path without .pem). */
export async function makeCert(
  dir: string,
  base: string,
  cn: string,
  opts: { sans?: string[]; issuer?: string; ca?: boolean } = {},
): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${base}.key`);
  const cert = join(dir, `${base}.pem`);
  const ext = join(dir, `${base}.ext`);
  writeFileSync(
    ext,
    opts.ca
      ? "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
      : `subjectAltName=${(opts.sans ?? [cn]).map((s) => (/^\d/.test(s) ? `IP:${s}` : `DNS:${s}`)).join(",")}\n`,
  );
  const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key];
  if (!opts.issuer) {
    const subj = ["-days", "30", "-subj", `/CN=${cn}`, "-extensions", "v3", "-config", v3(ext)];
    await openssl(["req", "-x509", ...newKey, ...subj, "-out", cert]);
  } else {
    const csr = join(dir, `${base}.csr`);
    await openssl(["req", ...newKey, "-subj", `/CN=${cn}`, "-out", csr]);
    const ca = ["-CA", `${opts.issuer}.pem`, "-CAkey", `${opts.issuer}.key`, "-CAcreateserial"];
    await openssl(["x509", "-req", "-in", csr, ...ca, "-days", "30", "-extfile", ext, "-out", cert]);
  }
  return { cert, key };
}

/** An HTTPS GET of `url` trusting `ca` only: the body on 200, else "". */
function getTrusting(port: number, path: string, ca: string): Promise<string> {
  return new Promise<string>((resolve) => {
    const req = httpsRequest({ host: "127.0.0.1", port, path, ca, servername: "localhost" }, (res) => {
      let b = "";
      res.on("data", (c: Buffer) => {
        b += c.toString();
      });
      res.on("end", () => resolve(res.statusCode === 200 ? b : ""));
    });
    req.on("error", () => resolve(""));
    req.end();
  });
}

/** An HTTPS GET on a new connection to the edge (at `address`) with SNI `host`, trusting `ca` only. */
export function httpsGet(
  port: number,
  host: string,
  ca: string,
  path = "/",
  address = "127.0.0.1",
): Promise<{ status: number; body: string; headers: Record<string, unknown>; serial: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: address, port, path, servername: host, headers: { host }, ca, agent: false },
      (res) => {
        let body = "";
        const serial = (res.socket as import("node:tls").TLSSocket).getPeerCertificate().serialNumber ?? "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers, serial: serial.toLowerCase() }),
        );
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

export class AcmeBed {
  private readonly procs: ChildProcess[] = [];
  private dnsPort = 0;
  private challMgmt = 0;

  /** `dir`: where the bed's certificates and configurations go (the e2e Pier's work directory). */
  constructor(private readonly dir: string) {}

  /** The CA of pebble's own HTTPS (its directory): Pier trusts it by PIER_ACME_CA. */
  get caFile(): string {
    return join(this.dir, "pebble-ca.pem");
  }

  private keep(argv: string[], env: Record<string, string> = {}): void {
    this.procs.push(spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...env }, stdio: "ignore" }));
  }

  /** The certificates, and the test DNS answering every name with `address`. */
  async start(address: string): Promise<void> {
    this.dnsPort = await freePort();
    this.challMgmt = await freePort();
    await makeCert(this.dir, "pebble-ca", "Pier test CA for pebble", { ca: true });
    const issuer = join(this.dir, "pebble-ca");
    await makeCert(this.dir, "pebble", "localhost", { sans: ["localhost", "127.0.0.1"], issuer });
    const off = ["-http01", "", "-https01", "", "-tlsalpn01", ""];
    const dns = ["-dns01", `127.0.0.1:${this.dnsPort}`, "-management", `127.0.0.1:${this.challMgmt}`];
    this.keep(["pebble-challtestsrv", ...dns, ...off, "-defaultIPv4", address, "-defaultIPv6", ""]);
  }

  /** The test DNS answers `host` with `addresses` from now on. */
  async addA(host: string, addresses: string[]): Promise<void> {
    const r = await fetch(`http://127.0.0.1:${this.challMgmt}/add-a`, {
      method: "POST",
      body: JSON.stringify({ host: `${host}.`, addresses }),
    });
    assert.equal(r.status, 200, `the test DNS took ${host}`);
  }

  /**
   * A pebble (its certificates valid `validitySeconds` when given) checking HTTP-01 on `edge.http` (and
   * TLS-ALPN on `edge.https`): its directory URL and the root its certificates chain to.
   */
  async pebble(
    edge: { http: number; https: number },
    validitySeconds?: number,
  ): Promise<{ directory: string; root: string }> {
    const [acmePort, acmeMgmt] = [await freePort(), await freePort()];
    const config = join(this.dir, `pebble-${acmePort}.json`);
    const pebble = {
      listenAddress: `127.0.0.1:${acmePort}`,
      managementListenAddress: `127.0.0.1:${acmeMgmt}`,
      certificate: join(this.dir, "pebble.pem"),
      privateKey: join(this.dir, "pebble.key"),
      httpPort: edge.http,
      tlsPort: edge.https,
      ocspResponderURL: "",
      externalAccountBindingRequired: false,
      ...(validitySeconds ? { certificateValidityPeriod: validitySeconds } : {}),
    };
    writeFileSync(config, JSON.stringify({ pebble }));
    this.keep(["pebble", "-config", config, "-dnsserver", `127.0.0.1:${this.dnsPort}`], {
      PEBBLE_VA_NOSLEEP: "1",
      PEBBLE_VA_ALWAYS_VALID: "0",
      PEBBLE_WFE_NONCEREJECT: "0",
    });
    const ca = readFileSync(this.caFile, "utf8");
    let root = "";
    for (let i = 0; i < 100 && !root; i++) {
      await sleep(200);
      root = await getTrusting(acmeMgmt, "/roots/0", ca);
    }
    assert.match(root, /BEGIN CERTIFICATE/, "pebble's root, from its management interface");
    return { directory: `https://localhost:${acmePort}/dir`, root };
  }

  stop(): void {
    for (const p of this.procs) p.kill("SIGTERM");
  }
}
