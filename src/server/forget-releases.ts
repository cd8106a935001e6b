// Release images in the swarm's registry (ADR 0030): what the manager prunes of an app's releases, and a
// deleted app's images, are forgotten by the registry too. Off the pusher's path: a registry that refuses
// is logged with its reason (which never holds the password) and fails nothing.
import { releaseRepository } from "../core/model.js";
import type { ReleaseRegistry } from "../core/ports.js";

/** Where its outcome is said (pino's logger). */
export interface ForgetLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Forgets what `appId` published to `registry` but the images in `keep`; nothing on one dockerd (null). */
export async function forgetReleases(
  registry: ReleaseRegistry | null | undefined,
  logger: ForgetLog,
  appId: string,
  keep: readonly string[],
): Promise<void> {
  if (!registry) return;
  try {
    const images = await registry.forget(releaseRepository(appId), keep);
    if (images.length > 0)
      logger.info({ appId, images }, "the swarm's registry forgot pruned release images");
  } catch (err) {
    // The hint says what to do (grant the delete action, allow deletes in the registry's config).
    const { message, hint } = err as Error & { hint?: string };
    logger.warn(
      { appId, err: message, ...(hint ? { hint } : {}) },
      "the swarm's registry could not forget pruned release images yet",
    );
  }
}
