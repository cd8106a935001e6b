// Release images a swarm forgets (ADR 0030): the registry's manifests (ReleaseRegistry.forget), then the
// copies the engines keep: the manager's tags that pushes leave, and each node's images pulled by digest.
import type Docker from "dockerode";
import { LABEL } from "../../core/labels.js";
import { releaseRepository } from "../../core/model.js";
import type { ReleaseRegistry } from "../../core/ports.js";
import type { SwarmNodeRef } from "./swarm-services.js";

export interface EngineCopies {
  /** The manager's engine. */
  docker: Docker;
  /** The swarm's nodes by id. */
  nodes: () => Promise<Map<string, { name: string; ready?: boolean }>>;
  /** A node's own engine where Pier reaches it. */
  nodeEngine: (node: SwarmNodeRef) => Docker | null;
  /** What the driver remembers of a repository's pushes, dropped before the forget. */
  forgetPushes: (repository: string) => void;
  /** The swarm's job that prunes images on every node (swarm-sweep.ts); none: through the engines only. */
  sweep?: (appId: string, filters: readonly NodePruneFilters[]) => Promise<unknown>;
}

/** The filters of `docker image prune` (POST /images/prune) on a node. */
export type NodePruneFilters = Record<string, string[]>;

/**
 * What a node may prune of an app once the registry forgot `forgotten` (tags, which are the deployments
 * that built the images): for each, its image if no container uses it and no tag names it (pulled by
 * digest). A kept release's image, or a new deploy's, never matches; a node that has just pulled one for a
 * new task (its container not created yet, the image dangling for a moment) never loses it. An app deleted
 * (`deleted`): all its unused images.
 */
export function nodePruneFilters(
  appId: string,
  forgotten: readonly string[],
  deleted: boolean,
): NodePruneFilters[] {
  const app = `${LABEL.app}=${appId}`;
  if (deleted) return [{ dangling: ["true"], label: [app] }];
  return forgotten.map((tag) => ({ dangling: ["true"], label: [app, `${LABEL.deployment}=${tag}`] }));
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
      const filters = nodePruneFilters(appId, forgotten, keep.length === 0);
      if (filters.length > 0) await pruneNodeImages(o, appId, filters);
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
  const images = await docker.listImages({ filters: { label: [`${LABEL.app}=${appId}`] } });
  for (const tag of images.flatMap((i) => i.RepoTags ?? []))
    if (tag.startsWith(prefix) && !kept.has(tag))
      await docker
        .getImage(tag)
        .remove()
        .catch(() => undefined);
}

/**
 * The app's images `filters` name (`nodePruneFilters`), on every node: pulled by digest, untagged, they are
 * dangling once unused; the manager's kept releases keep their tags. When Pier reaches every ready node's
 * engine (the manager, PIER_SWARM_NODE_ENGINES), through those; else through the sweep, a job the swarm
 * runs on each node. A node that does not answer then keeps them (`docker image prune` there frees them).
 */
async function pruneNodeImages(o: EngineCopies, appId: string, filters: NodePruneFilters[]): Promise<void> {
  const nodes = await o.nodes().catch(() => new Map<string, { name: string; ready?: boolean }>());
  const engines = [...nodes].map(([id, n]) => ({
    ...n,
    engine: o.nodeEngine({ id, name: n.name, address: "" }),
  }));
  if (o.sweep && engines.some((n) => n.ready !== false && !n.engine)) {
    await o.sweep(appId, filters).catch(() => undefined);
    return;
  }
  for (const n of engines)
    for (const f of filters) await n.engine?.pruneImages({ filters: f }).catch(() => undefined);
}
