// The start step: the release's instances, with the platform's variables, the app's and its links'.
import { instanceEnvironment } from "../../core/env.js";
import { FLAVOR_MEMORY_MIB } from "../../core/model.js";
import type { ReleaseToRun } from "../instances.js";
import { APP_HOME } from "../runtimes/runtime.js";
import { now, type Plan, type Started, type StepContext } from "./context.js";

/** What the instances of this release run: the image, its environment, the app's size (a scale's new one). */
export function releaseToRun(
  ctx: Pick<StepContext, "deployment" | "request">,
  plan: Plan,
  image: string,
): ReleaseToRun {
  const { app, settings, task } = plan;
  const env = instanceEnvironment(plan.vars, { ...plan.common, INSTANCE_TYPE: "production" }, APP_HOME);
  delete env.INSTANCE_NUMBER;
  delete env.INSTANCE_ID;
  // A scale deploys the new size; the app records it only when this deploy succeeds.
  const size = { instances: app.instances, flavor: app.flavor, ...ctx.request.resize };
  return {
    appId: app.id,
    appName: app.name,
    deploymentId: ctx.deployment.id,
    image,
    env,
    httpPort: task ? null : settings.httpPort,
    tcpPort: settings.tcpPort,
    cmd: app.task ? ["/bin/sh", "-c", app.task] : settings.cmd,
    flavor: size.flavor,
    instances: task ? 1 : size.instances,
    ipv6Subnet: settings.ipv6Subnet,
    mountDockerSocket: settings.mountDockerSocket,
    restart: !task,
    buckets: plan.buckets,
  };
}

/** Marks the deployment deploying and starts its instances (none routed yet). */
export async function startInstances(ctx: StepContext, plan: Plan, image: string): Promise<Started> {
  await ctx.deps.store.updateDeployment(ctx.deployment.id, { state: "deploying", deployingAt: now() });
  const toRun = releaseToRun(ctx, plan, image);
  if (plan.settings.mountDockerSocket) {
    ctx.write(
      "WARNING: CC_MOUNT_DOCKER_SOCKET=true: the engine socket is mounted in the instances; isolation is broken, never run untrusted code in this app.",
    );
  }
  ctx.write(
    `Starting ${toRun.instances} instance(s) of flavor ${toRun.flavor} (${FLAVOR_MEMORY_MIB[toRun.flavor]} MiB).`,
  );
  const instances = await ctx.deps.instances.start(toRun, ctx.write);
  return { toRun, env: toRun.env, instances };
}
