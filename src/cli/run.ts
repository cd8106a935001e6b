import { splitCommand } from "./args.js";
import type { ApiClient } from "./client.js";
import type { Command, Context } from "./command.js";
import { globalHelp } from "./commands/help.js";
import { COMMANDS } from "./commands/index.js";
import { UsageError } from "./errors.js";
import { type Io, renderError } from "./output.js";

export interface RunOptions {
  io: Io;
  /** Builds the API client on first use (reads the CLI config). */
  makeClient: () => ApiClient;
  version: string;
  commands?: readonly Command[];
}

/** `--help` / `-h` among the arguments before `--`. */
const wantsHelp = (args: readonly string[]): boolean => {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
};

/** Runs `pier <argv>` and resolves with the exit code; every failure is rendered on stderr. */
export async function run(argv: readonly string[], opts: RunOptions): Promise<number> {
  const commands = opts.commands ?? COMMANDS;
  const names = commands.map((c) => c.name);
  let client: ApiClient | undefined;
  const ctx: Context = {
    ...opts.io,
    commands,
    version: opts.version,
    client: () => {
      client ??= opts.makeClient();
      return client;
    },
  };

  try {
    const { command: name, rest } = splitCommand(argv);
    if (name === undefined) {
      if (rest.includes("--version") || rest.includes("-v")) {
        ctx.out(`pier ${opts.version}\n`);
        return 0;
      }
      if (wantsHelp(rest)) {
        ctx.out(globalHelp(commands));
        return 0;
      }
      const flag = rest[0];
      throw new UsageError(
        flag === undefined ? "no command given" : `unknown option '${flag}' (no command given)`,
        {
          listCommands: true,
        },
      );
    }
    const command = commands.find((c) => c.name === name);
    if (!command) {
      const close = names.filter((n) => n.startsWith(name.slice(0, 3)));
      throw new UsageError(`unknown command '${name}'`, {
        listCommands: true,
        hint: close.length > 0 ? `did you mean ${close.join(" or ")}?` : undefined,
      });
    }
    if (wantsHelp(rest)) {
      ctx.out(command.help);
      return 0;
    }
    return await command.run(rest, ctx);
  } catch (e) {
    opts.io.err(renderError(e, names));
    return e instanceof UsageError ? 2 : 1;
  }
}
