// The registry's own HTTP API (distribution's /v2/), for what the engine cannot do: list a repository's
// tags, resolve a tag to its manifest's digest, delete a manifest by digest (ADR 0030). Over HTTPS with the
// registry's CA when it is not a public one; basic auth, or the bearer token a registry's challenge names.
import { request } from "node:https";
import { isIP } from "node:net";
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
}

export class RegistryApi {
  private bearer: string | null = null;

  constructor(private readonly opts: RegistryApiOptions) {}

  /** A repository's tags; none when the repository is unknown. */
  async tags(repo: string): Promise<string[]> {
    const a = await this.call("GET", `/v2/${repo}/tags/list`, `list the tags of ${repo}`, [404]);
    if (a.status === 404) return [];
    const body = JSON.parse(a.body) as { tags?: string[] | null };
    return body.tags ?? [];
  }

  /** The digest a tag resolves to; null when the tag is unknown. */
  async digest(repo: string, tag: string): Promise<string | null> {
    const a = await this.call("HEAD", `/v2/${repo}/manifests/${tag}`, `resolve ${repo}:${tag}`, [404]);
    if (a.status === 404) return null;
    const d = a.headers["docker-content-digest"];
    if (typeof d !== "string" || !d.startsWith("sha256:"))
      throw this.refused(`resolve ${repo}:${tag}`, "it named no Docker-Content-Digest");
    return d;
  }

  /** Deletes a manifest (its tags go with it); false when it was gone. */
  async deleteManifest(repo: string, digest: string): Promise<boolean> {
    const what = `delete ${repo}@${digest}`;
    const a = await this.call("DELETE", `/v2/${repo}/manifests/${digest}`, what, [404, 405]);
    if (a.status === 405)
      throw this.refused(what, "it does not allow deletes (storage: delete: enabled: true in its config)");
    return a.status !== 404;
  }

  /** One request, authenticated; a status outside 2xx and `tolerated`: ENGINE_ERROR saying what failed. */
  private async call(method: string, path: string, what: string, tolerated: number[]): Promise<Answer> {
    let a = await this.send(method, path, this.authorization());
    const challenge = a.headers["www-authenticate"];
    if (a.status === 401 && typeof challenge === "string" && /^bearer /i.test(challenge)) {
      this.bearer = await this.token(challenge, what);
      a = await this.send(method, path, this.authorization());
    }
    if ((a.status >= 200 && a.status < 300) || tolerated.includes(a.status)) return a;
    throw this.refused(what, `HTTP ${a.status}${errorText(a.body)}`);
  }

  private authorization(): string {
    if (this.bearer) return `Bearer ${this.bearer}`;
    const { username, password } = this.opts;
    return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  }

  /** A token from the realm a bearer challenge names, asked with the registry's credentials. */
  private async token(challenge: string, what: string): Promise<string> {
    const params = Object.fromEntries(
      [...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? "", m[2] ?? ""]),
    );
    const realm = params.realm ? new URL(params.realm) : null;
    if (realm?.protocol !== "https:")
      throw this.refused(what, "its token service is not an https:// address");
    for (const k of ["service", "scope"]) if (params[k]) realm.searchParams.set(k, params[k]);
    const basic = `Basic ${Buffer.from(`${this.opts.username}:${this.opts.password}`).toString("base64")}`;
    const a = await this.send("GET", realm.pathname + realm.search, basic, realm.host);
    const body = a.status === 200 ? (JSON.parse(a.body) as { token?: string; access_token?: string }) : {};
    const token = body.token ?? body.access_token;
    if (!token) throw this.refused(what, `its token service answered HTTP ${a.status}`);
    return token;
  }

  private send(method: string, path: string, authorization: string, at = this.opts.address): Promise<Answer> {
    const url = new URL(`https://${at}`);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          method,
          host: url.hostname.replace(/^\[|\]$/g, ""),
          port: url.port || 443,
          path,
          headers: { authorization, accept: MANIFEST_TYPES },
          ...(this.opts.caPem ? { ca: this.opts.caPem } : {}),
          servername: isIP(url.hostname) ? undefined : url.hostname,
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
      req.on("error", (e) => reject(this.refused(`reach it (${method} ${path})`, e.message)));
      req.end();
    });
  }

  private refused(what: string, why: string): PierError {
    return new PierError(
      "ENGINE_ERROR",
      `The registry ${this.opts.address} could not ${what}: ${why}`,
      "Check that Pier trusts the registry's CA and that its password is the registry's.",
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
