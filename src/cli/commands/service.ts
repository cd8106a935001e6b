import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";

const NEXT = "The next deploy or `pier restart` applies it; running instances are not changed.\n";

export const service: Command = {
  name: "service",
  summary: "An app's links: add-ons and other apps whose variables it gets",
  help: `Usage: pier service [--app <name|id>] [--format human|json]
       pier service link-addon ADDON [--app <name|id>]
       pier service unlink-addon ADDON [--app <name|id>]
       pier service link-app OTHER_APP [--app <name|id>]
       pier service unlink-app OTHER_APP [--app <name|id>]

  service        lists the app's links
  link-addon     the app gets the add-on's variables (KV_*, REDIS_*, POSTGRESQL_ADDON_*,
                 MYSQL_ADDON_*, DATABASE_URL) and its instances and builds reach it (admin token)
  link-app       the app gets the variables OTHER_APP publishes (pier published-config) (admin token)
  unlink-*       removes the link

A link (or unlink) applies at the app's next deploy or \`pier restart\`.

Options:
  -a, --app <name|id>    the app (default: the one in .pier.json, searched upwards from here)
      --format human|json
  -h, --help             show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("service", args, { ...HELP, ...APP, ...FORMAT });
    const { format } = checkFlags("service", z.object({ format: humanJson }), values);
    const [sub = "list", ...rest] = positionals;
    const app = resolveApp(values.app, ctx.cwd, "service");
    const api = ctx.client();
    const show = async () => {
      const l = await api.call("GET /v1/apps/:app/links", { params: { app: app.ref } });
      if (format === "json") ctx.out(json(l));
      else if (l.addons.length + l.apps.length === 0)
        ctx.err(`${app.ref} has no links. Link one with: pier service link-addon NAME --app ${app.ref}\n`);
      else
        ctx.out(
          table(
            ["KIND", "NAME", "ID"],
            [
              ...l.addons.map((a) => [`add-on ${a.kind}`, a.name, a.id]),
              ...l.apps.map((a) => ["app", a.name, a.id]),
            ],
          ),
        );
      return 0;
    };
    switch (sub) {
      case "list":
        takePositionals("service", rest, 0, 0, "");
        return show();
      case "link-addon":
      case "link-app": {
        const [target] = takePositionals(
          "service",
          rest,
          1,
          1,
          sub === "link-addon" ? "the ADDON" : "the OTHER_APP",
        );
        const params = { app: app.ref };
        const l =
          sub === "link-addon"
            ? await api.call("POST /v1/apps/:app/links/addons", { params, body: { addon: target as string } })
            : await api.call("POST /v1/apps/:app/links/apps", { params, body: { app: target as string } });
        if (format === "json") ctx.out(json(l));
        else ctx.out(`Linked ${target} to ${app.ref}.\n`);
        const pin =
          "addons" in l ? l.addons.find((a) => a.kind === "fs" && a.node && a.name === target) : undefined;
        if (pin && format !== "json")
          ctx.err(
            `Instances of ${app.ref} run on node ${pin.node}, where bucket ${pin.name} lives (once CC_FS_BUCKET names it).\n`,
          );
        ctx.err(NEXT);
        return 0;
      }
      case "unlink-addon":
      case "unlink-app": {
        const [target] = takePositionals(
          "service",
          rest,
          1,
          1,
          sub === "unlink-addon" ? "the ADDON" : "the OTHER_APP",
        );
        if (sub === "unlink-addon")
          await api.call("DELETE /v1/apps/:app/links/addons/:addon", {
            params: { app: app.ref, addon: target as string },
          });
        else
          await api.call("DELETE /v1/apps/:app/links/apps/:target", {
            params: { app: app.ref, target: target as string },
          });
        if (format === "json") ctx.out(json({ unlinked: target }));
        else ctx.out(`Unlinked ${target} from ${app.ref}.\n`);
        ctx.err(NEXT);
        return 0;
      }
      default:
        throw new UsageError(`unknown service command '${sub}'`, { command: "service" });
    }
  },
};
