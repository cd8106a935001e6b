import type { PathFact, PhpBuildPlan } from "./plan-php.js";

/**
 * Where a release's vendor/ lives (docs/adr/0012): in the image when the commit has one (or there is no
 * composer, or the engine's instances may run away from its volumes: a swarm, ADR 0030), else in a release volume that composer installs into, so that the commit of the build
 * container copies none of it.
 * - "install": composer runs into a new volume;
 * - "shared": the current release's volume (same dependency key, its volume still there): composer is
 *   skipped and the volume is mounted as it is (nothing writes into it: there is no dump-autoload);
 * - "copy": as "shared", but the autoloader lists the project's classes: the current release's volume is
 *   copied into a new one, which `composer dump-autoload` then rewrites (the running release's is left
 *   alone).
 */
export type VendorPlan =
  | { kind: "image" }
  | { kind: "install"; volume: string }
  | { kind: "shared"; volume: string }
  | { kind: "copy"; volume: string; from: string };

export function planVendor(i: {
  composer: PhpBuildPlan["composer"];
  /** What vendor/ is in the commit. */
  vendor: PathFact;
  /** The key of what composer's install depends on (composer.lock, composer.json, flags, image); null without a lock. */
  depsKey: string | null;
  withoutCache: boolean;
  /** The current release's image: its deps-key and the release volume it names, or null. */
  previous: { depsKey: string | null; volume: string | null } | null;
  /** The app's release volumes on the engine. */
  volumes: readonly string[];
  /** The name of the volume this deployment would make. */
  newVolume: string;
  /** Whether every instance runs beside the engine's volumes (AppVolumes.instancesShareVolumes). */
  instancesShareVolumes: boolean;
}): VendorPlan {
  if (i.composer === null || i.vendor !== "missing" || !i.instancesShareVolumes) return { kind: "image" };
  const prev = i.previous;
  const reusable =
    i.depsKey !== null &&
    !i.withoutCache &&
    prev !== null &&
    prev.depsKey === i.depsKey &&
    prev.volume !== null &&
    i.volumes.includes(prev.volume);
  if (!reusable || prev?.volume == null) return { kind: "install", volume: i.newVolume };
  return i.composer.dumpAutoload === null
    ? { kind: "shared", volume: prev.volume }
    : { kind: "copy", volume: i.newVolume, from: prev.volume };
}
