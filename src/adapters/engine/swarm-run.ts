// A command run like an instance on the swarm (ADR 0030): the swarm's API has no exec, and Pier reaches the
// engines of the nodes its instances run on only where the operator lets it. A user's hook
// (CC_RUN_SUCCEEDED_HOOK, CC_RUN_FAILED_HOOK) runs instead in a one-off service made from the instance's:
// its image, variables, mounts and overlay (so it reaches what the instance reaches), no restart, removed once
// it ended; its output comes through the manager (the service's log).
import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import { logBuffer, logLines } from "./docker-logs.js";
import { poll, type SwarmServices } from "./swarm-services.js";
import type { ServiceSpec } from "./swarm-spec.js";
import { currentTask, isTerminal, type SwarmService } from "./swarm-tasks.js";

/** The label naming the instance (its service id) a one-off command was run like. */
export const RUN_OF = "pier.run-of";

/**
 * The one-off service's spec: the instance's, with `argv` as its command (the image's entrypoint replaced,
 * as an exec into the instance has none), one task never restarted, and Pier's labels without the app's: it
 * is not an instance of the app (not listed, routed, counted), only Pier's until it is removed.
 */
export function runLikeSpec(
  instance: ServiceSpec,
  argv: string[],
  own: Record<string, string>,
  runOf: string,
  suffix: string,
): ServiceSpec {
  const labels = { ...own, [LABEL.role]: "run", [RUN_OF]: runOf };
  const t = instance.TaskTemplate;
  const { Args: _args, ...container } = t.ContainerSpec;
  const { ForceUpdate: _force, ...template } = t;
  return {
    ...instance,
    Name: `${instance.Name}-run-${suffix}`,
    Labels: labels,
    Mode: { Replicated: { Replicas: 1 } },
    TaskTemplate: {
      ...template,
      ContainerSpec: { ...container, Labels: labels, Command: argv },
      RestartPolicy: { Condition: "none" },
    },
  };
}

export interface RunLikeDeps {
  docker: Docker;
  svc: SwarmServices;
  own: Record<string, string>;
  pullAuth: { username: string; password: string; serveraddress: string } | null;
  /** How long the command may run (1 h). */
  timeoutMs?: number;
}

/** Runs `argv` like the instance `s`; its output to `onLine`, its exit code. The service goes afterwards. */
export async function runLike(
  deps: RunLikeDeps,
  s: SwarmService,
  argv: string[],
  onLine: (line: string) => void,
): Promise<number> {
  const { docker, svc } = deps;
  const spec = runLikeSpec(s.Spec, argv, deps.own, s.ID, randomBytes(3).toString("hex"));
  const made = await (deps.pullAuth ? docker.createService(deps.pullAuth, spec) : docker.createService(spec));
  try {
    await svc.started(made.id, spec.Name, new Set());
    const ended = await poll(
      deps.timeoutMs ?? 3_600_000,
      async () => {
        const task = currentTask(await svc.tasks(made.id));
        return task && isTerminal(task) ? task : undefined;
      },
      () => new PierError("ENGINE_ERROR", `The command run like ${s.Spec.Name} did not end in time.`),
    );
    const buf = await logBuffer(
      (await docker.getService(made.id).logs({ stdout: true, stderr: true, timestamps: true })) as
        | Buffer
        | NodeJS.ReadableStream,
    );
    for (const l of logLines(buf)) onLine(l.line);
    return ended.Status?.ContainerStatus?.ExitCode ?? 1;
  } finally {
    await docker
      .getService(made.id)
      .remove()
      .catch(() => undefined);
  }
}
