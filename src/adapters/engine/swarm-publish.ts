// Release images as a swarm's nodes pull them (ADR 0030): by digest, published to the registry first when
// the manager has a local tag; each push once per repository and image, remembered until a forget.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import type { ReleaseRegistry } from "../../core/ports.js";
import { isNotFound } from "./docker-common.js";
import { splitImage } from "./registry-push.js";
import type { NodeSweep } from "./swarm-sweep.js";

export class PublishedImages {
  /**
   * Repository and local image id -> its reference by digest in the registry (a push of the same image
   * changes nothing): the push itself, so that instances started together push it once.
   */
  private readonly published = new Map<string, Promise<string>>();

  constructor(
    private readonly docker: Docker,
    /** Null: images are used as named (each node must have them). */
    private readonly registry: ReleaseRegistry | null,
    /** Told each image published. */
    private readonly sweep?: Pick<NodeSweep, "published">,
  ) {}

  /** The image as nodes pull it: by digest, published to the registry first when it is a local tag. */
  async imageRef(image: string): Promise<{ ref: string; labels: Record<string, string> }> {
    let local: { Id: string; Config?: { Labels?: Record<string, string> } } | null = null;
    try {
      local = await this.docker.getImage(image).inspect();
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const labels = local?.Config?.Labels ?? {};
    if (image.includes("@sha256:") || !this.registry) return { ref: image, labels };
    if (!local) throw new PierError("ENGINE_ERROR", `The image ${image} is not on the swarm's manager.`);
    // Per repository: two apps' builds can be the same image (same files, cached layers), and an app must
    // pull from its own repository, which goes with the app.
    const key = `${splitImage(image).repo} ${local.Id}`;
    let ref = this.published.get(key);
    if (!ref) {
      ref = this.registry.publish(image);
      this.published.set(key, ref);
      ref.then((r) => this.sweep?.published(r)).catch(() => undefined);
      // A failed push is tried again by the next start.
      ref.catch(() => this.published.delete(key));
    }
    return { ref: await ref, labels };
  }

  /** What was pushed to the repository is forgotten: an image pushed again after a forget is pushed. */
  forget(repository: string): void {
    for (const key of [...this.published.keys()])
      if (key.startsWith(`${repository} `)) this.published.delete(key);
  }
}
