import type { ApiClient } from "./client.js";
import type { Io } from "./output.js";

/** What a command gets: the process's streams (or a test's), the API client, the command table. */
export interface Context extends Io {
  /** Created on first use, so `help` and usage errors work without a server. */
  client(): ApiClient;
  commands: readonly Command[];
  version: string;
}

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The full `--help` text. */
  help: string;
  /** Resolves with the exit code; throws CliError / UsageError for failures. */
  run(args: string[], ctx: Context): Promise<number>;
}
