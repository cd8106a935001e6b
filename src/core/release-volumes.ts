import { LABEL } from "./labels.js";
import type { ReleaseVolume } from "./ports.js";
/**
 * Release volumes (docs/adr/0012): a release image may keep one folder (a PHP release's vendor/) in a named
 * volume instead of its layers, so that the build's commit does not copy it. The image names the volume in
 * a label; the engine adapter mounts it in every container made from that image (instances, workers,
 * tasks, restarts, rollbacks, the reconciler's remakes), so no caller can forget it.
 */

/** The image label `<volume name>:<absolute path>`: containers of this image mount the volume there. */
export const VOLUME_LABEL = LABEL.volume;

/** The `pier.role` label of release volumes (not caches: `CC_...` without-cache builds leave them alone). */
export const RELEASE_VOLUME_ROLE = "release-volume";

/** The value of VOLUME_LABEL. */
export const volumeLabel = (name: string, target: string) => `${name}:${target}`;

/** The volume an image's labels name, or null. A malformed label (no absolute path) names none. */
export function releaseVolume(labels: Record<string, string>): { name: string; target: string } | null {
  const v = labels[VOLUME_LABEL];
  if (!v) return null;
  const i = v.indexOf(":");
  if (i <= 0) return null;
  const name = v.slice(0, i);
  const target = v.slice(i + 1);
  return target.startsWith("/") ? { name, target } : null;
}

/** The name of a release volume made by one deployment of an app. */
export const releaseVolumeName = (appId: string, deploymentId: string, what: string) =>
  `pier-${what}-${appId}-${deploymentId}`;

/**
 * The app's release volumes that may go: those that no remaining image of the app names and that are not
 * the running deployment's (its image is not committed yet). A volume still mounted by a container is
 * refused by the engine, so a race with a deploy that just went live loses nothing.
 */
export function unnamedVolumes(
  volumes: readonly ReleaseVolume[],
  images: Record<string, string>[],
  busyDeploymentId: string | null,
): string[] {
  const named = new Set(images.flatMap((l) => releaseVolume(l)?.name ?? []));
  return volumes
    .filter((v) => !named.has(v.name))
    .filter((v) => busyDeploymentId === null || v.deploymentId !== busyDeploymentId)
    .map((v) => v.name);
}
