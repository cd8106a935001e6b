import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { resolveApp } from "../link-file.js";
import { json } from "../output.js";

export const stop: Command = {
  name: "stop",
  summary: "Stop an app's instances",
  help: `Usage: pier stop [--app <name|id>] [--format human|json]

Stops every instance of the app; its route answers 503 until the next deploy or \`pier restart\`.

Options:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format (default human; json prints the App)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("stop", args, { ...HELP, ...APP, ...FORMAT });
    takePositionals("stop", positionals, 0, 0, "");
    const { format } = checkFlags("stop", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "stop");

    const stopped = await ctx.client().call("POST /v1/apps/:app/stop", { params: { app: app.ref } });
    if (format === "json") ctx.out(json(stopped));
    else ctx.out(`Stopped app ${stopped.name}. Start it again with: pier restart\n`);
    return 0;
  },
};
