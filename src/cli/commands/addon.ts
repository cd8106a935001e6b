import { z } from "zod";
import { shownValue } from "../../core/env-secrets.js";
import {
  checkFlags,
  FORMAT,
  flavorFlag,
  formatFlag,
  HELP,
  humanJson,
  parseFlags,
  subcommand,
  takePositionals,
} from "../args.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { json, renderEnvHuman, renderEnvShell, table } from "../output.js";

/** A secret value shown as MASK unless --reveal; a URL keeps its shape with its password masked. */
export const maskValue = shownValue;

const USAGE = `Usage: pier addon create KIND NAME [--flavor F] [--link APP]... [--node NODE]
       pier addon list
       pier addon status NAME
       pier addon env NAME [--format human|json|shell] [--reveal]
       pier addon delete NAME [--yes] [--force]
       pier addon backup create NAME
       pier addon backup list NAME
       pier addon backup restore NAME BACKUP_ID [--from OTHER] [--yes]

  KIND is kv (a Redis-protocol key-value store: valkey, port 6378, the token as password),
  postgresql (PostgreSQL 17: one database, one user), mysql (MariaDB 11.8: one database, one user;
  MYSQL_ADDON_* and DATABASE_URL) or fs (a file-system bucket: a link gives BUCKET_HOST; the app mounts
  it with CC_FS_BUCKET=<path>:<BUCKET_HOST>, e.g. /wp-content/uploads:pier-addon-adn-..., shared by all
  its instances; node and phpserver apps only). Each add-on is a server in its own container, its data
  on a volume, its memory limited by its flavor (default nano).

  create      makes the add-on (and links it to the --link apps: their next deploy or restart gets
              its variables). On a swarm it is pinned to one node with its data: --node, or the
              manager; Pier never moves it (to move it: back up, create one on another node, restore
              the backup into it with --from)
  env         the variables a link injects; secrets masked unless --reveal
  delete      deletes the add-on and its data (asks for its name, or --yes); refused while apps are
              linked to it, unless --force. Its backups stay on disk.
  backup      create: a backup now (pg_dump, mariadb-dump, a snapshot for kv, a tar.gz for fs); list; restore: replaces
              the add-on's data by the backup (asks, or --yes); a restore that fails leaves the data as
              it was. --from OTHER: the backup is of the add-on OTHER, of the same kind.
              A backup is also made every day and kept for PIER_BACKUP_DAYS days (default 7).

Options:
      --flavor <pico|nano|XS|S|M|L|XL>  memory (and CPU) of the add-on
      --link <app>                      link it to this app (repeatable)
      --node <node>                     the swarm node it runs on with its data (pier nodes)
      --format human|json[|shell]       output format (default human)
      --reveal                          show secrets (pier addon env)
  -y, --yes                             do not ask
      --force                           delete even while linked (the links go too)
      --from <addon>                    backup restore: the add-on whose backup it is
  -h, --help                            show this help
`;

/** What a link's network join means to a user. */
const JOIN_TEXT: Record<string, string> = {
  joined: "reaches it",
  joining: "joining its network now",
  pending: "reaches it after its next deploy or restart",
};

async function confirm(ctx: Context, what: string, name: string, yes: boolean | undefined, command: string) {
  if (yes) return;
  if (!ctx.stdinIsTTY) {
    throw new UsageError(`refusing to ${what} without confirmation: stdin is not a terminal`, {
      command,
      hint: "pass --yes to go ahead without being asked",
    });
  }
  const answer = await ctx.prompt(`This will ${what}. Type the add-on's name (${name}) to confirm: `);
  if (answer?.trim() !== name) throw new CliError(`confirmation did not match ${name}; nothing was changed`);
}

/** The flags of `pier addon`, as parsed. */
interface AddonFlags {
  format?: string;
  flavor?: string;
  link?: string[];
  node?: string;
  reveal?: boolean;
  yes?: boolean;
  force?: boolean;
  from?: string;
}

/** What each subcommand gets: its positionals, the flags, and the checked --format (default: human|json). */
interface Sub {
  ctx: Context;
  rest: string[];
  values: AddonFlags;
  fmt: (formats?: z.ZodType) => string;
}

/** ", on node2" when the add-on is pinned to a swarm node. */
const onNode = (node: string | null) => (node ? `, on node ${node}` : "");

async function create({ ctx, rest, values, fmt }: Sub): Promise<number> {
  const [kind, name] = takePositionals("addon", rest, 2, 2, "KIND and NAME: pier addon create kv cache");
  const format = fmt();
  const { flavor } = checkFlags("addon create", z.object({ flavor: flavorFlag.optional() }), values);
  ctx.err(`Creating ${kind} add-on ${name}...\n`);
  const a = await ctx.client().call("POST /v1/addons", {
    body: { kind: kind as string, name: name as string, flavor, link: values.link, node: values.node },
  });
  if (format === "json") ctx.out(json(a));
  else {
    ctx.out(`Created ${a.kind} add-on ${a.name} (${a.id}), flavor ${a.flavor}${onNode(a.node)}.\n`);
    if (a.node && !values.node)
      ctx.err(`It runs on ${a.node}, the swarm's manager (choose another node with --node NODE).\n`);
    if (a.apps.length > 0)
      ctx.err(`Linked to ${a.apps.join(", ")}: their next deploy or \`pier restart\` gets its variables.\n`);
    if (a.kind === "fs" && a.node && a.apps.length > 0)
      ctx.err(
        `Instances of ${a.apps.join(", ")} run on node ${a.node}, where bucket ${a.name} lives (once CC_FS_BUCKET names it).\n`,
      );
  }
  return 0;
}

async function list({ ctx, rest, fmt }: Sub): Promise<number> {
  takePositionals("addon", rest, 0, 0, "");
  const list = await ctx.client().call("GET /v1/addons");
  if (fmt() === "json") ctx.out(json(list));
  else if (list.length === 0) ctx.err("No add-ons. Create one with: pier addon create kv NAME\n");
  else
    ctx.out(
      table(
        ["NAME", "KIND", "FLAVOR", "NODE", "LINKED APPS", "ID"],
        list.map((a) => [a.name, a.kind, a.flavor, a.node ?? "-", a.apps.join(","), a.id]),
      ),
    );
  return 0;
}

async function status({ ctx, rest, fmt }: Sub): Promise<number> {
  const [name] = takePositionals("addon", rest, 1, 1, "the add-on's NAME");
  const s = await ctx.client().call("GET /v1/addons/:addon", { params: { addon: name as string } });
  if (fmt() === "json") ctx.out(json(s));
  else
    ctx.out(
      [
        `${s.name} (${s.kind}, ${s.id}): ${s.state}`,
        `  flavor:    ${s.flavor}`,
        ...(s.node ? [`  node:      ${s.node} (pinned with its data)`] : []),
        s.kind === "fs"
          ? `  bucket:    ${s.host} (mounted where the linked apps' CC_FS_BUCKET=<path>:${s.host} says)`
          : `  address:   ${s.host}:${s.port} (from the linked apps' instances and builds)`,
        `  linked to: ${s.joins.length > 0 ? s.joins.map((j) => `${j.app} (${JOIN_TEXT[j.state] ?? j.state})`).join(", ") : "no app"}`,
        `  backups:   ${s.backups}`,
        "",
      ].join("\n"),
    );
  return 0;
}

async function env({ ctx, rest, values, fmt }: Sub): Promise<number> {
  const [name] = takePositionals("addon", rest, 1, 1, "the add-on's NAME");
  const format = fmt(formatFlag(["human", "json", "shell"]));
  const e = await ctx.client().call("GET /v1/addons/:addon/env", {
    params: { addon: name as string },
    query: { reveal: values.reveal },
  });
  const vars = values.reveal
    ? e.vars
    : Object.fromEntries(Object.entries(e.vars).map(([k, v]) => [k, maskValue(k, v)]));
  if (format === "json") ctx.out(json(vars));
  else if (format === "shell") ctx.out(renderEnvShell(vars).text);
  else ctx.out(renderEnvHuman(vars));
  if (!values.reveal && format !== "json") ctx.err("Secrets are masked; --reveal shows them.\n");
  return 0;
}

async function remove({ ctx, rest, values }: Sub): Promise<number> {
  const [name] = takePositionals("addon", rest, 1, 1, "the add-on's NAME");
  await confirm(ctx, `delete the add-on ${name} and its data`, name as string, values.yes, "addon");
  await ctx.client().call("DELETE /v1/addons/:addon", {
    params: { addon: name as string },
    query: { force: values.force },
  });
  ctx.out(`Deleted add-on ${name}.\n`);
  return 0;
}

const SUBCOMMANDS: Record<string, (sub: Sub) => Promise<number>> = {
  create,
  list,
  status,
  env,
  delete: remove,
  backup: ({ ctx, rest, values, fmt }) => backup(ctx, rest, values, fmt),
};

export const addon: Command = {
  name: "addon",
  summary:
    "Add-ons: kv (Redis protocol), postgresql, mysql, fs (buckets); create, list, status, env, delete, backups",
  help: USAGE,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("addon", args, {
      ...HELP,
      ...FORMAT,
      flavor: { type: "string" },
      link: { type: "string", multiple: true },
      node: { type: "string" },
      reveal: { type: "boolean" },
      yes: { type: "boolean", short: "y" },
      force: { type: "boolean" },
      from: { type: "string" },
    });
    const [sub = "list", ...rest] = positionals;
    const fmt = (formats: z.ZodType = humanJson) =>
      (
        checkFlags(`addon ${sub}`, z.object({ format: formats }), { format: values.format }) as {
          format: string;
        }
      ).format;
    const handler = subcommand("addon", SUBCOMMANDS, sub, "create, list, status, env, delete, backup");
    return handler({ ctx, rest, values, fmt });
  },
};

async function backup(
  ctx: Context,
  rest: string[],
  values: { yes?: boolean; from?: string },
  fmt: () => string,
): Promise<number> {
  const [op, ...more] = rest;
  const api = ctx.client();
  if (op === "create") {
    const [name] = takePositionals("addon", more, 1, 1, "the add-on's NAME");
    ctx.err(`Backing up ${name}...\n`);
    const b = await api.call("POST /v1/addons/:addon/backups", { params: { addon: name as string } });
    if (fmt() === "json") ctx.out(json(b));
    else ctx.out(`Backup ${b.id} of ${name}: ${b.bytes} bytes (${b.file}).\n`);
    return 0;
  }
  if (op === "list") {
    const [name] = takePositionals("addon", more, 1, 1, "the add-on's NAME");
    const list = await api.call("GET /v1/addons/:addon/backups", { params: { addon: name as string } });
    if (fmt() === "json") ctx.out(json(list));
    else if (list.length === 0) ctx.err(`No backups of ${name} yet: pier addon backup create ${name}\n`);
    else
      ctx.out(
        table(
          ["ID", "CREATED", "BYTES", "KIND"],
          list.map((b) => [b.id, b.createdAt, String(b.bytes), b.automatic ? "daily" : "manual"]),
        ),
      );
    return 0;
  }
  if (op === "restore") {
    const [name, id] = takePositionals(
      "addon",
      more,
      2,
      2,
      "NAME and BACKUP_ID: pier addon backup restore db bak-...",
    );
    await confirm(
      ctx,
      `replace the data of ${name} by the backup ${id}`,
      name as string,
      values.yes,
      "addon",
    );
    ctx.err(`Restoring ${name} from ${id}...\n`);
    const b = await api.call("POST /v1/addons/:addon/backups/:backup/restore", {
      params: { addon: name as string, backup: id as string },
      ...(values.from ? { query: { from: values.from } } : {}),
    });
    if (fmt() === "json") ctx.out(json(b));
    else
      ctx.out(
        `Restored ${name} from backup ${b.id}${values.from ? ` of ${values.from}` : ""} (${b.createdAt}).\n`,
      );
    return 0;
  }
  throw new UsageError(`unknown addon backup command '${op ?? ""}' (expected create, list, restore)`, {
    command: "addon",
  });
}
