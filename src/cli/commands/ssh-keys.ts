import { readFile } from "node:fs/promises";
import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { json, table } from "../output.js";
import type { SshKey } from "../schemas.js";

export const sshKeys: Command = {
  name: "ssh-keys",
  summary: "List, add or remove the SSH keys allowed to git push (or, read-only, to fetch), per app or admin",
  help: `Usage: pier ssh-keys [list] [--app <name|id>] [--format human|json]
       pier ssh-keys add <file.pub> [--app <name|id>] [--name N] [--read-only]
       pier ssh-keys rm <id|fingerprint|name> [--app <name|id>]

  list   without --app: every key with its scope (admin); with --app: the keys granted on that app
  add    with --app: grants the key on that app only (repeat with another --app to grant it on several;
         adding it again on the same app changes --read-only). Without --app: an admin key, which
         reaches every app. \`-\` reads the public key from stdin; the name defaults to its comment
  rm     with --app: removes the key's grant on that app (a key left with no app is removed);
         without: removes the key everywhere

A key reaches nothing but what it is given: a key granted on one app cannot clone or push another.
A read-only key (a deploy key) may fetch but not push: register the public half of an app's private
key (pier ssh-private-key) this way, on the app whose repository its builds install from:
  pier ssh-keys add deploy_key.pub --app private-lib --read-only
Keys are managed with an admin API token; --app is never taken from .pier.json here.

Options:
  -a, --app <name|id>       the app the key is granted on (add, rm) or whose keys to list
      --name <N>            a name for the key (add)
      --read-only           the key may fetch (git clone, npm git dependencies) but not push (add)
      --format human|json   output format (default human; json prints the SshKey objects)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("ssh-keys", args, {
      ...HELP,
      ...FORMAT,
      ...APP,
      name: { type: "string" },
      "read-only": { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const { format } = checkFlags("ssh-keys", z.object({ format: humanJson }), values);
    const app = values.app;
    if ((values.name !== undefined || values["read-only"]) && sub !== "add") {
      throw new UsageError("--name and --read-only apply to `ssh-keys add` only", { command: "ssh-keys" });
    }
    if (sub === "list") {
      takePositionals("ssh-keys", rest, 0, 0, "");
      return list(ctx, app, format);
    }
    if (sub === "add") {
      const [file] = takePositionals(
        "ssh-keys",
        rest,
        1,
        1,
        "the public key file: pier ssh-keys add ~/.ssh/id_ed25519.pub",
      );
      return add(ctx, file as string, app, values.name, values["read-only"] === true, format);
    }
    if (sub === "rm") {
      const [key] = takePositionals(
        "ssh-keys",
        rest,
        1,
        1,
        "the key's id or fingerprint: pier ssh-keys rm <id|fingerprint>",
      );
      if (app !== undefined) {
        await ctx
          .client()
          .call("DELETE /v1/apps/:app/ssh-keys/:key", { params: { app, key: key as string } });
        ctx.out(`Removed SSH key ${key} from ${app}.\n`);
      } else {
        await ctx.client().call("DELETE /v1/ssh-keys/:key", { params: { key: key as string } });
        ctx.out(`Removed SSH key ${key}.\n`);
      }
      return 0;
    }
    throw new UsageError(`unknown ssh-keys command '${sub}' (expected list, add, rm)`, {
      command: "ssh-keys",
    });
  },
};

type Key = SshKey;

/** `admin (push)`, or the apps a key is granted on, each `name (push|fetch)`. */
const access = (readOnly: boolean) => (readOnly ? "fetch" : "push");
export const scopeText = (k: Key): string =>
  k.global
    ? `admin (${access(k.readOnly)})`
    : k.apps.length === 0
      ? "no app"
      : k.apps.map((a) => `${a.name} (${access(a.readOnly)})`).join(", ");

async function list(ctx: Context, app: string | undefined, format: "human" | "json"): Promise<number> {
  const keys =
    app === undefined
      ? await ctx.client().call("GET /v1/ssh-keys")
      : await ctx.client().call("GET /v1/apps/:app/ssh-keys", { params: { app } });
  if (format === "json") ctx.out(json(keys));
  else if (keys.length === 0)
    ctx.err(
      app === undefined
        ? "No SSH keys yet. Add yours with: pier ssh-keys add ~/.ssh/id_ed25519.pub\n"
        : `No SSH key is granted on ${app}. Grant one with: pier ssh-keys add KEY.pub --app ${app}\n`,
    );
  else if (app !== undefined)
    ctx.out(
      table(
        ["ID", "NAME", "FINGERPRINT", "ALGO", "ACCESS", "ADDED"],
        keys.map((k) => [
          k.id,
          k.name,
          k.fingerprint,
          k.algo,
          access(k.apps[0]?.readOnly ?? true),
          k.createdAt,
        ]),
      ),
    );
  else
    ctx.out(
      table(
        ["ID", "NAME", "FINGERPRINT", "ALGO", "SCOPE", "ADDED"],
        keys.map((k) => [k.id, k.name, k.fingerprint, k.algo, scopeText(k), k.createdAt]),
      ),
    );
  return 0;
}

async function add(
  ctx: Context,
  file: string,
  app: string | undefined,
  name: string | undefined,
  readOnly: boolean,
  format: "human" | "json",
): Promise<number> {
  let publicKey: string;
  try {
    publicKey = file === "-" ? await ctx.readStdin() : await readFile(file, "utf8");
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  publicKey = publicKey.trim();
  if (publicKey.includes("PRIVATE KEY")) {
    // Never send a private key anywhere.
    throw new CliError(`${file} is a private key; nothing was sent`, `give the public key: ${file}.pub`);
  }
  const body = { publicKey, ...(name !== undefined ? { name } : {}), ...(readOnly ? { readOnly } : {}) };
  const key =
    app === undefined
      ? await ctx.client().call("POST /v1/ssh-keys", { body })
      : await ctx.client().call("POST /v1/apps/:app/ssh-keys", { params: { app }, body });
  if (format === "json") ctx.out(json(key));
  else if (app === undefined)
    ctx.out(
      `Added ${key.readOnly ? "read-only " : ""}admin SSH key ${key.name} (${key.fingerprint}), id ${key.id}: it reaches every app.\n`,
    );
  else
    ctx.out(
      `Granted SSH key ${key.name} (${key.fingerprint}), id ${key.id}, on ${app}: ${readOnly ? "fetch only" : "push and fetch"}.\n`,
    );
  return 0;
}
