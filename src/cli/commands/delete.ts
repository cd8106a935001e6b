import { APP, HELP, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";

export const del: Command = {
  name: "delete",
  summary: "Delete an app (asks for its name, or --yes)",
  help: `Usage: pier delete [--app <name|id>] [--yes]

Deletes the app: its instances, images, git repository and routes. This cannot be undone.
Without --yes, asks you to type the app's name (stdin must be a terminal).

Options:
  -a, --app <name|id>   the app (default: the one in .pier.json, searched upwards from here)
  -y, --yes             do not ask (scripts, CI)
  -h, --help            show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("delete", args, {
      ...HELP,
      ...APP,
      yes: { type: "boolean", short: "y" },
    });
    takePositionals("delete", positionals, 0, 0, "");
    const app = resolveApp(values.app, ctx.cwd, "delete");

    let name = app.ref;
    if (!values.yes) {
      if (!ctx.stdinIsTTY) {
        throw new UsageError("refusing to delete without confirmation: stdin is not a terminal", {
          command: "delete",
          hint: `pass --yes to delete app ${app.ref} without being asked`,
        });
      }
      const found = await ctx.client().call("GET /v1/apps/:app", { params: { app: app.ref } });
      name = found.name;
      ctx.err(`This deletes app ${found.name} (${found.id}): instances, images, git repository, routes.\n`);
      const answer = await ctx.prompt(`Type the app's name to confirm: `);
      if (answer?.trim() !== found.name) {
        throw new CliError(`confirmation did not match ${found.name}; nothing was deleted`);
      }
    }

    await ctx.client().call("DELETE /v1/apps/:app", { params: { app: app.ref } });
    ctx.out(`Deleted app ${name}.\n`);
    if (app.linkPath)
      ctx.err(`Note: ${app.linkPath} still names this app; remove it or run \`pier link\`.\n`);
    return 0;
  },
};
