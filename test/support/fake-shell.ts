// The fake engine's containers run their commands in this tiny shell (test/support/fake-engine.ts), so the
// conformance suite's commands mean the same on the fake as on a real engine.

/** What a container's command does here: the lines it prints, and its exit code (null: it keeps running). */
export interface Run {
  lines: string[];
  /** What it wrote to the container's main process (`> /proc/1/fd/1`): the container's log. */
  logged: string[];
  exitCode: number | null;
}

/** The files a command sees (an instance's buckets): a path's text, or undefined when there is none. */
export interface ShellFiles {
  read(path: string): string | undefined;
  /** False when the path cannot be written (`echo` fails). */
  write(path: string, text: string): boolean;
}

// No file to read; what is written goes nowhere (a scratch place nobody reads back).
const NO_FILES: ShellFiles = { read: () => undefined, write: () => true };

/**
 * A tiny shell for commands given as argv: `echo` (also `echo TEXT > FILE`), `cat FILE`, `true`, `false`,
 * `exit N`, `sleep` (keeps running), joined by `;` or `&&` under `sh -c`. Anything else is not found
 * (127), as on an image without it. Files are `files`' (none by default).
 */
export function interpret(argv: readonly string[], files: ShellFiles = NO_FILES): Run {
  const [cmd, ...rest] = argv;
  if ((cmd === "sh" || cmd === "/bin/sh") && rest[0] === "-c") return script(rest[1] ?? "", files);
  return script(argv.join(" "), files);
}

function script(text: string, files: ShellFiles): Run {
  const lines: string[] = [];
  const logged: string[] = [];
  for (const part of text.split(/;|&&/)) {
    // `> /proc/1/fd/1`: written to the container's main process, so to its log.
    const toLog = />\s*\/proc\/1\/fd\/[12]\s*$/.test(part);
    const into = toLog ? null : (/>\s*(\S+)\s*$/.exec(part)?.[1] ?? null);
    const [cmd, ...args] = part
      .replace(/>.*$/, "")
      .trim()
      .replace(/^exec\s+/, "")
      .split(/\s+/);
    if (!cmd) continue;
    if (cmd === "echo" && into !== null) {
      if (!files.write(into, `${args.join(" ")}\n`)) return { lines, logged, exitCode: 1 };
    } else if (cmd === "echo") (toLog ? logged : lines).push(args.join(" "));
    else if (cmd === "cat") {
      const got = files.read(args[0] ?? "");
      if (got === undefined) return { lines, logged, exitCode: 1 };
      lines.push(...got.replace(/\n$/, "").split("\n"));
    } else if (cmd === "true") continue;
    else if (cmd === "false") return { lines, logged, exitCode: 1 };
    else if (cmd === "exit") return { lines, logged, exitCode: Number(args[0] ?? 0) };
    else if (cmd === "sleep") return { lines, logged, exitCode: null };
    else return { lines, logged, exitCode: 127 };
  }
  return { lines, logged, exitCode: 0 };
}
