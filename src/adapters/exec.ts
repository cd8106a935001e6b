import { spawn } from "node:child_process";
import { LineReader } from "../core/lines.js";

/** A failed subprocess: keeps argv, exit code and the tail of stderr. */
export class ExecError extends Error {
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly stderrTail: string;

  constructor(argv: readonly string[], exitCode: number | null, stderr: string) {
    const tail = stderr.length > 2000 ? stderr.slice(-2000) : stderr;
    super(
      `${argv[0]} exited with ${exitCode ?? "a signal"}: ${tail.trim().split("\n").slice(-3).join(" | ")}`,
    );
    this.name = "ExecError";
    this.argv = argv;
    this.exitCode = exitCode;
    this.stderrTail = tail;
  }
}

/**
 * The variables of the server's environment a child process (HAProxy, git, tar, ssh-keygen) sees: what a
 * program needs to find its tools, its home, its language and time zone and the system's certificates.
 * Nothing else passes: not PIER_ADMIN_TOKEN, not a cloud provider's credentials the server was started
 * with. A child's own needs are given as `extra`.
 */
export const CHILD_ENV_NAMES: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TMPDIR",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
];

/** The environment of a child process: {@link CHILD_ENV_NAMES} and `LC_*` from `parent`, then `extra`. */
export function childEnv(
  extra: Readonly<Record<string, string>> = {},
  parent: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && (CHILD_ENV_NAMES.includes(name) || name.startsWith("LC_"))) env[name] = value;
  }
  return Object.assign(env, extra);
}

export interface ExecOptions {
  cwd?: string;
  /** Variables the child needs beyond {@link childEnv}'s (the server's own environment is not passed). */
  env?: Readonly<Record<string, string>>;
  input?: string | Buffer;
  signal?: AbortSignal;
  /** Receives output lines (stdout and stderr) as they come. */
  onLine?: (line: string) => void;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
}

/** Runs argv (never a shell string) and resolves with its output, or rejects with ExecError. */
export function exec(argv: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
  const [cmd, ...args] = argv;
  if (!cmd) return Promise.reject(new Error("exec: empty argv"));
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: childEnv(opts.env),
      signal: opts.signal,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const lines = { out: new LineReader(), err: new LineReader() };
    const feed = (which: "out" | "err", chunk: Buffer) => {
      if (opts.onLine) for (const l of lines[which].push(chunk)) opts.onLine(l);
    };
    child.stdout.on("data", (c: Buffer) => {
      out.push(c);
      feed("out", c);
    });
    child.stderr.on("data", (c: Buffer) => {
      err.push(c);
      feed("err", c);
    });
    child.on("error", (e) => reject(e));
    child.on("close", (code) => {
      if (opts.onLine) {
        for (const l of [...lines.out.end(), ...lines.err.end()]) opts.onLine(l);
      }
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) resolve({ stdout, stderr });
      else reject(new ExecError(argv, code, stderr || stdout));
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}
