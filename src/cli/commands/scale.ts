import { z } from "zod";
import {
  APP,
  checkFlags,
  countFlag,
  FORMAT,
  flavorFlag,
  HELP,
  humanJson,
  parseFlags,
  takePositionals,
} from "../args.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { awaitDeployment, reportDeployment } from "../follow.js";
import { resolveApp } from "../link-file.js";
import { json } from "../output.js";
import { exitOnFlag } from "./restart.js";

export const scale: Command = {
  name: "scale",
  summary: "Set an app's instance count, flavor and build flavor",
  help: `Usage: pier scale [--app <name|id>] [--instances N] [--flavor F] [--build-flavor F]

Changes the app's size. A running app is redeployed with the new size; that deployment is
followed like \`pier restart\` (exit 1 unless it succeeds).

Options:
  -a, --app <name|id>                     the app (default: the one in .pier.json, searched upwards)
      --instances <N>                     number of instances
      --flavor <F>                        instance size: pico nano XS S M L XL
      --build-flavor <F>                  size of the build container
      --exit-on deploy-start|deploy-end   when a redeploy starts: return once it is queued, or when
                                          it ends (default deploy-end)
      --format human|json                 output format (default human; json prints
                                          { app, deployment })
  -h, --help                              show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("scale", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      instances: { type: "string" },
      flavor: { type: "string" },
      "build-flavor": { type: "string" },
      "exit-on": { type: "string" },
    });
    takePositionals("scale", positionals, 0, 0, "");
    const f = checkFlags(
      "scale",
      z.object({
        format: humanJson,
        "exit-on": exitOnFlag,
        instances: countFlag(1).optional(),
        flavor: flavorFlag.optional(),
        "build-flavor": flavorFlag.optional(),
      }),
      values,
    );
    if (f.instances === undefined && f.flavor === undefined && f["build-flavor"] === undefined) {
      throw new UsageError("nothing to change: pass --instances, --flavor or --build-flavor", {
        command: "scale",
      });
    }
    const app = resolveApp(values.app, ctx.cwd, "scale");

    const answer = await ctx.client().call("PATCH /v1/apps/:app", {
      params: { app: app.ref },
      body: { instances: f.instances, flavor: f.flavor, buildFlavor: f["build-flavor"] },
    });
    const a = answer.app;
    const size = `${a.instances} × ${a.flavor}, builds on ${a.buildFlavor}`;
    if (!answer.deployment) {
      if (f.format === "json") ctx.out(json(answer));
      else ctx.out(`Scaled app ${a.name}: ${size}. It takes effect at the next deploy.\n`);
      return 0;
    }
    ctx.err(
      `Scaling app ${a.name} to ${f.instances ?? a.instances} × ${f.flavor ?? a.flavor}; redeploying (the new size is recorded when the deploy succeeds).\n`,
    );
    const final = await awaitDeployment(ctx, app.ref, answer.deployment, f["exit-on"]);
    reportDeployment(ctx, f.format, app.ref, final, { ...answer, deployment: final });
    return 0;
  },
};
