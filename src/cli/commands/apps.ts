import { z } from "zod";
import { checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { json, table } from "../output.js";

export const apps: Command = {
  name: "apps",
  summary: "List apps",
  help: `Usage: pier apps [--format human|json]

Lists every app: name, id, runtime, size, state (running, down, deploying, not deployed, stopped), the
release it serves, and URL.

Options:
      --format human|json   output format (default human; json prints the App objects)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("apps", args, { ...HELP, ...FORMAT });
    takePositionals("apps", positionals, 0, 0, "");
    const { format } = checkFlags("apps", z.object({ format: humanJson }), values);

    const list = await ctx.client().call("GET /v1/apps");
    if (format === "json") {
      ctx.out(json(list));
    } else if (list.length === 0) {
      ctx.err("No apps yet. Create one with: pier create --type node <name>\n");
    } else {
      ctx.out(
        table(
          ["NAME", "ID", "TYPE", "FLAVOR", "INSTANCES", "STATE", "RELEASE", "URL"],
          list.map((a) => [
            a.name,
            a.id,
            a.task ? `${a.type} (task)` : a.type,
            a.buildFlavor === a.flavor ? a.flavor : `${a.flavor} (build ${a.buildFlavor})`,
            // Running instances of the current release, of how many the app has.
            a.status?.release ? `${a.status.running}/${a.instances}` : String(a.instances),
            a.status === undefined
              ? // An older server: no status in its list.
                a.stopped
                ? "stopped"
                : "active"
              : (a.status?.state ?? "unknown (the engine did not answer)"),
            a.status?.release ? `v${a.status.release.number}` : "-",
            a.url ?? "",
          ]),
        ),
      );
    }
    return 0;
  },
};
