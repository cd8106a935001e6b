import { HELP, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";

export const server: Command = {
  name: "server",
  summary: "Run the Pier server (API, git over SSH, HTTP edge)",
  help: `Usage: pier server

Runs the Pier server in the foreground: the management API, the git-over-SSH endpoint and the
HTTP edge. At start it writes <data dir>/cli.json so that \`pier\` commands on this machine find it.
Settings are environment variables (PIER_DATA_DIR, PIER_API_PORT, PIER_SSH_PORT, PIER_HTTP_PORT,
PIER_DOMAIN, ...); see the README.

Options:
  -h, --help   show this help
`,
  async run(args) {
    const { positionals } = parseFlags("server", args, { ...HELP });
    takePositionals("server", positionals, 0, 0, "");
    const m = await import("../../server/main.js");
    await m.main();
    return 0;
  },
};
