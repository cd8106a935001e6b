import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { awaitDeployment, reportDeployment } from "../follow.js";
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";
import { ReleaseSchema as ReleaseRecord } from "../schemas.js";
import { exitOnFlag } from "./restart.js";

/** The fields `pier releases` shows (and prints with --format json), from the table's Release. */
const ReleaseSchema = z.object(
  ReleaseRecord.pick({
    id: true,
    number: true,
    deploymentId: true,
    image: true,
    commit: true,
    createdAt: true,
    current: true,
  }).shape,
);

export const releases: Command = {
  name: "releases",
  summary: "List the app's releases (each successful deploy)",
  help: `Usage: pier releases [--app <name|id>] [--format human|json]

Lists the releases, newest first; the one serving is marked. The last 5 keep their image, so
\`pier rollback <vN>\` needs no rebuild.

Options:
  -a, --app <name|id>   the app (default: the one in .pier.json, searched upwards)
      --format human|json
  -h, --help            show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("releases", args, { ...HELP, ...APP, ...FORMAT });
    takePositionals("releases", positionals, 0, 0, "");
    const { format } = checkFlags("releases", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "releases");
    const all = await ctx.client().call("GET /v1/apps/:app/releases", { params: { app: app.ref } });
    const list = z.array(ReleaseSchema).parse(all);
    if (format === "json") ctx.out(json(list));
    else {
      ctx.out(
        table(
          ["RELEASE", "COMMIT", "DEPLOYMENT", "CREATED", ""],
          list.map((r) => [
            `v${r.number}`,
            r.commit.slice(0, 8),
            r.deploymentId,
            r.createdAt,
            r.current ? "current" : "",
          ]),
        ),
      );
    }
    return 0;
  },
};

export const rollback: Command = {
  name: "rollback",
  summary: "Redeploy an earlier release (through the same health gate)",
  help: `Usage: pier rollback <vN> [--app <name|id>] [--exit-on deploy-start|deploy-end]

Redeploys release N's image with the app's current variables. It goes through the health gate
like any deploy; on failure the serving release stays. Exits 1 unless the deployment succeeds.

Options:
  -a, --app <name|id>                     the app (default: the one in .pier.json, searched upwards)
      --exit-on deploy-start|deploy-end   return once queued, or when it ends (default deploy-end)
      --format human|json
  -h, --help                              show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("rollback", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      "exit-on": { type: "string" },
    });
    const [release] = takePositionals("rollback", positionals, 1, 1, "<vN>");
    const f = checkFlags("rollback", z.object({ format: humanJson, "exit-on": exitOnFlag }), values);
    const app = resolveApp(values.app, ctx.cwd, "rollback");
    const queued = await ctx.client().call("POST /v1/apps/:app/releases/:number/rollback", {
      params: { app: app.ref, number: release as string },
    });
    const final = await awaitDeployment(ctx, app.ref, queued, f["exit-on"]);
    reportDeployment(ctx, f.format, app.ref, final);
    return 0;
  },
};
