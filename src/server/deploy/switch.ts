// The switch and record steps (ADR 0011): the edge serves the new instances first, then the store records
// the release, the app's size and the deployment's success in one transaction. If either fails, the edge
// goes back to what the store says and nothing of this deploy is recorded.
import type { Release } from "../../core/model.js";
import { newId, now, type Plan, type Started, type StepContext } from "./context.js";

/** The record step: the release, the app's new size (a scale) and the deployment's success, at once. */
export function recordRelease(ctx: StepContext, plan: Plan, run: Started, image: string): Promise<Release> {
  const d = ctx.deployment;
  return ctx.deps.store.commitRelease(
    {
      id: newId("rel"),
      appId: plan.app.id,
      deploymentId: d.id,
      image,
      commit: d.commit,
      env: run.env,
      httpPort: plan.settings.httpPort,
      tcpPort: plan.settings.tcpPort,
      task: plan.task,
    },
    { stopped: false, ...ctx.request.resize },
    now(),
  );
}

/** The switch step: the edge to this deployment's instances, recorded by `record` once it serves them. */
export async function switchEdge(
  ctx: StepContext,
  appId: string,
  record: () => Promise<Release>,
): Promise<Release | null> {
  const recorded: { release: Release | null } = { release: null };
  await ctx.deps.instances.transition(appId, ctx.deployment.id, async () => {
    recorded.release = await record();
  });
  ctx.write(`Release v${recorded.release?.number} is live at the edge.`);
  return recorded.release;
}
