import { HELP, parseFlags, takePositionals } from "../args.js";
import type { Command, Context } from "../command.js";
import { UsageError } from "../errors.js";

/** The top-level usage: every command with its summary, the shared options, the settings. */
export function globalHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return `Usage: pier <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join("\n")}

Options of commands that act on an app or print data:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format; data goes to stdout, progress and errors to stderr
  -h, --help                a command's options: pier <command> --help
      --version             pier's version

Exit codes: 0 success, 1 failure (API error, failed deployment), 2 usage error.

Finding the server: PIER_URL and PIER_TOKEN when set (CI, a remote server); otherwise
<PIER_DATA_DIR>/cli.json (default ~/.pier/cli.json), written by \`pier server\` (\`npm start\`).
`;
}

export const help: Command = {
  name: "help",
  summary: "Show the commands, or one command's options",
  help: `Usage: pier help [command]

Shows the list of commands, or the options of one command (same as pier <command> --help).
`,
  async run(args: string[], ctx: Context) {
    const { positionals } = parseFlags("help", args, { ...HELP });
    const [topic] = takePositionals("help", positionals, 0, 1, "");
    if (topic === undefined) {
      ctx.out(globalHelp(ctx.commands));
      return 0;
    }
    const command = ctx.commands.find((c) => c.name === topic);
    if (!command) throw new UsageError(`unknown command '${topic}'`, { listCommands: true });
    ctx.out(command.help);
    return 0;
  },
};
