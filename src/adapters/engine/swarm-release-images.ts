// Release images a swarm forgets (ADR 0030): the registry's manifests (ReleaseRegistry.forget), then the
// copies the engines keep: the manager's tags that pushes leave, and each node's images pulled by digest.
import type Docker from "dockerode";
import { releaseRepository } from "../../core/model.js";
import type { ReleaseRegistry } from "../../core/ports.js";
import type { SwarmNodeRef } from "./swarm-services.js";
import type { NodeSweep } from "./swarm-sweep.js";

export interface EngineCopies {
  /** The manager's engine. */
  docker: Docker;
  /** The swarm's nodes by id. */
  nodes: () => Promise<Map<string, { name: string; ready?: boolean }>>;
  /** A node's own engine where Pier reaches it. */
  nodeEngine: (node: SwarmNodeRef) => Docker | null;
  /** What the driver remembers of a repository's pushes, dropped before the forget. */
  forgetPushes: (repository: string) => void;
  /** The swarm's job that removes images on every node (swarm-sweep.ts); none: through the engines only. */
  sweep?: Pick<NodeSweep, "sweep">;
}

/** `registry`, whose forget also removes the engines' copies of an app's forgotten images. */
export function forgettingEverywhere(registry: ReleaseRegistry, o: EngineCopies): ReleaseRegistry {
  return {
    address: registry.address,
    publish: (image) => registry.publish(image),
    forget: async (repository, keep) => {
      o.forgetPushes(repository);
      const forgotten = await registry.forget(repository, keep);
      const apps = releaseRepository("");
      if (!repository.startsWith(apps)) return forgotten;
      const appId = repository.slice(apps.length);
      await untagPushed(o.docker, registry.address, appId, keep).catch(() => undefined);
      if (forgotten.length > 0) await removeFromNodes(o, appId, forgotten);
      return forgotten;
    },
  };
}

/**
 * The manager's `address/repo:tag` tags that each push leaves (the node guard reads its digest from one),
 * but the kept images': kept, one would hold its image on the manager's disk after its release is pruned.
 */
async function untagPushed(docker: Docker, address: string, appId: string, keep: readonly string[]) {
  const kept = new Set(keep.map((k) => `${address}/${k}`));
  const prefix = `${address}/${releaseRepository(appId)}:`;
  // By reference: an image the classic builder made has no labels.
  const images = await docker.listImages({
    filters: { reference: [`${address}/${releaseRepository(appId)}`] },
  });
  for (const tag of images.flatMap((i) => i.RepoTags ?? []))
    if (tag.startsWith(prefix) && !kept.has(tag))
      await docker
        .getImage(tag)
        .remove()
        .catch(() => undefined);
}

/**
 * The forgotten images (`<address>/<repo>@sha256:...`, as the nodes pulled them) on every node, where no
 * container uses them (the engine refuses to remove an image in use: that node keeps it). A kept release's
 * image, or a new deploy's, is another digest: never removed, so a node that has just pulled one for a new
 * task never loses it. By reference, not label: an image the classic builder made has no labels. When Pier
 * reaches every node's engine (the manager, PIER_SWARM_NODE_ENGINES) and each is ready, through those; else
 * through the sweep, a job the swarm runs on each node, which owes the images to a node that is down and
 * asks for them again once it is back.
 */
async function removeFromNodes(o: EngineCopies, appId: string, images: readonly string[]): Promise<void> {
  const nodes = await o.nodes().catch(() => new Map<string, { name: string; ready?: boolean }>());
  const engines = [...nodes].map(([id, n]) => ({
    ...n,
    engine: o.nodeEngine({ id, name: n.name, address: "" }),
  }));
  if (o.sweep && engines.some((n) => n.ready === false || !n.engine)) {
    await o.sweep.sweep(appId, images).catch(() => undefined);
    return;
  }
  for (const n of engines)
    for (const ref of images)
      await n.engine
        ?.getImage(ref)
        .remove()
        .catch(() => undefined);
}
