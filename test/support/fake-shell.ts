// The fake engine's containers run their commands in this tiny shell (test/support/fake-engine.ts), so the
// conformance suite's commands mean the same on the fake as on a real engine.

/** What a container's command does here: the lines it prints, and its exit code (null: it keeps running). */
export interface Run {
  lines: string[];
  /** What it wrote to the container's main process (`> /proc/1/fd/1`): the container's log. */
  logged: string[];
  exitCode: number | null;
  /** What `trap 'BODY' TERM` set: run when the instance is sent SIGTERM (null: it just ends, 143). */
  onTerm: string | null;
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
 * `exit N`, `sleep` (keeps running; `sleep N & wait` too), `trap 'BODY' TERM` (BODY runs at SIGTERM), joined
 * by `;` or `&&` (outside quotes) under `sh -c`. Anything else is not found (127), as on an image without
 * it. Files are `files`' (none by default).
 */
export function interpret(argv: readonly string[], files: ShellFiles = NO_FILES): Run {
  const [cmd, ...rest] = argv;
  if ((cmd === "sh" || cmd === "/bin/sh") && rest[0] === "-c") return script(rest[1] ?? "", files);
  return script(argv.join(" "), files);
}

/** The commands of a script: split at `;` and `&&` outside quotes. */
function commands(text: string): string[] {
  const parts = [""];
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) quote = c === quote ? null : quote;
    else if (c === "'" || c === '"') quote = c;
    else if (c === ";" || (c === "&" && text[i + 1] === "&")) {
      if (c === "&") i++;
      parts.push("");
      continue;
    }
    parts[parts.length - 1] += c;
  }
  return parts;
}

export function script(text: string, files: ShellFiles = NO_FILES): Run {
  const lines: string[] = [];
  const logged: string[] = [];
  let onTerm: string | null = null;
  const ended = (exitCode: number | null): Run => ({ lines, logged, exitCode, onTerm });
  for (const part of commands(text)) {
    const trap = /^\s*trap\s+(['"])(.*)\1\s+(TERM|SIGTERM)\s*$/.exec(part);
    if (trap) {
      onTerm = trap[2] ?? null;
      continue;
    }
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
      if (!files.write(into, `${args.join(" ")}\n`)) return ended(1);
    } else if (cmd === "echo") (toLog ? logged : lines).push(args.join(" "));
    else if (cmd === "cat") {
      const got = files.read(args[0] ?? "");
      if (got === undefined) return ended(1);
      lines.push(...got.replace(/\n$/, "").split("\n"));
    } else if (cmd === "true") continue;
    else if (cmd === "false") return ended(1);
    else if (cmd === "exit") return ended(Number(args[0] ?? 0));
    else if (cmd === "sleep") return ended(null);
    else return ended(127);
  }
  return ended(0);
}
