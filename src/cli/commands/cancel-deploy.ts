import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { resolveApp } from "../link-file.js";
import { json } from "../output.js";

export const cancelDeploy: Command = {
  name: "cancel-deploy",
  summary: "Cancel the app's deployment under way",
  help: `Usage: pier cancel-deploy [--app <name|id>] [--format human|json]

Cancels the deployment under way; the running release keeps serving.

Options:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format (default human; json prints the Deployment)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("cancel-deploy", args, { ...HELP, ...APP, ...FORMAT });
    takePositionals("cancel-deploy", positionals, 0, 0, "");
    const { format } = checkFlags("cancel-deploy", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "cancel-deploy");

    const d = await ctx.client().call("POST /v1/apps/:app/deployments/:id/cancel", {
      params: { app: app.ref, id: "current" },
    });
    if (format === "json") ctx.out(json(d));
    else ctx.out(`Deployment ${d.id}: ${d.state}.\n`);
    return 0;
  },
};
