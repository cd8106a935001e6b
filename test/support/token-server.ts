// A registry token server for tests (distribution's `auth: token:`, ADR 0030): HTTPS, basic auth against
// its accounts, and a JWT per request that Debian's docker-registry (distribution 2.8) accepts: RS256,
// signed by a key whose self-signed certificate is the registry's `rootcertbundle` and rides in the
// header's `x5c`; issuer and audience (the registry's service) as configured; `access` what the account
// may do of what was asked. It can be stopped and started again on the same port (a token service down).
import { execFile, spawn } from "node:child_process";
import { randomUUID, sign } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { RegistryApi } from "../../src/adapters/engine/registry-api.js";

const pexec = promisify(execFile);

/** What a token service knows of an account: its password and the actions it grants on any repository. */
export interface TokenAccount {
  password: string;
  actions: string[];
}

export interface TokenServerOptions {
  /** The address it listens on (an IP the registry's clients reach). */
  host: string;
  issuer: string;
  /** The registry's `service`: the tokens' audience. */
  service: string;
  accounts: Record<string, TokenAccount>;
  /** Its HTTPS certificate and key (PEM), for `host`. */
  tls: { certPem: string; keyPem: string };
  /** The key that signs tokens and its self-signed certificate (PEM): the registry's rootcertbundle. */
  signing: { certPem: string; keyPem: string };
  /** Seconds a token lives (its `expires_in`); 300 by default. */
  lifetime?: number;
}

/** One access claim: a resource and the actions granted on it. */
interface Access {
  type: string;
  name: string;
  actions: string[];
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/**
 * `scope` parameters (`repository:NAME:pull,push`, several per parameter separated by spaces, or the
 * parameter repeated) as access items; what is not a repository scope is ignored.
 */
export function parseScopes(params: string[]): Access[] {
  const out: Access[] = [];
  for (const s of params.flatMap((p) => p.split(" ")).filter(Boolean)) {
    const first = s.indexOf(":");
    const last = s.lastIndexOf(":");
    if (first < 0 || last <= first) continue;
    out.push({
      type: s.slice(0, first),
      name: s.slice(first + 1, last),
      actions: s.slice(last + 1).split(","),
    });
  }
  return out;
}

export class TokenServer {
  private server: Server | null = null;
  private port = 0;
  /** Every token request answered, in order: the account (null: none or refused) and the scopes asked. */
  readonly requests: { account: string | null; scopes: string[]; status: number }[] = [];
  /**
   * How many of the next tokens are stale: expired (`exp` two minutes ago, past the registry's leeway) while
   * `expires_in` still promises the full lifetime, as a token service whose clock is behind gives them.
   */
  staleTokens = 0;

  constructor(private readonly opts: TokenServerOptions) {}

  /** Where tokens are asked for (the registry's `realm`); known once started. */
  get realm(): string {
    return `https://${this.opts.host}:${this.port}/token`;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer({ cert: this.opts.tls.certPem, key: this.opts.tls.keyPem }, (req, res) => {
      const url = new URL(req.url ?? "/", "https://token.test");
      const answer = (status: number, body: object) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (url.pathname !== "/token") return answer(404, { details: "not found" });
      const scopes = url.searchParams.getAll("scope");
      const account = this.authenticate(req.headers.authorization);
      this.requests.push({ account, scopes, status: account ? 200 : 401 });
      if (!account) return answer(401, { details: "incorrect username or password" });
      if (url.searchParams.get("service") !== this.opts.service)
        return answer(400, { details: "unknown service" });
      const token = this.token(account, parseScopes(scopes));
      const lifetime = this.opts.lifetime ?? 300;
      answer(200, { token, access_token: token, expires_in: lifetime, issued_at: new Date().toISOString() });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, this.opts.host, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops answering (connections refused) until started again, on the same port. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The account a basic `authorization` header names with its password; null otherwise. */
  private authenticate(header: string | undefined): string | null {
    const m = /^basic (.+)$/i.exec(header ?? "");
    if (!m?.[1]) return null;
    const plain = Buffer.from(m[1], "base64").toString("utf8");
    const colon = plain.indexOf(":");
    const user = plain.slice(0, colon);
    const account = this.opts.accounts[user];
    return colon > 0 && account && account.password === plain.slice(colon + 1) ? user : null;
  }

  /** A signed JWT granting `account` what it may of `asked`. */
  private token(account: string, asked: Access[]): string {
    const allowed = this.opts.accounts[account]?.actions ?? [];
    const access = asked
      .filter((a) => a.type === "repository")
      .map((a) => ({ ...a, actions: a.actions.filter((x) => allowed.includes(x) || allowed.includes("*")) }))
      .filter((a) => a.actions.length > 0);
    let now = Math.floor(Date.now() / 1000);
    if (this.staleTokens > 0) {
      this.staleTokens--;
      now -= (this.opts.lifetime ?? 300) + 120;
    }
    const header = { typ: "JWT", alg: "RS256", x5c: [x5c(this.opts.signing.certPem)] };
    const claims = {
      iss: this.opts.issuer,
      sub: account,
      aud: this.opts.service,
      exp: now + (this.opts.lifetime ?? 300),
      nbf: now - 1,
      iat: now,
      jti: randomUUID(),
      access,
    };
    const signed = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const signature = sign("sha256", Buffer.from(signed), this.opts.signing.keyPem);
    return `${signed}.${b64url(signature)}`;
  }
}

/** A PEM certificate's DER, base64 (not url-safe: what `x5c` holds). */
const x5c = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");

/** What a token-auth registry's test bed needs, made with openssl in `dir`. */
export interface TokenPki {
  /** The CA of the registry's and the token server's HTTPS certificates (PEM). */
  caPem: string;
  /** One HTTPS certificate for `ip` (the registry and the token server share it, on two ports). */
  tls: { certPem: string; keyPem: string; certFile: string; keyFile: string };
  /** The token signing key and its self-signed certificate; `certFile` is the rootcertbundle. */
  signing: { certPem: string; keyPem: string; certFile: string };
}

export async function makeTokenPki(dir: string, ip: string): Promise<TokenPki> {
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => pexec("openssl", args);
  const selfSigned = (name: string, cn: string) =>
    ssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${cn}`,
      "-keyout",
      f(`${name}.key`),
      "-out",
      f(`${name}.crt`),
    );
  await selfSigned("ca", "Pier token-auth test CA");
  await selfSigned("signing", "Pier test token signer");
  await ssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    `/CN=${ip}`,
    "-keyout",
    f("tls.key"),
    "-out",
    f("tls.csr"),
  );
  writeFileSync(f("tls.ext"), `subjectAltName=IP:${ip}\nextendedKeyUsage=serverAuth\n`);
  await ssl(
    "x509",
    "-req",
    "-in",
    f("tls.csr"),
    "-CA",
    f("ca.crt"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    f("tls.ext"),
    "-out",
    f("tls.crt"),
  );
  const read = (n: string) => readFileSync(f(n), "utf8");
  return {
    caPem: read("ca.crt"),
    tls: { certPem: read("tls.crt"), keyPem: read("tls.key"), certFile: f("tls.crt"), keyFile: f("tls.key") },
    signing: { certPem: read("signing.crt"), keyPem: read("signing.key"), certFile: f("signing.crt") },
  };
}

/** A docker-registry with TLS and `auth: token:`, its token server, in a directory of their own. */
export interface TokenRegistry {
  /** host:port */
  address: string;
  /** The CA of its (and its token server's) certificate. */
  caPem: string;
  tokens: TokenServer;
  /** The registry stopped (its process), the token server stopped, the directory removed. */
  stop(): Promise<void>;
}

const ISSUER = "pier-test-token-service";
const SERVICE = "pier-test-registry";

/**
 * Debian's `docker-registry` (distribution 2.8) on `host:port` with deletes enabled, TLS and token auth,
 * its token server on `host` (another port) knowing `accounts`; answering when this resolves.
 */
export async function startTokenRegistry(opts: {
  host: string;
  port: number;
  accounts: Record<string, TokenAccount>;
}): Promise<TokenRegistry> {
  const address = `${opts.host}:${opts.port}`;
  const dir = mkdtempSync(join(tmpdir(), "pier-token-registry-"));
  const pki = await makeTokenPki(dir, opts.host);
  const tokens = new TokenServer({
    host: opts.host,
    issuer: ISSUER,
    service: SERVICE,
    accounts: opts.accounts,
    tls: pki.tls,
    signing: pki.signing,
  });
  await tokens.start();
  mkdirSync(join(dir, "data"));
  const config = [
    "version: 0.1",
    "log:",
    "  level: warn",
    "storage:",
    "  filesystem:",
    `    rootdirectory: ${join(dir, "data")}`,
    "  delete:",
    "    enabled: true",
    "http:",
    `  addr: ${address}`,
    "  tls:",
    `    certificate: ${pki.tls.certFile}`,
    `    key: ${pki.tls.keyFile}`,
    "auth:",
    "  token:",
    `    realm: ${tokens.realm}`,
    `    service: ${SERVICE}`,
    `    issuer: ${ISSUER}`,
    `    rootcertbundle: ${pki.signing.certFile}`,
    "",
  ].join("\n");
  writeFileSync(join(dir, "config.yml"), config);
  const log = openSync(join(dir, "registry.log"), "a");
  const child = spawn("docker-registry", ["serve", join(dir, "config.yml")], { stdio: ["ignore", log, log] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill();
    await exited;
    await tokens.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if ((await RegistryApi.probe(address, pki.caPem, 1000)) === 401) break;
    if (i >= 100 || child.exitCode !== null) {
      const tail = readFileSync(join(dir, "registry.log"), "utf8").trim().split("\n").slice(-5).join(" | ");
      await stop();
      throw new Error(`the token-auth registry did not answer on ${address}: ${tail}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { address, caPem: pki.caPem, tokens, stop };
}
