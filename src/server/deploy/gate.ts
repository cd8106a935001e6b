// The gate step: a web release takes traffic only when every instance listens and answers 200 on every
// health path (the contract's log lines, section 7.1); a task must run to completion with exit code 0.
import { PierError } from "../../core/errors.js";
import { healthReport, notListeningLines } from "../../core/health.js";
import { LABEL } from "../../core/labels.js";
import type { App } from "../../core/model.js";
import type { Engine, InstanceInfo } from "../../core/ports.js";
import { probe, waitListening } from "../health-gate.js";
import { checkAborted, type Plan, type StepContext, type StepDeps } from "./context.js";

/** Passes, or throws why the release may not take traffic; either way the deployment is not cancelled. */
export async function gateRelease(ctx: StepContext, plan: Plan, started: InstanceInfo[]): Promise<void> {
  checkAborted(ctx.signal);
  if (plan.task) await awaitTask(ctx, started);
  else {
    try {
      await Promise.all(
        started.map((inst) =>
          gateInstance(
            ctx.deps,
            plan.app,
            inst,
            plan.settings.httpPort,
            plan.healthPaths,
            ctx.write,
            ctx.signal,
          ),
        ),
      );
    } catch (e) {
      await runHook(ctx, "CC_RUN_FAILED_HOOK", plan.vars, started);
      throw e;
    }
    await runHook(ctx, "CC_RUN_SUCCEEDED_HOOK", plan.vars, started);
  }
  checkAborted(ctx.signal);
}

/** A task's one instance runs to its end; its output goes to the deploy log. */
async function awaitTask(ctx: StepContext, started: InstanceInfo[]): Promise<void> {
  const { engine } = ctx.deps;
  ctx.write("Task started: it runs once to completion (no HTTP, no health check).");
  const code = await engine.waitInstance(started[0]!.id, ctx.signal);
  await engine.logs(started[0]!.id, { follow: false }, (l) => ctx.write(l.line), ctx.signal);
  if (code !== 0) throw new PierError("BUILD_FAILED", `The task exited with code ${code}.`);
  ctx.write("Task finished with exit code 0.");
}

/**
 * CC_RUN_SUCCEEDED_HOOK / CC_RUN_FAILED_HOOK: the user's command, by a shell inside instance 0, after
 * the health gate (on a swarm, which cannot enter an instance, in a container made like it: `runLike`). Its
 * output and exit code are logged; it never changes the deployment's outcome.
 */
export async function runHook(
  ctx: { deps: { engine: Pick<Engine, "execInInstance" | "runLike"> }; write: (line: string) => void },
  name: "CC_RUN_SUCCEEDED_HOOK" | "CC_RUN_FAILED_HOOK",
  vars: Record<string, string>,
  started: InstanceInfo[],
): Promise<void> {
  const { write } = ctx;
  const hook = vars[name]?.trim();
  const target = started[0];
  if (!hook || !target) return;
  const { engine } = ctx.deps;
  const argv = ["/bin/sh", "-c", hook];
  write(
    `-----> Running ${name} ${engine.runLike ? "like instance 0 (its image, variables, network)" : "in instance 0"}`,
  );
  try {
    const code = engine.runLike
      ? await engine.runLike(target.id, argv, (l) => write(l))
      : await engine.execInInstance(target.id, argv, (l) => write(l));
    write(`${name} exited with code ${code}${code === 0 ? "" : " (logged only)"}.`);
  } catch (e) {
    write(`${name} could not run: ${(e as Error).message} (logged only).`);
  }
}

/** One instance: it listens on its port (else why not, with its last output), then every path answers 200. */
export async function gateInstance(
  deps: Pick<StepDeps, "engine" | "reach" | "listenTimeoutMs">,
  app: App,
  inst: InstanceInfo,
  port: number,
  paths: string[],
  write: (l: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const n = inst.labels[LABEL.instance] ?? "?";
  const listening = await waitListening(deps.engine, deps.reach, inst, port, deps.listenTimeoutMs, signal);
  if (!listening.ok) {
    await writeLastOutput(deps, inst, n, write, signal);
    const why = listening.loopbackOnly
      ? `Instance ${n} listens on ${listening.loopbackOnly.map((a) => `${a}:${port}`).join(", ")} only: nothing outside the instance can reach it. Listen on 0.0.0.0:${port} (all interfaces), e.g. server.listen(process.env.PORT, "0.0.0.0").`
      : listening.exited !== null
        ? `Instance ${n} exited with code ${listening.exited} before it listened on port ${port}.`
        : notListeningLines(port, deps.listenTimeoutMs / 1000, app.type).join(" ");
    throw new PierError("HEALTH_CHECK_FAILED", why);
  }
  if (!inst.http) throw new PierError("ENGINE_ERROR", `Instance ${n} has no published HTTP port.`);
  const results: { path: string; status: number | string }[] = [];
  for (const path of paths) results.push({ path, status: await probe(deps.reach, inst.http, path) });
  const report = healthReport(results);
  write(`Health check of instance ${n}:`);
  for (const l of report.lines) write(l);
  if (!report.ok) throw new PierError("HEALTH_CHECK_FAILED", `The health check of instance ${n} failed.`);
}

/** The last 20 lines of an instance that never listened, so the pusher sees why. */
async function writeLastOutput(
  deps: Pick<StepDeps, "engine">,
  inst: InstanceInfo,
  n: string,
  write: (l: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const tail: string[] = [];
  await deps.engine
    .logs(inst.id, { follow: false, tail: 20 }, (l) => void tail.push(l.line), signal)
    .catch(() => undefined);
  if (tail.length === 0) return;
  write(`Last output of instance ${n}:`);
  for (const l of tail) write(`  ${l}`);
}
