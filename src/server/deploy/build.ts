// The build step: the release's image, built from the pushed commit, or reused (a scale, a restart of the
// current image) or taken from an earlier release (a rollback).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { archiveCommit } from "../../adapters/git.js";
import { PierError } from "../../core/errors.js";
import type { Release } from "../../core/model.js";
import type { Engine, Store } from "../../core/ports.js";
import { checkAborted, type Plan, type StepContext } from "./context.js";

/** How many releases keep their image, so a rollback needs no rebuild. */
export const KEPT_RELEASES = 5;

/** What the build step uses. */
export type BuildStepContext = StepContext<{
  store: Pick<Store, "currentRelease" | "getAppSecret">;
  engine: Pick<Engine, "imageExists">;
  repoDir: (appId: string) => string;
}>;

/** The image this deploy runs; throws if the deployment was cancelled meanwhile. */
export async function buildImage(ctx: BuildStepContext, plan: Plan): Promise<string> {
  const current = await ctx.deps.store.currentRelease(plan.app.id);
  const target = ctx.request.rollbackTo;
  const image = target
    ? await rollbackImage(ctx, target)
    : ctx.request.reuseCurrentImage
      ? reusedImage(ctx, current)
      : await buildFromCommit(ctx, plan, current);
  checkAborted(ctx.signal);
  return image;
}

async function rollbackImage(ctx: BuildStepContext, target: Release): Promise<string> {
  if (!(await ctx.deps.engine.imageExists(target.image))) {
    throw new PierError(
      "RELEASE_NOT_FOUND",
      `The image of release v${target.number} is no longer kept (an app keeps the images of its last ${KEPT_RELEASES} builds).`,
      `Redeploy its commit ${target.commit.slice(0, 12)} with git push instead.`,
    );
  }
  ctx.write(
    `Rolling back to release v${target.number} (commit ${target.commit.slice(0, 12)}): its image, today's variables.`,
  );
  return target.image;
}

function reusedImage(ctx: BuildStepContext, current: Release | null): string {
  if (!current) throw new PierError("NOTHING_TO_DEPLOY", "This app has no release yet: push first.");
  ctx.write(`Reusing the image of release v${current.number}.`);
  return current.image;
}

/** The commit's files in a temporary folder, built by the app's runtime; the folder goes either way. */
async function buildFromCommit(ctx: BuildStepContext, plan: Plan, current: Release | null): Promise<string> {
  const { app } = plan;
  const sourceDir = await mkdtemp(join(tmpdir(), "pier-build-"));
  try {
    await archiveCommit(ctx.deps.repoDir(app.id), ctx.deployment.commit, sourceDir, ctx.request.gitEnv);
    return await plan.runtime.build(
      {
        app,
        deployment: ctx.deployment,
        vars: plan.vars,
        platformVars: plan.common,
        sourceDir,
        sshPrivateKey: await ctx.deps.store.getAppSecret(app.id, "ssh_private_key"),
        previousImage: current?.image ?? null,
        write: ctx.write,
        signal: ctx.signal,
        addonNetwork: plan.addonNetwork,
      },
      plan.settings,
    );
  } finally {
    await rm(sourceDir, { recursive: true, force: true });
  }
}
