import { HELP, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { LINK_FILE, writeLinkFile } from "../link-file.js";

export const link: Command = {
  name: "link",
  summary: `Link this folder to an app (writes ${LINK_FILE})`,
  help: `Usage: pier link <name|id>

Writes ${LINK_FILE} in this folder, so that commands run here or in any sub-folder act on the app
without --app.

Options:
  -h, --help   show this help
`,
  async run(args, ctx) {
    const { positionals } = parseFlags("link", args, { ...HELP });
    const [ref] = takePositionals("link", positionals, 1, 1, "the app to link: pier link <name|id>");
    const app = await ctx.client().call("GET /v1/apps/:app", { params: { app: ref as string } });
    const path = writeLinkFile(ctx.cwd, app);
    ctx.out(`Linked ${ctx.cwd} to app ${app.name} (${app.id}) in ${path}.\n`);
    return 0;
  },
};
