// The variables step: the app's own variables and its links', checked against its runtime, the contract's
// rules and its ceiling before anything is built or started.

import { type LinkedEnvironment, linkedLines } from "../../core/addons.js";
import { isTask } from "../../core/app-state.js";
import { type BucketMount, bucketMounts, bucketNode, isBucketVariable } from "../../core/buckets.js";
import { healthCheckPaths, instanceEnvironment, platformVariables } from "../../core/env.js";
import { ENV_CAP_HINT, instanceEnvProblem } from "../../core/env-limits.js";
import { PierError } from "../../core/errors.js";
import type { App } from "../../core/model.js";
import { appNetworkName } from "../instances.js";
import { APP_HOME, type RunSettings, type Runtime } from "../runtimes/runtime.js";
import { type DeployRequest, now, type Plan, type StepContext, type StepDeps } from "./context.js";

/**
 * Reads the app and its variables with its links' (its own win: builds and instances get them all), and
 * has the log mask every line with them from here on. Then announces the deploy and marks it building.
 */
export async function readVariables(
  ctx: StepContext,
  appId: string,
): Promise<{ app: App; vars: Record<string, string>; linked: LinkedEnvironment | null }> {
  const { store, logs, links } = ctx.deps;
  const d = ctx.deployment;
  const app = await store.findApp(appId);
  if (!app) throw new PierError("APP_NOT_FOUND", `App ${appId} no longer exists.`);
  const own = await store.getEnv(app.id);
  const linked = links ? await links.environment(app.id, own) : null;
  const vars = linked?.vars ?? own;
  await logs.refreshMasker(d.id, vars);
  ctx.write(`Deploying ${app.name} (${app.type}), commit ${d.commit.slice(0, 12)}: ${d.cause}.`);
  await store.updateDeployment(d.id, { state: "building", buildingAt: now() });
  return { app, vars, linked };
}

/** The app's runtime and its settings read from the variables; an unknown runtime or a bad value fails. */
export function runSettings(
  deps: Pick<StepDeps, "runtimes">,
  app: App,
  vars: Record<string, string>,
): { runtime: Runtime; settings: RunSettings } {
  const runtime = deps.runtimes[app.type];
  if (!runtime) {
    throw new PierError(
      "INVALID_INPUT",
      `The ${app.type} runtime is not available yet on this Pier.`,
      "Use docker or node.",
    );
  }
  const result = runtime.settings(vars);
  if (result.errors.length > 0) {
    throw new PierError(
      "INVALID_VARIABLE",
      `Invalid settings: ${result.errors.join("; ")}`,
      "Fix them with `pier env set`.",
    );
  }
  return { runtime, settings: result.settings };
}

/** The engine socket is mounted only in apps an admin allowed (CC_MOUNT_DOCKER_SOCKET). */
export function checkSocket(app: App, settings: RunSettings): void {
  if (settings.mountDockerSocket && !app.allowDockerSocket) {
    throw new PierError(
      "FORBIDDEN",
      "CC_MOUNT_DOCKER_SOCKET=true, but no admin allowed this app to use the engine socket.",
      'An admin can allow it (PATCH /v1/apps/<app> {"allowDockerSocket": true}); unset the variable otherwise.',
    );
  }
}

/**
 * Everything the later steps need, checked: settings, health paths, the app's ceiling and the cap on an
 * instance's environment. Then the linked add-ons join the app's network (their lines go to the log).
 */
export async function planRelease(
  ctx: StepContext,
  read: { app: App; vars: Record<string, string>; linked: LinkedEnvironment | null },
): Promise<Plan> {
  const { app, vars, linked } = read;
  const d = ctx.deployment;
  const { runtime, settings } = runSettings(ctx.deps, app, vars);
  const task = isTask(app, vars);
  const health = healthCheckPaths(vars);
  if (health.errors.length > 0) throw new PierError("INVALID_VARIABLE", health.errors.join("; "));
  checkSocket(app, settings);
  const common = platformVariables({
    appId: app.id,
    appName: app.name,
    appHome: APP_HOME,
    instanceNumber: 0,
    instanceId: "",
    instanceType: "build",
    port: settings.httpPort,
    deploymentId: d.id,
    commitId: d.commit,
  });
  await checkLimits(ctx.deps, app, ctx.request, instanceEnvironment(vars, common, APP_HOME), task);
  const buckets = await mountedBuckets(ctx, app, vars);
  const addonNetwork = await joinLinks(ctx, app, linked, settings.ipv6Subnet);
  return {
    app,
    vars,
    linked,
    runtime,
    settings,
    task,
    healthPaths: health.paths,
    common,
    addonNetwork,
    buckets,
  };
}

/**
 * The buckets the instances mount (CC_FS_BUCKET*), each a linked fs add-on's: a malformed value, a bucket
 * not linked to the app (or unlinked since the variable was set) or a Docker app (the contract: that runtime
 * has no buckets) fails the deploy before anything is built or started, naming the variable.
 */
export async function mountedBuckets(
  ctx: { deps: { links?: Pick<NonNullable<StepDeps["links"]>, "buckets"> }; write: (line: string) => void },
  app: App,
  vars: Record<string, string>,
): Promise<BucketMount[]> {
  const names = Object.keys(vars).filter(isBucketVariable);
  if (names.length === 0) return [];
  if (app.type === "docker")
    throw new PierError(
      "INVALID_VARIABLE",
      `${names.join(", ")}: the docker runtime has no file-system buckets (runtime contract, section 1).`,
      "Unset the variable, or use a node or phpserver app.",
    );
  const linked = (await ctx.deps.links?.buckets(app.id)) ?? [];
  const { mounts, errors } = bucketMounts(vars, linked, app.name, APP_HOME);
  if (errors.length > 0)
    throw new PierError(
      "INVALID_VARIABLE",
      errors.join("; "),
      "Link the fs add-on (pier service link-addon NAME --app APP) or fix the variable with `pier env set`.",
    );
  const pin = bucketNode(mounts, linked, app.name);
  if (pin.error)
    throw new PierError(
      "INVALID_VARIABLE",
      pin.error,
      "Mount buckets of one node only (unset a CC_FS_BUCKET* variable or unlink a bucket), or move a bucket: create one with --node and restore the other's backup into it (docs/guide.md).",
    );
  for (const m of mounts) {
    const b = linked.find((x) => x.id === m.addonId);
    ctx.write(
      `The fs add-on ${b?.name ?? m.addonId} (bucket ${b?.host ?? m.addonId}) is mounted at ${m.target}.`,
    );
  }
  if (pin.node) {
    const names = mounts.map((m) => linked.find((x) => x.id === m.addonId)?.name ?? m.addonId);
    ctx.write(
      `Instances of ${app.name} run on node ${pin.node}, where bucket ${[...new Set(names)].join(", ")} lives.`,
    );
  }
  return mounts;
}

/**
 * The deploy's size within the app's ceiling (an admin may have lowered it since the last scale) and the
 * instances' environment (the app's variables with its links' and the platform's) within its cap. Either
 * fails the deploy before anything is built or started: the app stays as it was.
 */
export async function checkLimits(
  deps: Pick<StepDeps, "limits">,
  app: App,
  req: DeployRequest,
  env: Record<string, string>,
  task: boolean,
): Promise<void> {
  const size = { instances: app.instances, flavor: app.flavor, ...req.resize };
  const building = !req.reuseCurrentImage && !req.rollbackTo;
  await deps.limits.check(app, {
    instances: task ? 1 : size.instances,
    flavor: size.flavor,
    ...(building ? { buildFlavor: app.buildFlavor } : {}),
  });
  const problem = instanceEnvProblem(env, app.name);
  if (problem) throw new PierError("ENV_LIMIT_EXCEEDED", problem, ENV_CAP_HINT);
}

/** Logs the links and has the linked add-ons join the app's network: its name when one is an add-on. */
async function joinLinks(
  ctx: StepContext,
  app: App,
  linked: LinkedEnvironment | null,
  ipv6Subnet: string | null,
): Promise<string | null> {
  const links = ctx.deps.links;
  if (!linked || !links) return null;
  for (const line of linkedLines(linked)) ctx.write(line);
  const network = { name: appNetworkName(app.id, ipv6Subnet), ipv6Subnet };
  for (const line of await links.attach(app.id, network)) ctx.write(line);
  return linked.linked.some((v) => v.source.kind === "addon") ? network.name : null;
}
