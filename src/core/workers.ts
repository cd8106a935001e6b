import { shellQuote } from "./shell.js";

/** Background workers beside the main process (CC_WORKER_COMMAND[_n], CC_WORKER_RESTART[_DELAY]). Pure. */

export interface Worker {
  command: string;
  restart: "always" | "on-failure" | "no";
  delaySeconds: number;
}

/**
 * The instance's command with its workers: a small POSIX shell supervisor starts each worker in a restart
 * loop (per its policy, after its delay), then `exec`s the main process, which keeps the instance's
 * signals. Worker commands are the user's own and run by a shell, as the contract has it.
 */
export function withWorkers(start: readonly string[], workers: readonly Worker[]): string[] {
  if (workers.length === 0) return [...start];
  const lines = [
    "worker() {",
    "  while :; do",
    '    /bin/sh -c "$1"; code=$?',
    '    echo "pier: worker $4 exited with code $code" >&2',
    '    case "$2" in no) return ;; on-failure) [ "$code" -eq 0 ] && return ;; esac',
    '    sleep "$3"',
    "  done",
    "}",
    ...workers.map(
      (w, i) =>
        `worker ${shellQuote(w.command)} ${w.restart} ${Math.max(0, Math.floor(w.delaySeconds))} ${i} &`,
    ),
    'exec "$@"',
  ];
  return ["/bin/sh", "-c", lines.join("\n"), "pier-start", ...start];
}

/**
 * CC_PRE_RUN_HOOK before the start command, for every runtime: the hook runs in its own shell (with -e);
 * the start command only when it succeeds, and then keeps the instance's signals (exec).
 */
export function withPreRunHook(start: readonly string[], hook: string | undefined): string[] {
  if (hook === undefined || hook.trim() === "") return [...start];
  return ["/bin/sh", "-c", '/bin/sh -ec "$1" && shift && exec "$@"', "pier-pre-run", hook, ...start];
}
