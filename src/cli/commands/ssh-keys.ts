import { readFile } from "node:fs/promises";
import { z } from "zod";
import { checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import { apiPath } from "../client.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { json, table } from "../output.js";
import { SshKeySchema } from "../schemas.js";

export const sshKeys: Command = {
  name: "ssh-keys",
  summary: "List, add or remove the SSH keys allowed to git push (or, read-only, to fetch)",
  help: `Usage: pier ssh-keys [list] [--format human|json]
       pier ssh-keys add <file.pub> [--name N] [--read-only]
       pier ssh-keys rm <id|fingerprint>

  list   the keys allowed to push or fetch (the default)
  add    allows a public key (\`-\` reads it from stdin); the name defaults to the key's comment
  rm     removes a key, by id or SHA256 fingerprint

A read-only key (a deploy key) may fetch Pier's repositories but not push: register the public half
of an app's private key (pier ssh-private-key) this way so its builds can install git dependencies
hosted on Pier.

Options:
      --name <N>            a name for the key (add)
      --read-only           the key may fetch (git clone, npm git dependencies) but not push (add)
      --format human|json   output format (default human; json prints the SshKey objects)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("ssh-keys", args, {
      ...HELP,
      ...FORMAT,
      name: { type: "string" },
      "read-only": { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const { format } = checkFlags("ssh-keys", z.object({ format: humanJson }), values);
    if ((values.name !== undefined || values["read-only"]) && sub !== "add") {
      throw new UsageError("--name and --read-only apply to `ssh-keys add` only", { command: "ssh-keys" });
    }
    if (sub === "list") {
      takePositionals("ssh-keys", rest, 0, 0, "");
      return list(ctx, format);
    }
    if (sub === "add") {
      const [file] = takePositionals(
        "ssh-keys",
        rest,
        1,
        1,
        "the public key file: pier ssh-keys add ~/.ssh/id_ed25519.pub",
      );
      return add(ctx, file as string, values.name, values["read-only"] === true, format);
    }
    if (sub === "rm") {
      const [key] = takePositionals(
        "ssh-keys",
        rest,
        1,
        1,
        "the key's id or fingerprint: pier ssh-keys rm <id|fingerprint>",
      );
      await ctx.client().callNoContent("DELETE", apiPath("ssh-keys", key as string));
      ctx.out(`Removed SSH key ${key}.\n`);
      return 0;
    }
    throw new UsageError(`unknown ssh-keys command '${sub}' (expected list, add, rm)`, {
      command: "ssh-keys",
    });
  },
};

async function list(ctx: Context, format: "human" | "json"): Promise<number> {
  const keys = await ctx.client().call("GET", apiPath("ssh-keys"), z.array(SshKeySchema));
  if (format === "json") ctx.out(json(keys));
  else if (keys.length === 0)
    ctx.err("No SSH keys yet. Add yours with: pier ssh-keys add ~/.ssh/id_ed25519.pub\n");
  else
    ctx.out(
      table(
        ["ID", "NAME", "FINGERPRINT", "ALGO", "ACCESS", "ADDED"],
        keys.map((k) => [k.id, k.name, k.fingerprint, k.algo, k.readOnly ? "fetch" : "push", k.createdAt]),
      ),
    );
  return 0;
}

async function add(
  ctx: Context,
  file: string,
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
  const key = await ctx.client().call("POST", apiPath("ssh-keys"), SshKeySchema, {
    body: { publicKey, ...(name !== undefined ? { name } : {}), ...(readOnly ? { readOnly } : {}) },
  });
  if (format === "json") ctx.out(json(key));
  else
    ctx.out(
      `Added ${key.readOnly ? "read-only " : ""}SSH key ${key.name} (${key.fingerprint}), id ${key.id}.\n`,
    );
  return 0;
}
