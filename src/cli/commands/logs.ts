import { z } from "zod";
import { splitLines } from "../../core/lines.js";
import {
  APP,
  checkFlags,
  countFlag,
  FORMAT,
  HELP,
  humanJson,
  parseFlags,
  takePositionals,
  timeFlag,
} from "../args.js";
import type { Command, Context } from "../command.js";
import { UsageError } from "../errors.js";
import { followDeployment } from "../follow.js";
import { followRuntimeLogs } from "../follow-runtime.js";
import { resolveApp } from "../link-file.js";
import { json, ndjson } from "../output.js";
import type { RuntimeLogLine } from "../schemas.js";

const flagsSchema = z.object({
  format: humanJson,
  deployment: z.string().trim().min(1, "must be a deployment id or `latest`").optional(),
  since: timeFlag.optional(),
  until: timeFlag.optional(),
  tail: countFlag(0).optional(),
  follow: z.boolean().default(false),
});
type Flags = z.output<typeof flagsSchema>;

const runtimeLine = (l: RuntimeLogLine): string => `${l.at} [${l.instance}] ${l.line}\n`;

export const logs: Command = {
  name: "logs",
  summary: "Show runtime logs, or a deployment's build/deploy log",
  help: `Usage: pier logs [--app <name|id>] [--since T] [--until T] [--tail N] [-f]
       pier logs [--app <name|id>] --deployment <id|latest> [-f]

Without --deployment: the runtime logs of every instance, as \`<at> [<instance>] <line>\`.
With --deployment: that deployment's build and deploy log.

Options:
  -a, --app <name|id>          the app (default: the one in .pier.json, searched upwards from here)
      --deployment <id|latest> show a deployment's log instead of the runtime logs
      --since <T>              runtime lines from T: an ISO time or a duration back (10m, 2h, 1d)
      --until <T>              runtime lines up to T
      --tail <N>               only the last N runtime lines (0 with -f: only new ones)
  -f, --follow                 keep printing new lines as they come, from every instance the app
                               runs, across deploys and restarts, until the app is deleted or
                               Ctrl-C; a server that restarts is followed again once it answers
                               (a deployment's log ends with the deployment)
      --format human|json      output format (default human; json prints the array of line
                               objects, or one JSON object per line with --follow)
  -h, --help                   show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("logs", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      deployment: { type: "string" },
      since: { type: "string" },
      until: { type: "string" },
      tail: { type: "string" },
      follow: { type: "boolean", short: "f" },
    });
    takePositionals("logs", positionals, 0, 0, "");
    const f = checkFlags("logs", flagsSchema, values);
    if (f.deployment !== undefined && (f.since ?? f.until ?? f.tail) !== undefined) {
      throw new UsageError("--since, --until and --tail apply to runtime logs, not to --deployment", {
        command: "logs",
      });
    }
    const app = resolveApp(values.app, ctx.cwd, "logs");
    if (f.deployment !== undefined) return deploymentLog(ctx, app.ref, f.deployment, f);
    return runtimeLogs(ctx, app.ref, f);
  },
};

async function deploymentLog(ctx: Context, app: string, ref: string, f: Flags): Promise<number> {
  const client = ctx.client();
  // docs/api.md promises `latest` for GET .../deployments/:id only, so resolve it to an id first.
  const id =
    ref === "latest"
      ? (await client.call("GET /v1/apps/:app/deployments/:id", { params: { app, id: "latest" } })).id
      : ref;

  if (!f.follow) {
    const text = await client.call("GET /v1/apps/:app/deployments/:id/log", { params: { app, id } });
    if (f.format === "json") {
      const lines = splitLines(text);
      ctx.out(json(lines.map((line) => ({ line }))));
    } else {
      ctx.out(text === "" || text.endsWith("\n") ? text : `${text}\n`);
    }
    return 0;
  }

  const final = await followDeployment(ctx, app, id, (l) =>
    ctx.out(f.format === "json" ? ndjson(l) : `${l.line}\n`),
  );
  ctx.err(`Deployment ${final.id} ${final.state}${final.reason ? `: ${final.reason}` : ""}.\n`);
  return 0;
}

async function runtimeLogs(ctx: Context, app: string, f: Flags): Promise<number> {
  const client = ctx.client();
  const query = { since: f.since, until: f.until, tail: f.tail };

  if (!f.follow) {
    const { lines } = await client.call("GET /v1/apps/:app/logs", { params: { app }, query });
    if (f.format === "json") ctx.out(json(lines));
    else if (lines.length === 0) ctx.err("No log lines in that range.\n");
    else ctx.out(lines.map(runtimeLine).join(""));
    return 0;
  }

  return followRuntimeLogs(ctx, app, { since: f.since, tail: f.tail }, (l) =>
    ctx.out(f.format === "json" ? ndjson(l) : runtimeLine(l)),
  );
}
