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
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";
import type { CliReplyOf } from "../schemas.js";

/** `default` puts a limit back to the server's default (null in the API). */
const orDefault = <T extends z.ZodType>(schema: T) =>
  z.union([z.literal("default").transform(() => null), schema]).optional();

export const limits: Command = {
  name: "limits",
  summary: "Show an app's ceiling (largest flavor, instances, memory); an admin sets it",
  help: `Usage: pier limits [show] [--app <name|id>] [--format human|json]
       pier limits set [--max-flavor F] [--max-instances N] [--max-memory MiB] [--app <name|id>]

  show   the ceiling in force (what an admin set for the app, else the server's default),
         the app's size now, and the caps on variables (the same for every app)
  set    an admin token only: the app's largest flavor (instances and builds), its instance
         count, and its memory (instances x the flavor's memory). \`default\` as a value puts
         that limit back to the server's default (PIER_APP_MAX_*)

A scale, a create or a deploy that asks for more is refused (LIMIT_EXCEEDED) and changes nothing.

Options:
  -a, --app <name|id>        the app (default: the one in .pier.json, searched upwards)
      --max-flavor <F>       pico nano XS S M L XL, or default
      --max-instances <N>    1..20, or default
      --max-memory <MiB>     at least 256, or default
      --format human|json    output format (default human)
  -h, --help                 show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("limits", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      "max-flavor": { type: "string" },
      "max-instances": { type: "string" },
      "max-memory": { type: "string" },
    });
    const [sub = "show", ...rest] = positionals;
    takePositionals("limits", rest, 0, 0, "");
    const f = checkFlags(
      "limits",
      z.object({
        format: humanJson,
        "max-flavor": orDefault(flavorFlag),
        "max-instances": orDefault(countFlag(1)),
        "max-memory": orDefault(countFlag(256)),
      }),
      values,
    );
    const body = {
      ...(f["max-flavor"] !== undefined ? { maxFlavor: f["max-flavor"] } : {}),
      ...(f["max-instances"] !== undefined ? { maxInstances: f["max-instances"] } : {}),
      ...(f["max-memory"] !== undefined ? { maxMemoryMiB: f["max-memory"] } : {}),
    };
    if (sub !== "show" && sub !== "set")
      throw new UsageError(`unknown limits command '${sub}' (expected show, set)`, { command: "limits" });
    if (sub === "show" && Object.keys(body).length > 0)
      throw new UsageError("--max-* flags apply to `limits set` only", { command: "limits" });
    if (sub === "set" && Object.keys(body).length === 0)
      throw new UsageError("nothing to set: pass --max-flavor, --max-instances or --max-memory", {
        command: "limits",
      });
    const app = resolveApp(values.app, ctx.cwd, "limits");
    const view =
      sub === "set"
        ? await ctx.client().call("PATCH /v1/apps/:app/limits", { params: { app: app.ref }, body })
        : await ctx.client().call("GET /v1/apps/:app/limits", { params: { app: app.ref } });
    if (f.format === "json") ctx.out(json(view));
    else ctx.out(render(view));
    return 0;
  },
};

function render(v: CliReplyOf<"GET /v1/apps/:app/limits">): string {
  const source = (k: keyof typeof v.set) => (v.set[k] === null ? "server default" : "set by an admin");
  const rows = [
    ["largest flavor", v.limits.maxFlavor, source("maxFlavor"), `${v.used.flavor}`],
    ["instances", String(v.limits.maxInstances), source("maxInstances"), String(v.used.instances)],
    ["memory (MiB)", String(v.limits.maxMemoryMiB), source("maxMemoryMiB"), String(v.used.memoryMiB)],
  ];
  const vars = v.variables;
  return `${table(["LIMIT", "VALUE", "FROM", "USED"], rows)}\nVariables: ${vars.count} of at most ${vars.maxCount}, ${vars.totalBytes} of at most ${vars.maxTotalBytes} bytes; one value at most ${vars.maxValueBytes} bytes.\n`;
}
