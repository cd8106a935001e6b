import { z } from "zod";
import { RUNTIMES } from "../../core/model.js";
import { appNameProblem } from "../../core/names.js";
import {
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
import { findLinkFile, LINK_FILE, writeLinkFile } from "../link-file.js";
import { json } from "../output.js";

const flagsSchema = z.object({
  type: z.enum(RUNTIMES, {
    error: (i) => (i.input === undefined ? "is required" : `must be one of ${RUNTIMES.join(", ")}`),
  }),
  flavor: flavorFlag.optional(),
  "build-flavor": flavorFlag.optional(),
  instances: countFlag(1).optional(),
  task: z.string().trim().min(1, "must be the command to run").optional(),
  link: z.boolean().optional(),
  format: humanJson,
});

export const create: Command = {
  name: "create",
  summary: "Create an app",
  help: `Usage: pier create --type docker|node|phpserver <name> [options]

Creates an app and prints its id, its git deployment URL and its URL.

Options:
      --type docker|node|phpserver   the runtime (required)
      --flavor <F>                   instance size: pico nano XS S M L XL
      --build-flavor <F>             size of the build container
      --instances <N>                number of instances
      --task "<command>"             a task app: runs the command once to completion, no HTTP
      --link                         link this folder to the new app (writes ${LINK_FILE})
      --format human|json            output format (default human; json prints the App)
  -h, --help                         show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("create", args, {
      ...HELP,
      ...FORMAT,
      type: { type: "string" },
      flavor: { type: "string" },
      "build-flavor": { type: "string" },
      instances: { type: "string" },
      task: { type: "string" },
      link: { type: "boolean" },
    });
    const name = takePositionals(
      "create",
      positionals,
      1,
      1,
      "the app's name: pier create --type node <name>",
    )[0] as string;
    const f = checkFlags("create", flagsSchema, values);
    // The server checks it too (with its domain); saying it here spares a round trip.
    const problem = appNameProblem(name);
    if (problem) throw new UsageError(problem, { command: "create" });

    ctx.err(`Creating app ${name}...\n`);
    const app = await ctx.client().call("POST /v1/apps", {
      body: {
        name,
        type: f.type,
        flavor: f.flavor,
        buildFlavor: f["build-flavor"],
        instances: f.instances,
        task: f.task,
      },
    });

    let linked = "";
    if (f.link) {
      const previous = findLinkFile(ctx.cwd);
      const path = writeLinkFile(ctx.cwd, app);
      linked = `Linked this folder to ${app.name} (${path}).\n`;
      if (previous && previous.link.app !== app.id) {
        ctx.err(`Note: ${previous.path} named app ${previous.link.name ?? previous.link.app} before.\n`);
      }
    }

    if (f.format === "json") {
      ctx.out(json(app));
      if (linked) ctx.err(linked);
      return 0;
    }
    ctx.out(
      `Created app ${app.name}.\n` +
        `App id:   ${app.id}\n` +
        `Git URL:  ${app.gitUrl}\n` +
        `App URL:  ${app.url ?? "none (a task app serves no HTTP)"}\n` +
        linked +
        "\nNext steps:\n" +
        `  git remote add pier ${app.gitUrl}\n` +
        "  git push pier master\n" +
        "  (from another branch: git push pier <branch>:master)\n",
    );
    return 0;
  },
};
