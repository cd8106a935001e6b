/**
 * The CLI's failures. Exit code 1 is a failure (the API said no, a deploy failed, the server is
 * unreachable); 2 is a usage error (unknown command or flag, bad value, missing argument).
 */
export class CliError extends Error {
  readonly hint: string | undefined;
  readonly exitCode: 1 | 2;

  constructor(message: string, hint?: string, exitCode: 1 | 2 = 1) {
    super(message);
    this.name = "CliError";
    this.hint = hint;
    this.exitCode = exitCode;
  }
}

/** An error answer of the API: `{ "error": { "code", "message", "hint" } }` with its HTTP status. */
export class ApiError extends CliError {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string, hint?: string) {
    super(message, hint, 1);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** The server could not be reached (`connected` false), or the connection broke while following. */
export class ConnectionError extends CliError {
  readonly connected: boolean;

  constructor(message: string, hint: string | undefined, connected: boolean) {
    super(message, hint, 1);
    this.name = "ConnectionError";
    this.connected = connected;
  }
}

export interface UsageErrorOptions {
  /** The command whose usage applies (`pier <command> --help`); none for the top level. */
  command?: string;
  hint?: string;
  /** Print the list of commands after the message (unknown command or flag). */
  listCommands?: boolean;
}

/** Bad invocation: exits 2. Each problem is printed on its own `pier:` line. */
export class UsageError extends CliError {
  readonly problems: readonly string[];
  readonly command: string | undefined;
  readonly listCommands: boolean;

  constructor(problems: string | readonly string[], opts: UsageErrorOptions = {}) {
    const list = typeof problems === "string" ? [problems] : problems;
    super(list.join("; "), opts.hint, 2);
    this.name = "UsageError";
    this.problems = list;
    this.command = opts.command;
    this.listCommands = opts.listCommands ?? false;
  }
}
