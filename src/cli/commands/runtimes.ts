import { z } from "zod";
import { checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { json, table } from "../output.js";

export const runtimes: Command = {
  name: "runtimes",
  summary: "List the versions of a runtime (node)",
  help: `Usage: pier runtimes node [--all] [--format human|json]

Lists the Node.js versions Pier can build with (from the npm registry), newest first: one line per
major with its newest release, LTS lines and end-of-life lines marked. --all lists every release.

Options:
      --all                 every release, not only the newest of each major
      --format human|json   output format (default human)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("runtimes", args, {
      ...HELP,
      ...FORMAT,
      all: { type: "boolean" },
    });
    const [runtime] = takePositionals("runtimes", positionals, 1, 1, "<runtime>");
    const { format, all } = checkFlags(
      "runtimes",
      z.object({ format: humanJson, all: z.boolean().optional() }),
      values,
    );
    if (runtime !== "node") {
      ctx.err(`pier: versions are listed for the node runtime only ('${runtime}' was given).\n`);
      return 2;
    }
    const { versions } = await ctx.client().call("GET /v1/runtimes/node");
    const seen = new Set<number>();
    const shown = all ? versions : versions.filter((v) => !seen.has(v.major) && seen.add(v.major));
    if (format === "json") {
      ctx.out(json(shown));
      return 0;
    }
    ctx.out(
      table(
        ["VERSION", "LTS", "STATUS"],
        shown.map((v) => [v.version, v.lts ? `LTS (${v.lts})` : "", v.eol ? "end-of-life" : "supported"]),
      ),
    );
    return 0;
  },
};
