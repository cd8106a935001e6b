// The ReleaseRegistry port over the engine Pier builds on (ADR 0030): a release image tagged for the
// registry and pushed with the registry's credentials; what the nodes pull is its digest. Forgetting goes
// through the registry's own API (registry-api.ts): the engine has no verb for it.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import type { ReleaseRegistry } from "../../core/ports.js";
import { RegistryApi } from "./registry-api.js";

/** One event of the engine's push stream (the digest arrives in `aux`). */
interface PushEvent {
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { Tag?: string; Digest?: string };
}

/** `repo:tag` (no registry host): its repository and tag. */
export function splitImage(image: string): { repo: string; tag: string } {
  const colon = image.lastIndexOf(":");
  const slash = image.lastIndexOf("/");
  if (colon <= slash) return { repo: image, tag: "latest" };
  return { repo: image.slice(0, colon), tag: image.slice(colon + 1) };
}

export class DockerRegistryPush implements ReleaseRegistry {
  readonly address: string;
  private readonly docker: Docker;
  private readonly auth: { username: string; password: string };

  private readonly api: RegistryApi;
  /** Pushes under way: a forget waits for them, so it sees the tags they make. */
  private readonly pushing = new Set<Promise<unknown>>();
  /** A forget under way: pushes wait for it, so none of their manifests is deleted under them. */
  private forgetting: Promise<unknown> | null = null;

  constructor(opts: {
    docker: Docker;
    address: string;
    username: string;
    password: string;
    /** The CA of the registry's certificate (PEM) where it is not a public one. */
    caPem?: string | null;
  }) {
    this.docker = opts.docker;
    this.address = opts.address;
    this.auth = { username: opts.username, password: opts.password };
    this.api = new RegistryApi({ ...opts, caPem: opts.caPem ?? null });
  }

  async publish(image: string): Promise<string> {
    while (this.forgetting) await this.forgetting.catch(() => undefined);
    const push = this.push(image);
    this.pushing.add(push);
    try {
      return await push;
    } finally {
      this.pushing.delete(push);
    }
  }

  /**
   * Deletes the manifests of `repository`'s tags but those of `keep`; a manifest a kept tag resolves to
   * stays (identical builds share one digest). One at a time, pushes held meanwhile.
   */
  async forget(repository: string, keep: readonly string[]): Promise<string[]> {
    while (this.forgetting) await this.forgetting.catch(() => undefined);
    const run = (async () => {
      await Promise.allSettled([...this.pushing]);
      return this.forgetNow(repository, keep);
    })();
    this.forgetting = run;
    try {
      return await run;
    } finally {
      this.forgetting = null;
    }
  }

  private async forgetNow(repository: string, keep: readonly string[]): Promise<string[]> {
    const kept = new Set(keep.map(splitImage).flatMap((i) => (i.repo === repository ? [i.tag] : [])));
    const tags = await this.api.tags(repository);
    const keptDigests = new Set<string>();
    const others = new Set<string>();
    for (const tag of tags) {
      const digest = await this.api.digest(repository, tag);
      if (digest) (kept.has(tag) ? keptDigests : others).add(digest);
    }
    const forgotten: string[] = [];
    for (const digest of others) {
      if (keptDigests.has(digest)) continue;
      if (await this.api.deleteManifest(repository, digest))
        forgotten.push(`${this.address}/${repository}@${digest}`);
    }
    return forgotten.sort();
  }

  private async push(image: string): Promise<string> {
    const { repo, tag } = splitImage(image);
    const target = `${this.address}/${repo}`;
    try {
      await this.docker.getImage(image).tag({ repo: target, tag });
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404)
        throw new PierError(
          "NOT_FOUND",
          `There is no image ${image} to push to the registry ${this.address}.`,
        );
      throw e;
    }
    const stream = await this.docker
      .getImage(`${target}:${tag}`)
      .push({}, undefined, { ...this.auth, serveraddress: this.address });
    try {
      return `${target}@${await this.digestOf(stream)}`;
    } catch (e) {
      throw await this.diagnosed(e as PierError, repo);
    }
  }

  /**
   * A failed push, with what Pier finds asking the registry itself with the same credentials: the engine
   * says only what it dialled ("dial tcp ...: connection refused"), not that it was the token service, or
   * that the password is refused. When Pier's own request goes through, the engine's side is at fault (its
   * trust of the registry's CA): the error stays as it was.
   */
  private async diagnosed(failed: PierError, repo: string): Promise<PierError> {
    try {
      await this.api.tags(repo);
      return failed;
    } catch (e) {
      if (!(e instanceof PierError)) return failed;
      const found = e.message.replace(/^The registry \S+ could not [^:]+: /, "");
      return new PierError("ENGINE_ERROR", `${failed.message} (asked by Pier: ${found})`, e.hint);
    }
  }

  /** Follows the push to its end: the digest it reports, or the engine's reason for failing. */
  private digestOf(stream: NodeJS.ReadableStream): Promise<string> {
    return new Promise((resolve, reject) => {
      let digest: string | null = null;
      let failure: string | null = null;
      this.docker.modem.followProgress(
        stream,
        (err: Error | null) => {
          const why = failure ?? err?.message ?? (digest ? null : "the engine reported no digest");
          if (why === null && digest) return resolve(digest);
          reject(
            new PierError(
              "ENGINE_ERROR",
              `The release image could not be pushed to the registry ${this.address}: ${why}`,
              "Check that the engine trusts the registry's CA (/etc/docker/certs.d) and that Pier's registry password is the registry's.",
            ),
          );
        },
        (ev: PushEvent) => {
          if (ev.error) failure = ev.errorDetail?.message ?? ev.error;
          if (ev.aux?.Digest) digest = ev.aux.Digest;
        },
      );
    });
  }
}
