import { spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { LineReader } from "../core/lines.js";

/** How much of a failed child's stderr an ExecError keeps. */
const STDERR_TAIL_CHARS = 2000;

/** A failed subprocess: keeps argv, exit code (or the signal that ended it) and the tail of stderr. */
export class ExecError extends Error {
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderrTail: string;

  constructor(
    argv: readonly string[],
    exitCode: number | null,
    stderr: string,
    signal: NodeJS.Signals | null = null,
  ) {
    const tail = stderr.length > STDERR_TAIL_CHARS ? stderr.slice(-STDERR_TAIL_CHARS) : stderr;
    const how = exitCode !== null ? `exited with ${exitCode}` : `was ended by ${signal ?? "a signal"}`;
    super(`${argv[0]} ${how}: ${tail.trim().split("\n").slice(-3).join(" | ")}`);
    this.name = "ExecError";
    this.argv = argv;
    this.exitCode = exitCode;
    this.signal = signal;
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
    child.on("close", (code, signal) => {
      if (opts.onLine) {
        for (const l of [...lines.out.end(), ...lines.err.end()]) opts.onLine(l);
      }
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) resolve({ stdout, stderr });
      else reject(new ExecError(argv, code, stderr || stdout, signal));
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

export interface SpawnOptions {
  cwd?: string;
  /** Variables the child needs beyond {@link childEnv}'s. */
  env?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
  /** `pipe` when the caller writes the child's input (tar -x), else the child reads nothing. */
  stdin?: "pipe" | "ignore";
}

/** A child whose output is streamed (a tar piped into the engine) and whose exit is awaited. */
export interface Spawned {
  readonly stdout: Readable;
  /** The child's input (null unless `stdin: "pipe"`). */
  readonly stdin: Writable | null;
  /**
   * Settles when the child has exited: resolves on exit 0, rejects with an ExecError (argv, exit code or
   * signal, stderr's tail) otherwise. Not awaiting it is safe: its rejection is never left unhandled.
   */
  readonly done: Promise<void>;
  /** Ends the child if it still runs (its reader stopped early); `done` then rejects with the signal. */
  kill(): void;
}

/**
 * Starts argv (never a shell string) with its stdout as a stream for the caller to pipe, and watches its
 * exit: one place where a streamed child's failure (a file tar cannot read) becomes an error.
 */
export function spawnChecked(argv: readonly string[], opts: SpawnOptions = {}): Spawned {
  const [cmd, ...args] = argv;
  if (!cmd) throw new Error("spawnChecked: empty argv");
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: childEnv(opts.env),
    signal: opts.signal,
    stdio: ["pipe", "pipe", "pipe"],
  });
  if (opts.stdin !== "pipe") child.stdin.end();
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) =>
      code === 0 ? resolve() : reject(new ExecError(argv, code, stderr, signal)),
    );
  });
  done.catch(() => undefined);
  return {
    stdout: child.stdout,
    stdin: opts.stdin === "pipe" ? child.stdin : null,
    done,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    },
  };
}
