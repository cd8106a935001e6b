// The fake engine's containers run their commands in this tiny shell (test/support/fake-engine.ts), so the
// conformance suite's commands mean the same on the fake as on a real engine.

/** What a container's command does here: the lines it prints, and its exit code (null: it keeps running). */
export interface Run {
  lines: string[];
  /** What it wrote to the container's main process (`> /proc/1/fd/1`): the container's log. */
  logged: string[];
  exitCode: number | null;
}

/**
 * A tiny shell for commands given as argv: `echo`, `true`, `false`, `exit N`, `sleep` (keeps running),
 * joined by `;` or `&&` under `sh -c`. Anything else is not found (127), as on an image without it.
 */
export function interpret(argv: readonly string[]): Run {
  const [cmd, ...rest] = argv;
  if ((cmd === "sh" || cmd === "/bin/sh") && rest[0] === "-c") return script(rest[1] ?? "");
  return script(argv.join(" "));
}

function script(text: string): Run {
  const lines: string[] = [];
  const logged: string[] = [];
  for (const part of text.split(/;|&&/)) {
    // `> /proc/1/fd/1`: written to the container's main process, so to its log.
    const toLog = />\s*\/proc\/1\/fd\/[12]\s*$/.test(part);
    const [cmd, ...args] = part
      .replace(/>.*$/, "")
      .trim()
      .replace(/^exec\s+/, "")
      .split(/\s+/);
    if (!cmd) continue;
    if (cmd === "echo") (toLog ? logged : lines).push(args.join(" "));
    else if (cmd === "true") continue;
    else if (cmd === "false") return { lines, logged, exitCode: 1 };
    else if (cmd === "exit") return { lines, logged, exitCode: Number(args[0] ?? 0) };
    else if (cmd === "sleep") return { lines, logged, exitCode: null };
    else return { lines, logged, exitCode: 127 };
  }
  return { lines, logged, exitCode: 0 };
}
