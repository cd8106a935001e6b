/**
 * Labels under `pier.` are Pier's own: it reads them off containers to route (an instance's target, its
 * sandbox, `pier.force-https`), to tell instances from sandboxes and add-ons, and to find what to remove.
 * Docker gives a container its image's labels under the ones Pier sets, so a label that Pier sets only
 * sometimes could come from a Dockerfile (`LABEL pier.http-target=...`). An app's image may carry only the
 * ones Pier itself puts on images (its base images' and its builds').
 */
export const IMAGE_LABELS: ReadonlySet<string> = new Set([
  "pier.managed",
  "pier.scope",
  "pier.app",
  "pier.deployment",
  "pier.base",
  "pier.base.generation",
  "pier.node.dockerfile",
  "pier.php.generation",
  "pier.phpserver",
  "pier.toolchain",
  "pier.deps-key",
  "pier.reuse-depth",
]);

/** The labels of an image that only Pier may set (under `pier.`, not one Pier puts on images), sorted. */
export function reservedLabels(labels: Readonly<Record<string, string>>): string[] {
  return Object.keys(labels)
    .filter((k) => k.toLowerCase().startsWith("pier.") && !IMAGE_LABELS.has(k))
    .sort();
}

/**
 * The `pier.role` of Pier's containers and images: an instance, a build container, the release image a build
 * commits (a sandbox's and a release volume's are in their own modules). Pier sets it last on every object
 * it makes, so a role never comes from an image: `docker commit` keeps the build container's labels in the
 * image, and an instance gets its image's labels under the ones Pier sets.
 */
export const ROLE = { instance: "instance", build: "build", release: "release" } as const;

/**
 * Whether a container is a build container (never adopted as an instance, its exit never recorded). Pier
 * before ADR 0021 gave instances of Node.js and PHP releases their image's `pier.role=build`; they are told
 * apart by `pier.instance-id`, which only an instance gets (Instances.start) and no image may carry
 * (`reservedLabels`).
 */
export function isBuildContainer(labels: Readonly<Record<string, string>>): boolean {
  return labels["pier.role"] === ROLE.build && labels["pier.instance-id"] === undefined;
}
