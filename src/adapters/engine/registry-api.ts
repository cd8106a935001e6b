// The registry's own HTTP API (distribution's /v2/), for what the engine cannot do: list a repository's
// tags, resolve a tag to its manifest's digest, delete a manifest by digest (ADR 0030). Over HTTPS with the
// registry's CA when it is not a public one; basic auth, or (distribution's `auth: token:`) a bearer token per
// scope from the token service a registry's challenge names, kept until it expires. Also the one place that
// builds a request to a registry: `probe` is Pier's own registry's liveness check.
import { request } from "node:https";
import { isIP } from "node:net";
import { rootCertificates } from "node:tls";
import { type Clock, systemClock } from "../../core/clock.js";
import { PierError } from "../../core/errors.js";

/** The manifest types a release image is pushed as: asked for, so the digest is the pushed one. */
const MANIFEST_TYPES = [
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
].join(", ");

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface RegistryApiOptions {
  /** host:port */
  address: string;
  username: string;
  password: string;
  /** The CA that signed the registry's certificate (PEM); none: the system's. */
  caPem?: string | null;
  /** When a kept token has expired (the wall clock unless a test moves it). */
  clock?: Pick<Clock, "now">;
}

/** What a bearer challenge names (distribution's `auth: token:`): where tokens come from, for which service. */
interface TokenService {
  realm: URL;
  service: string | null;
}

/** The parameters of a `WWW-Authenticate: Bearer k="v",...` challenge. */
function challengeParams(challenge: string): Record<string, string> {
  return Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? "", m[2] ?? ""]));
}

/** How to reach `address` (host:port) over TLS: host, port, CAs and the name its certificate is checked for. */
function endpoint(address: string, caPem: string | string[] | null | undefined) {
  const url = new URL(`https://${address}`);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return {
    host,
    port: url.port || 443,
    ...(caPem ? { ca: caPem } : {}),
    servername: isIP(host) ? undefined : host,
  };
}

/** A token is not reused in its last seconds (a request may take some). */
const TOKEN_MARGIN_MS = 10_000;

export class RegistryApi {
  /** The token service a bearer challenge named; null while the registry asked for none (basic auth). */
  private tokenService: TokenService | null = null;
  /** Tokens by the scope they were asked for (`repository:NAME:pull`), with when they stop being used. */
  private readonly tokens = new Map<string, { token: string; until: number }>();

  constructor(private readonly opts: RegistryApiOptions) {}

  /**
   * The status of an unauthenticated GET /v2/ (401: a registry asking for credentials), or null when nothing
   * answers over TLS with this CA within `timeoutMs`.
   */
  static probe(address: string, caPem: string | null, timeoutMs: number): Promise<number | null> {
    return new Promise((resolve) => {
      const req = request({ ...endpoint(address, caPem), path: "/v2/" }, (res) => {
        res.resume();
        resolve(res.statusCode ?? null);
      });
      req.setTimeout(timeoutMs, () => req.destroy());
      req.on("error", () => resolve(null));
      req.end();
    });
  }

  /** A repository's tags; none when the repository is unknown. */
  async tags(repo: string): Promise<string[]> {
    const what = `list the tags of ${repo}`;
    const a = await this.call("GET", `/v2/${repo}/tags/list`, what, [404], `repository:${repo}:pull`);
    if (a.status === 404) return [];
    const body = JSON.parse(a.body) as { tags?: string[] | null };
    return body.tags ?? [];
  }

  /** The digest a tag resolves to; null when the tag is unknown. */
  async digest(repo: string, tag: string): Promise<string | null> {
    const what = `resolve ${repo}:${tag}`;
    const a = await this.call("HEAD", `/v2/${repo}/manifests/${tag}`, what, [404], `repository:${repo}:pull`);
    if (a.status === 404) return null;
    const d = a.headers["docker-content-digest"];
    if (typeof d !== "string" || !d.startsWith("sha256:"))
      throw this.refused(`resolve ${repo}:${tag}`, "it named no Docker-Content-Digest");
    return d;
  }

  /** Deletes a manifest (its tags go with it); false when it was gone. */
  async deleteManifest(repo: string, digest: string): Promise<boolean> {
    const what = `delete ${repo}@${digest}`;
    const path = `/v2/${repo}/manifests/${digest}`;
    const a = await this.call("DELETE", path, what, [404, 405], `repository:${repo}:delete`);
    if (a.status === 405)
      throw this.refused(what, "it does not allow deletes (storage: delete: enabled: true in its config)");
    return a.status !== 404;
  }

  /**
   * One request, authenticated: basic auth until the registry names a token service, then a bearer token
   * for `scope` (the access the request needs; the scope a challenge names when it names one), kept for
   * the next requests of that scope until it expires. A status outside 2xx and `tolerated`: ENGINE_ERROR
   * saying what failed.
   */
  private async call(
    method: string,
    path: string,
    what: string,
    tolerated: number[],
    scope: string,
  ): Promise<Answer> {
    let a = await this.sendOrRefuse(method, path, await this.authorization(scope, scope, what), what);
    const challenge = a.headers["www-authenticate"];
    if (a.status === 401 && typeof challenge === "string" && /^bearer /i.test(challenge)) {
      // A first challenge, or a kept token the registry no longer takes (expired): a new one, once.
      this.learnTokenService(challenge, what);
      this.tokens.delete(scope);
      const asked = challengeParams(challenge).scope || scope;
      a = await this.sendOrRefuse(method, path, await this.authorization(scope, asked, what), what);
      const again = a.headers["www-authenticate"];
      if (a.status === 401 && typeof again === "string" && /insufficient_scope/.test(again))
        throw this.notGranted(what, asked);
    }
    if ((a.status >= 200 && a.status < 300) || tolerated.includes(a.status)) return a;
    throw this.refused(what, `HTTP ${a.status}${errorText(a.body)}`);
  }

  /** The token service gave a token without the access `asked` (`repository:NAME:ACTIONS`). */
  private notGranted(what: string, asked: string): PierError {
    const ts = this.tokenService;
    const resource = asked.slice(0, asked.lastIndexOf(":"));
    const actions = asked.slice(asked.lastIndexOf(":") + 1);
    return this.refused(
      what,
      `its token service ${ts?.realm.origin}${ts?.realm.pathname} gave user ${this.opts.username} a token without "${asked}": the registry refused (HTTP 401, insufficient_scope)`,
      `Grant the registry account ${this.opts.username} the ${actions} action on ${resource} in the token service (Pier's forget needs pull and delete on its repositories, pier-app/*).`,
    );
  }

  private learnTokenService(challenge: string, what: string): void {
    const params = challengeParams(challenge);
    let realm: URL | null = null;
    try {
      realm = params.realm ? new URL(params.realm) : null;
    } catch {
      realm = null;
    }
    if (realm?.protocol !== "https:")
      throw this.refused(
        what,
        `its token service (${params.realm ?? "none named"}) is not an https:// address`,
      );
    this.tokenService = { realm, service: params.service ?? null };
  }

  /** Basic auth, or a bearer token for `scope`: the one kept, or a new one asked for `asked`. */
  private async authorization(scope: string, asked: string, what: string): Promise<string> {
    if (!this.tokenService) {
      const { username, password } = this.opts;
      return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
    }
    const kept = this.tokens.get(scope);
    if (kept && kept.until > this.now()) return `Bearer ${kept.token}`;
    const token = await this.token(this.tokenService, scope, asked, what);
    return `Bearer ${token}`;
  }

  /**
   * A token for the access `asked` (scopes, space-separated) from the token service, asked with the
   * registry's credentials; kept under `scope` while it is valid.
   */
  private async token(ts: TokenService, scope: string, asked: string, what: string): Promise<string> {
    const url = new URL(ts.realm);
    if (ts.service) url.searchParams.set("service", ts.service);
    for (const s of asked.split(" ").filter(Boolean)) url.searchParams.append("scope", s);
    const basic = `Basic ${Buffer.from(`${this.opts.username}:${this.opts.password}`).toString("base64")}`;
    const from = `its token service ${ts.realm.origin}${ts.realm.pathname}`;
    let a: Answer;
    // The token service may have a public certificate, or one from the registry's CA: both trusted.
    const ca = this.opts.caPem ? [...rootCertificates, this.opts.caPem] : null;
    try {
      a = await this.send("GET", url.pathname + url.search, basic, url.host, ca);
    } catch (e) {
      throw this.refused(what, `${from} did not answer: ${(e as Error).message}`);
    }
    if (a.status === 401 || a.status === 403)
      throw this.refused(what, `${from} refused user ${this.opts.username} (HTTP ${a.status}, unauthorized)`);
    let body: { token?: string; access_token?: string; expires_in?: number } = {};
    try {
      body = a.status === 200 ? (JSON.parse(a.body) as typeof body) : {};
    } catch {
      body = {};
    }
    const token = body.token ?? body.access_token;
    if (!token) throw this.refused(what, `${from} gave no token (HTTP ${a.status})`);
    // distribution's default lifetime when none is said is 60 s.
    const lifetime = Math.max(Number(body.expires_in) || 60, 60) * 1000;
    this.tokens.set(scope, { token, until: this.now() + lifetime - TOKEN_MARGIN_MS });
    return token;
  }

  private now(): number {
    return (this.opts.clock ?? systemClock).now();
  }

  private async sendOrRefuse(method: string, path: string, authorization: string, what: string) {
    try {
      return await this.send(method, path, authorization);
    } catch (e) {
      throw this.refused(what, `no answer to ${method} ${path}: ${(e as Error).message}`);
    }
  }

  private send(
    method: string,
    path: string,
    authorization: string,
    at = this.opts.address,
    ca: string | string[] | null | undefined = this.opts.caPem,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          ...endpoint(at, ca),
          method,
          path,
          headers: { authorization, accept: MANIFEST_TYPES },
        },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            if (body.length < 1_000_000) body += c;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error("no answer within 30 s")));
      req.on("error", reject);
      req.end();
    });
  }

  private refused(what: string, why: string, hint?: string): PierError {
    return new PierError(
      "ENGINE_ERROR",
      `The registry ${this.opts.address} could not ${what}: ${why}`,
      hint ?? "Check that Pier trusts the registry's CA and that its password is the registry's.",
    );
  }
}

/** The first error a registry's JSON body names, as ` (CODE: message)`. */
function errorText(body: string): string {
  try {
    const e = (JSON.parse(body) as { errors?: { code?: string; message?: string }[] }).errors?.[0];
    return e ? ` (${e.code ?? ""}: ${e.message ?? ""})` : "";
  } catch {
    return "";
  }
}
