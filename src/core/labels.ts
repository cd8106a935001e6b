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
