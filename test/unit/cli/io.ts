import type { Io } from "../../../src/cli/output.js";

/** An Io that records stdout and stderr, for in-process runs of the CLI. */
export function memoryIo(opts: { cwd?: string; stdin?: string; tty?: boolean; answer?: string } = {}) {
  const io = {
    stdout: "",
    stderr: "",
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
    cwd: opts.cwd ?? process.cwd(),
    stdinIsTTY: opts.tty ?? false,
    readStdin: async () => opts.stdin ?? "",
    prompt: async (question: string) => {
      io.stderr += question;
      return opts.answer ?? null;
    },
  } satisfies Io & { stdout: string; stderr: string };
  return io;
}
