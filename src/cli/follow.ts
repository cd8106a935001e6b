import { TERMINAL_STATES } from "../core/model.js";
import type { Context } from "./command.js";
import { CliError } from "./errors.js";
import { json } from "./output.js";
import type { ApiDeployment } from "./schemas.js";

export type LogLine = { at: string; line: string };

/**
 * Streams a deployment's log (SSE `data: {at, line}` events) to `onLine` until the server sends
 * `event: end` with the finished Deployment, which it resolves with.
 */
export async function followDeployment(
  ctx: Context,
  app: string,
  deploymentId: string,
  onLine: (line: LogLine) => void,
): Promise<ApiDeployment> {
  const client = ctx.client();
  const params = { app, id: deploymentId };
  for await (const ev of client.events("GET /v1/apps/:app/deployments/:id/log", { params })) {
    if (ev.event === "end") return ev.data;
    onLine(ev.data);
  }
  // The stream closed without `end`: the deployment may still have finished.
  const last = await client.call("GET /v1/apps/:app/deployments/:id", { params });
  if (TERMINAL_STATES.includes(last.state)) return last;
  throw new CliError(
    `the log stream closed before deployment ${deploymentId} finished (it is ${last.state})`,
    `follow it again: pier logs --app ${app} --deployment ${deploymentId} --follow`,
  );
}

export type ExitOn = "deploy-start" | "deploy-end";

/**
 * After a deployment was queued: with `deploy-end`, streams its log to stderr and resolves with the
 * finished deployment; with `deploy-start`, resolves at once with the queued one.
 */
export async function awaitDeployment(
  ctx: Context,
  app: string,
  queued: ApiDeployment,
  exitOn: ExitOn,
): Promise<ApiDeployment> {
  ctx.err(`Deployment ${queued.id} ${queued.state} (${queued.cause}).\n`);
  if (exitOn === "deploy-start") return queued;
  ctx.err("Following its log; Ctrl-C stops following, not the deployment.\n");
  return followDeployment(ctx, app, queued.id, (l) => ctx.err(`${l.line}\n`));
}

const failed = (d: ApiDeployment): boolean => d.state !== "succeeded" && TERMINAL_STATES.includes(d.state);

/**
 * Prints a deployment's outcome (`jsonValue` with --format json, a line otherwise) and throws
 * (exit 1, with the reason on stderr) unless it succeeded or, after `deploy-start`, is under way.
 */
export function reportDeployment(
  ctx: Context,
  format: "human" | "json",
  app: string,
  d: ApiDeployment,
  jsonValue: unknown = d,
): void {
  if (format === "json") ctx.out(json(jsonValue));
  else if (d.state === "succeeded") ctx.out(`Deployment ${d.id} succeeded.\n`);
  else if (!failed(d)) ctx.out(`Deployment ${d.id} is ${d.state}.\n`);
  if (failed(d)) {
    throw new CliError(
      `deployment ${d.id} ${d.state}${d.reason ? `: ${d.reason}` : ""}`,
      `see its whole log: pier logs --app ${app} --deployment ${d.id}`,
    );
  }
}
