import { readFile } from "node:fs/promises";
import { z } from "zod";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";
import { json } from "../output.js";

export const sshPrivateKey: Command = {
  name: "ssh-private-key",
  summary: "Set, show or remove the private SSH key an app's builds use for git dependencies",
  help: `Usage: pier ssh-private-key [show] [--app <name|id>] [--format human|json]
       pier ssh-private-key set <file> [--app <name|id>]
       pier ssh-private-key rm [--app <name|id>]

The app's builds use this key for git+ssh:// dependencies (npm, Yarn, Bun), such as
"git+ssh://git@github.com/you/private-lib.git" or a repository on this Pier. It is stored
encrypted and never shown again, nor written to any log: \`show\` prints its fingerprint and
public half. For a repository on this Pier, grant the public half read-only on that repository's
app (it then reaches nothing else):
  pier ssh-keys add deploy_key.pub --app private-lib --read-only

  show   the key's type, fingerprint and public half (the default)
  set    sets the key from an unencrypted private key file (\`-\` reads stdin); the next deploy uses it
  rm     removes the key

Options:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format (default human)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("ssh-private-key", args, { ...HELP, ...APP, ...FORMAT });
    const [sub = "show", ...rest] = positionals;
    const { format } = checkFlags("ssh-private-key", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "ssh-private-key");
    const params = { app: app.ref };
    if (sub === "show") {
      takePositionals("ssh-private-key", rest, 0, 0, "");
      const info = await ctx.client().call("GET /v1/apps/:app/ssh-private-key", { params });
      if (format === "json") ctx.out(json(info));
      else ctx.out(`${info.type} ${info.fingerprint}\npublic key: ${info.publicKey}\n`);
      return 0;
    }
    if (sub === "set") {
      const [file] = takePositionals(
        "ssh-private-key",
        rest,
        1,
        1,
        "the private key file: pier ssh-private-key set ~/.ssh/deploy_key",
      );
      return set(ctx, params, file as string, format);
    }
    if (sub === "rm") {
      takePositionals("ssh-private-key", rest, 0, 0, "");
      await ctx.client().call("DELETE /v1/apps/:app/ssh-private-key", { params });
      ctx.out("Removed the app's private SSH key; the next deploy builds without it.\n");
      return 0;
    }
    throw new UsageError(`unknown ssh-private-key command '${sub}' (expected show, set, rm)`, {
      command: "ssh-private-key",
    });
  },
};

async function set(
  ctx: Context,
  params: { app: string },
  file: string,
  format: "human" | "json",
): Promise<number> {
  let privateKey: string;
  try {
    privateKey = file === "-" ? await ctx.readStdin() : await readFile(file, "utf8");
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  const info = await ctx.client().call("PUT /v1/apps/:app/ssh-private-key", { params, body: { privateKey } });
  if (format === "json") ctx.out(json(info));
  else
    ctx.out(
      `Set the app's private SSH key (${info.type} ${info.fingerprint}); the next deploy uses it.\n` +
        `Its public half, to allow where the build fetches from:\n${info.publicKey}\n`,
    );
  return 0;
}
