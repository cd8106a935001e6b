import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command, Context } from "../command.js";
import { UsageError } from "../errors.js";
import { json, table } from "../output.js";
import type { ApiToken } from "../schemas.js";

export const tokens: Command = {
  name: "tokens",
  summary: "List, create or revoke API tokens (admin, or limited to one app; read-only or not)",
  help: `Usage: pier tokens [list] [--format human|json]
       pier tokens create <name> [--app <name|id>] [--read-only] [--format human|json]
       pier tokens revoke <name>

  list     every token: name, scope, creation time (never the token itself)
  create   makes a token and prints it, once: it is kept only hashed. With --app it sees that app
           only (other apps answer 404, as if they did not exist) and may not create apps, keys or
           tokens; with --read-only it may read but change nothing. Without either: an admin token
  revoke   the token stops working at once

Give a token to the CLI elsewhere with PIER_URL and PIER_TOKEN, or paste it in the web console.
Only an admin token may create or revoke tokens. The bootstrap admin token ('admin', from
PIER_ADMIN_TOKEN or cli.json) is replaced by setting a new PIER_ADMIN_TOKEN and restarting the server.
--app is never taken from .pier.json here.

Options:
  -a, --app <name|id>       create: the app the token is limited to
      --read-only           create: the token may read, not change anything
      --format human|json   output format (default human)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("tokens", args, {
      ...HELP,
      ...FORMAT,
      ...APP,
      "read-only": { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const { format } = checkFlags("tokens", z.object({ format: humanJson }), values);
    if ((values.app !== undefined || values["read-only"]) && sub !== "create") {
      throw new UsageError("--app and --read-only apply to `tokens create` only", { command: "tokens" });
    }
    if (sub === "list") {
      takePositionals("tokens", rest, 0, 0, "");
      return list(ctx, format);
    }
    if (sub === "create") {
      const [name] = takePositionals("tokens", rest, 1, 1, "the token's name: pier tokens create ci-deploy");
      const t = await ctx.client().call("POST /v1/tokens", {
        body: {
          name: name as string,
          ...(values.app !== undefined ? { app: values.app } : {}),
          ...(values["read-only"] ? { readOnly: true } : {}),
        },
      });
      if (format === "json") ctx.out(json(t));
      else {
        ctx.out(`${t.token}\n`);
        ctx.err(
          `Created token ${t.name} (${scope(t)}). It is shown this once: keep it now (PIER_TOKEN=...).\n`,
        );
      }
      return 0;
    }
    if (sub === "revoke") {
      const [name] = takePositionals("tokens", rest, 1, 1, "the token's name: pier tokens revoke ci-deploy");
      await ctx.client().call("DELETE /v1/tokens/:name", { params: { name: name as string } });
      ctx.out(`Revoked token ${name}: it no longer works.\n`);
      return 0;
    }
    throw new UsageError(`unknown tokens command '${sub}' (expected list, create, revoke)`, {
      command: "tokens",
    });
  },
};

const scope = (t: ApiToken) => `${t.app ? `app ${t.app.name}` : "admin"}${t.readOnly ? ", read-only" : ""}`;

async function list(ctx: Context, format: "human" | "json"): Promise<number> {
  const all = await ctx.client().call("GET /v1/tokens");
  if (format === "json") ctx.out(json(all));
  else
    ctx.out(
      table(
        ["NAME", "SCOPE", "CREATED"],
        all.map((t) => [`${t.name}${t.bootstrap ? " (bootstrap)" : ""}`, scope(t), t.createdAt]),
      ),
    );
  return 0;
}
