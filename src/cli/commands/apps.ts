import { z } from "zod";
import { checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import { apiPath } from "../client.js";
import type { Command } from "../command.js";
import { json, table } from "../output.js";
import { AppSchema } from "../schemas.js";

export const apps: Command = {
  name: "apps",
  summary: "List apps",
  help: `Usage: pier apps [--format human|json]

Lists every app: name, id, runtime, size, and URL.

Options:
      --format human|json   output format (default human; json prints the App objects)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("apps", args, { ...HELP, ...FORMAT });
    takePositionals("apps", positionals, 0, 0, "");
    const { format } = checkFlags("apps", z.object({ format: humanJson }), values);

    const list = await ctx.client().call("GET", apiPath("apps"), z.array(AppSchema));
    if (format === "json") {
      ctx.out(json(list));
    } else if (list.length === 0) {
      ctx.err("No apps yet. Create one with: pier create --type node <name>\n");
    } else {
      ctx.out(
        table(
          ["NAME", "ID", "TYPE", "FLAVOR", "INSTANCES", "STATE", "URL"],
          list.map((a) => [
            a.name,
            a.id,
            a.type,
            a.buildFlavor === a.flavor ? a.flavor : `${a.flavor} (build ${a.buildFlavor})`,
            String(a.instances),
            a.stopped ? "stopped" : a.task ? "task" : "active",
            a.url ?? "",
          ]),
        ),
      );
    }
    return 0;
  },
};
