import { quoted, read } from "./plan-vars.js";
import { shellQuote } from "./shell.js";

/** Background workers beside the main process (CC_WORKER_COMMAND[_n], CC_WORKER_RESTART[_DELAY]). Pure. */

export const WORKER_RESTARTS = ["always", "on-failure", "no"] as const;
export type WorkerRestart = (typeof WORKER_RESTARTS)[number];

export interface Worker {
  command: string;
  restart: WorkerRestart;
  delaySeconds: number;
}

const CC_WORKER = "CC_WORKER_COMMAND";
const NUMBERED_WORKER_RE = /^CC_WORKER_COMMAND_(\d+)$/;

/** CC_WORKER_COMMAND first, then CC_WORKER_COMMAND_<n> by increasing n, with the restart policy of all. */
export function readWorkers(vars: Record<string, string>): { workers: Worker[]; errors: string[] } {
  const errors: string[] = [];
  let restart: WorkerRestart = "on-failure";
  const r = read(vars, "CC_WORKER_RESTART")?.trim();
  if (r !== undefined) {
    if ((WORKER_RESTARTS as readonly string[]).includes(r)) restart = r as WorkerRestart;
    else
      errors.push(
        `CC_WORKER_RESTART=${quoted(r)} is not a restart policy: use ${WORKER_RESTARTS.join(", ")}.`,
      );
  }
  let delaySeconds = 1;
  const d = read(vars, "CC_WORKER_RESTART_DELAY")?.trim();
  if (d !== undefined) {
    if (/^\d{1,6}$/.test(d)) delaySeconds = Number(d);
    else
      errors.push(
        `CC_WORKER_RESTART_DELAY=${quoted(d)} is not a number of seconds: use an integer such as 1.`,
      );
  }
  const named: { n: number; command: string }[] = [];
  const single = read(vars, CC_WORKER);
  if (single !== undefined) named.push({ n: -1, command: single });
  for (const [name, value] of Object.entries(vars)) {
    const m = NUMBERED_WORKER_RE.exec(name);
    if (!m || value.trim() === "") continue;
    const digits = m[1] as string;
    if (digits.length > 1 && digits.startsWith("0")) {
      errors.push(`${name}: write the number without leading zeros (${CC_WORKER}_${Number(digits)}).`);
      continue;
    }
    named.push({ n: Number(digits), command: value });
  }
  named.sort((a, b) => a.n - b.n);
  return { workers: named.map((w) => ({ command: w.command, restart, delaySeconds })), errors };
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
