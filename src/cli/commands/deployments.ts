import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";

export const deployments: Command = {
  name: "deployments",
  summary: "List an app's deployments, newest first",
  help: `Usage: pier deployments [--app <name|id>] [--format human|json]

Lists the app's deployments, newest first: id, state, cause, commit, times and failure reason.
See one deployment's log with: pier logs --deployment <id>

Options:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format (default human; json prints the Deployment objects)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("deployments", args, { ...HELP, ...APP, ...FORMAT });
    takePositionals("deployments", positionals, 0, 0, "");
    const { format } = checkFlags("deployments", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "deployments");

    const list = await ctx.client().call("GET /v1/apps/:app/deployments", { params: { app: app.ref } });
    if (format === "json") {
      ctx.out(json(list));
    } else if (list.length === 0) {
      ctx.err("No deployments yet: push to the app's git URL, or run `pier restart` after a first push.\n");
    } else {
      ctx.out(
        table(
          ["ID", "STATE", "CAUSE", "COMMIT", "CREATED", "FINISHED", "REASON"],
          list.map((d) => [
            d.id,
            d.state,
            d.cause,
            (d.commit ?? "").slice(0, 8),
            d.createdAt,
            d.finishedAt ?? "",
            d.reason ?? "",
          ]),
        ),
      );
    }
    return 0;
  },
};
