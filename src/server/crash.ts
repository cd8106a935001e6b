import type { Logger } from "pino";

/**
 * What ends pier server when a throw escapes every handler (an event listener's, a stream's 'error' with no
 * listener) or a promise rejects with no one to catch it: the error is logged as one fatal record with its
 * stack, then the process exits with code 70 (EX_SOFTWARE). Node alone would print the stack to stderr
 * only, which a caller that keeps stdout (the JSON log) and drops stderr never shows. Pier does not carry on
 * after such an error (its state may be half-changed); the supervisor starts it again, and the reconciler
 * makes what runs match the store (docs/guide.md, ADR 0021).
 */
export function exitOnCrash(
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
  on: (event: "uncaughtException" | "unhandledRejection", f: (err: unknown) => void) => void = (e, f) =>
    process.on(e, f),
): void {
  let crashed = false;
  const crash = (kind: string) => (err: unknown) => {
    if (crashed) return;
    crashed = true;
    try {
      logger.fatal(
        { err: err instanceof Error ? err : new Error(String(err)), crash: kind },
        `pier server crashed (${kind}): exiting with code ${CRASH_EXIT_CODE}; apps and the edge keep serving, and a supervisor starts it again`,
      );
    } finally {
      // pino's destination writes what it holds at exit.
      exit(CRASH_EXIT_CODE);
    }
  };
  on("uncaughtException", crash("uncaught exception"));
  on("unhandledRejection", crash("unhandled rejection"));
}

/** The exit code of a crash (EX_SOFTWARE): a supervisor's Restart=on-failure starts pier server again. */
export const CRASH_EXIT_CODE = 70;
