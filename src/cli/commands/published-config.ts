import { z } from "zod";
import { MASK } from "../../core/env-secrets.js";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";
import { json, renderEnvHuman } from "../output.js";
import { maskValue } from "./addon.js";

export const publishedConfig: Command = {
  name: "published-config",
  summary: "The variables an app publishes to the apps linked to it",
  help: `Usage: pier published-config [--app <name|id>] [--format human|json]
       pier published-config set NAME VALUE [--app <name|id>]
       pier published-config rm NAME [--app <name|id>]

What the app exposes to the apps linked to it (pier service link-app THIS_APP --app OTHER): they
get these variables at their next deploy or restart. Names follow the rule of variables; CC_ names
are refused.

Options:
  -a, --app <name|id>    the app (default: the one in .pier.json, searched upwards from here)
      --format human|json
      --reveal           show secret values (masked otherwise)
  -h, --help             show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("published-config", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      reveal: { type: "boolean" },
    });
    const { format } = checkFlags("published-config", z.object({ format: humanJson }), values);
    const [sub = "list", ...rest] = positionals;
    const app = resolveApp(values.app, ctx.cwd, "published-config");
    const api = ctx.client();
    if (sub === "list") {
      takePositionals("published-config", rest, 0, 0, "");
      const { vars: all } = await api.call("GET /v1/apps/:app/published-config", {
        params: { app: app.ref },
        query: { reveal: values.reveal },
      });
      const vars = values.reveal
        ? all
        : Object.fromEntries(Object.entries(all).map(([k, v]) => [k, maskValue(k, v)]));
      if (format === "json") ctx.out(json(vars));
      else if (Object.keys(vars).length === 0) ctx.err(`${app.ref} publishes no variable.\n`);
      else ctx.out(renderEnvHuman(vars));
      if (!values.reveal && Object.entries(all).some(([k, v]) => maskValue(k, v) !== v || v.includes(MASK)))
        ctx.err("Secrets are masked; --reveal shows them.\n");
      return 0;
    }
    if (sub === "set") {
      const [name, value] = takePositionals("published-config", rest, 2, 2, "NAME and VALUE");
      const r = await api.call("PUT /v1/apps/:app/published-config/:name", {
        params: { app: app.ref, name: name as string },
        body: { value: value as string },
      });
      if (format === "json") ctx.out(json(r));
      else ctx.out(`Published ${name}.\n`);
      ctx.err("Linked apps get it at their next deploy or restart.\n");
      return 0;
    }
    if (sub === "rm") {
      const [name] = takePositionals("published-config", rest, 1, 1, "the NAME");
      await api.call("DELETE /v1/apps/:app/published-config/:name", {
        params: { app: app.ref, name: name as string },
      });
      if (format === "json") ctx.out(json({ removed: name }));
      else ctx.out(`No longer published: ${name}.\n`);
      return 0;
    }
    throw new UsageError(`unknown published-config command '${sub}' (expected set, rm)`, {
      command: "published-config",
    });
  },
};
