// The one fake of the ReleaseRegistry port (ADR 0030): a registry and the engine it pushes from, in memory,
// passing test/conformance/release-registry.ts as the Docker adapter does on the lab.
import { createHash } from "node:crypto";
import { PierError } from "../../src/core/errors.js";
import type { ReleaseRegistry } from "../../src/core/ports.js";

/** What a fake registry and its wrong-password twin share. */
interface FakeRegistryState {
  /** The engine's local images: `repo:tag` -> its content (identical content: one digest). */
  local: Map<string, string>;
  /** repository -> tag -> manifest digest. */
  tags: Map<string, Map<string, string>>;
  /** Every forget asked, in order. */
  forgets: { repository: string; keep: string[] }[];
}

const splitTag = (image: string) => {
  const colon = image.lastIndexOf(":");
  return { repo: image.slice(0, colon), tag: image.slice(colon + 1) };
};

export class FakeReleaseRegistry implements ReleaseRegistry {
  readonly address = "registry.test:5000";
  private readonly state: FakeRegistryState;

  /** `refuses`: the reason every call fails with (a wrong password: "unauthorized"). */
  constructor(
    state?: FakeRegistryState,
    private readonly refuses: string | null = null,
  ) {
    this.state = state ?? { local: new Map(), tags: new Map(), forgets: [] };
  }

  /** The same registry, refusing every call with `reason`. */
  refusing(reason = "unauthorized: authentication required"): FakeReleaseRegistry {
    return new FakeReleaseRegistry(this.state, reason);
  }

  /** An image the engine has locally (`repo:tag`), with its content. */
  addLocal(image: string, content: string): void {
    this.state.local.set(image, content);
  }

  get forgets(): readonly { repository: string; keep: string[] }[] {
    return this.state.forgets;
  }

  /** The digests a repository's tags resolve to. */
  digests(repository: string): Set<string> {
    return new Set(this.state.tags.get(repository)?.values() ?? []);
  }

  /** Whether a reference by digest pulls. */
  pullable(ref: string): boolean {
    const at = ref.indexOf("@");
    const repo = ref.slice(this.address.length + 1, at);
    return this.digests(repo).has(ref.slice(at + 1));
  }

  async publish(image: string): Promise<string> {
    const content = this.state.local.get(image);
    if (content === undefined)
      throw new PierError("NOT_FOUND", `There is no image ${image} to push to the registry ${this.address}.`);
    if (this.refuses)
      throw new PierError(
        "ENGINE_ERROR",
        `The release image could not be pushed to the registry ${this.address}: ${this.refuses}`,
      );
    const { repo, tag } = splitTag(image);
    const digest = `sha256:${createHash("sha256").update(content).digest("hex")}`;
    const tags = this.state.tags.get(repo) ?? new Map<string, string>();
    tags.set(tag, digest);
    this.state.tags.set(repo, tags);
    return `${this.address}/${repo}@${digest}`;
  }

  async forget(repository: string, keep: readonly string[]): Promise<string[]> {
    if (this.refuses)
      throw new PierError(
        "ENGINE_ERROR",
        `The registry ${this.address} could not list the tags of ${repository}: ${this.refuses}`,
        "Check that Pier trusts the registry's CA and that its password is the registry's.",
      );
    this.state.forgets.push({ repository, keep: [...keep] });
    const tags = this.state.tags.get(repository);
    if (!tags) return [];
    const kept = new Set(keep.map(splitTag).flatMap((i) => (i.repo === repository ? [i.tag] : [])));
    const keptDigests = new Set([...tags].filter(([t]) => kept.has(t)).map(([, d]) => d));
    const gone = new Set([...tags.values()].filter((d) => !keptDigests.has(d)));
    for (const [t, d] of [...tags]) if (gone.has(d)) tags.delete(t);
    return [...gone].map((d) => `${this.address}/${repository}@${d}`).sort();
  }
}
