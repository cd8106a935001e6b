import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { awaitDeployment, reportDeployment } from "../follow.js";
import { resolveApp } from "../link-file.js";

export const exitOnFlag = z
  .enum(["deploy-start", "deploy-end"], { error: "must be deploy-start or deploy-end" })
  .default("deploy-end");

export const restart: Command = {
  name: "restart",
  summary: "Redeploy the app's current commit and follow the deployment",
  help: `Usage: pier restart [--app <name|id>] [--without-cache] [--exit-on deploy-start|deploy-end]

Redeploys the current commit. By default follows the deployment's log on stderr until it ends,
and exits 1 unless it succeeded (CI can rely on the exit code).

Options:
  -a, --app <name|id>                     the app (default: the one in .pier.json, searched upwards)
      --without-cache                     rebuild from scratch
      --exit-on deploy-start|deploy-end   return once the deployment is queued, or when it ends
                                          (default deploy-end)
      --format human|json                 output format (default human; json prints the Deployment)
  -h, --help                              show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("restart", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      "without-cache": { type: "boolean" },
      "exit-on": { type: "string" },
    });
    takePositionals("restart", positionals, 0, 0, "");
    const f = checkFlags(
      "restart",
      z.object({ format: humanJson, "exit-on": exitOnFlag, "without-cache": z.boolean().default(false) }),
      values,
    );
    const app = resolveApp(values.app, ctx.cwd, "restart");

    const queued = await ctx.client().call("POST /v1/apps/:app/deployments", {
      params: { app: app.ref },
      body: { withoutCache: f["without-cache"] },
    });
    const final = await awaitDeployment(ctx, app.ref, queued, f["exit-on"]);
    reportDeployment(ctx, f.format, app.ref, final);
    return 0;
  },
};
