import { z } from "zod";
import { parseEnvImport } from "../../core/env-import.js";
import { MASK, urlPasswords } from "../../core/env-secrets.js";
import {
  APP,
  checkFlags,
  FORMAT,
  formatFlag,
  HELP,
  humanJson,
  parseFlags,
  takePositionals,
} from "../args.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";
import { json, renderEnvHuman, renderEnvShell } from "../output.js";
import { maskValue } from "./addon.js";

const APPLY_HINT = "Changes apply at the next deploy: run `pier restart` to apply them now.\n";

export const env: Command = {
  name: "env",
  summary: "Show, set, remove or import an app's variables",
  help: `Usage: pier env [--format human|json|shell]
       pier env set NAME VALUE
       pier env rm NAME...
       pier env import < file

  env          prints the variables: NAME=value lines, a JSON object, or
               \`export NAME='value'\` lines for eval "$(pier env --format shell)"; then
               (not in JSON) those of the app's links, under \`# from add-on NAME\` or
               \`# from app NAME\`; secret values masked unless --reveal
  env set      sets one variable (a VALUE starting with '-' goes after '--': env set N -- -1)
  env rm       removes variables, all or none
  env import   sets the variables read from stdin: NAME=value lines (# comments, export
               prefix, quoted values, "double quotes" may span lines) or a JSON object

Changes apply at the next deploy or restart.

Options:
  -a, --app <name|id>            the app (default: the one in .pier.json, searched upwards from here)
      --format human|json|shell  output format (default human; shell only for \`pier env\`)
      --reveal                   show secret values in clear (a token that may change the app)
  -h, --help                     show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("env", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      reveal: { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const known = ["list", "set", "rm", "import"];
    if (!known.includes(sub)) {
      throw new UsageError(`unknown env command '${sub}' (expected ${known.join(", ")})`, { command: "env" });
    }
    const formats = sub === "list" ? formatFlag(["human", "json", "shell"]) : humanJson;
    const { format } = checkFlags(`env ${sub}`, z.object({ format: formats }), values);
    if (sub === "set") {
      // `env set NAME=value` is accepted as well: one argument, cut at the first `=`.
      const one = rest.length === 1 && rest[0]?.includes("=") ? rest[0] : undefined;
      const [name, value] =
        one !== undefined
          ? [one.slice(0, one.indexOf("=")), one.slice(one.indexOf("=") + 1)]
          : takePositionals("env", rest, 2, 2, "NAME and VALUE: pier env set NAME VALUE");
      const app = resolveApp(values.app, ctx.cwd, "env");
      return setVar(ctx, app.ref, name as string, value as string, format);
    }
    if (sub === "rm") {
      const names = takePositionals("env", rest, 1, Number.POSITIVE_INFINITY, "the NAME to remove");
      const app = resolveApp(values.app, ctx.cwd, "env");
      return removeVars(ctx, app.ref, names, format);
    }
    takePositionals("env", rest, 0, 0, "");
    const app = resolveApp(values.app, ctx.cwd, "env");
    if (sub === "import") return importVars(ctx, app.ref, format);
    return listVars(ctx, app.ref, format as "human" | "json" | "shell", values.reveal ?? false);
  },
};

/** The links' variables of the answer (absent when the app has none). */
/** A value as the server masks it until revealed: the mask, or a URL whose password is the mask. */
const isMasked = (v: string) => v === MASK || urlPasswords(v).includes(MASK);

/** `export` lines for the variables, masked ones as comments (eval would set them to the mask). */
function shellLines(vars: Record<string, string>): { text: string; skipped: string[] } {
  const clear = Object.fromEntries(Object.entries(vars).filter(([, v]) => !isMasked(v)));
  const masked = Object.keys(vars).filter((n) => !Object.hasOwn(clear, n));
  const { text, skipped } = renderEnvShell(clear);
  return { text: `${text}${masked.map((n) => `# ${n} (masked: --reveal exports it)\n`).join("")}`, skipped };
}

async function listVars(
  ctx: Context,
  app: string,
  format: "human" | "json" | "shell",
  reveal: boolean,
): Promise<number> {
  // The server masks secret values unless asked to reveal them (ADR 0024); a read-only token gets 403.
  const { vars, linked = [] } = await ctx.client().call("GET /v1/apps/:app/env", {
    params: { app },
    query: { reveal: reveal || undefined },
  });
  // The links' variables, grouped by where they come from. JSON keeps the app's own variables only (what
  // `env import` reads back); `pier addon env` and `pier service` show the links'.
  const groups = new Map<string, Record<string, string>>();
  for (const l of linked) {
    const key = `${l.source.kind === "addon" ? "add-on" : "app"} ${l.source.name}`;
    groups.set(key, { ...(groups.get(key) ?? {}), [l.name]: reveal ? l.value : maskValue(l.name, l.value) });
  }
  const anyMasked = [...Object.values(vars), ...[...groups.values()].flatMap((g) => Object.values(g))].some(
    isMasked,
  );
  if (format === "json") ctx.out(json(vars));
  else if (Object.keys(vars).length === 0 && groups.size === 0)
    ctx.err("No variables set. Set one with: pier env set NAME VALUE\n");
  else {
    const render = (g: Record<string, string>) =>
      format === "shell" ? shellLines(g).text : renderEnvHuman(g);
    const own = Object.keys(vars).length > 0 ? render(vars) : "";
    const linkedText = [...groups].map(([src, g]) => `# from ${src}\n${render(g)}`).join("");
    ctx.out(`${own}${linkedText}`);
    if (format === "shell")
      for (const name of shellLines(vars).skipped)
        ctx.err(`warning: ${name} is not a shell variable name; left out\n`);
  }
  if (!reveal && anyMasked) ctx.err("Secret values are masked; --reveal shows them.\n");
  return 0;
}

async function setVar(
  ctx: Context,
  app: string,
  name: string,
  value: string,
  format: string,
): Promise<number> {
  const answer = await ctx.client().call("PUT /v1/apps/:app/env/:name", {
    params: { app, name },
    body: { value },
  });
  if (format === "json") ctx.out(json(answer));
  else ctx.out(`Set ${answer.name}.\n`);
  ctx.err(APPLY_HINT);
  return 0;
}

async function removeVars(ctx: Context, app: string, names: string[], format: string): Promise<number> {
  // One PATCH: all names are removed, or none (one bad name rejects the call).
  const answer = await ctx.client().call("PATCH /v1/apps/:app/env", {
    params: { app },
    body: { unset: names },
  });
  if (format === "json") ctx.out(json(answer.vars));
  else ctx.out(`Removed ${names.join(", ")}.\n`);
  ctx.err(APPLY_HINT);
  return 0;
}

async function importVars(ctx: Context, app: string, format: string): Promise<number> {
  if (ctx.stdinIsTTY) ctx.err("Reading NAME=value lines or a JSON object from stdin; end with Ctrl-D.\n");
  const parsed = parseEnvImport(unwrapVars(await ctx.readStdin()));
  if (parsed.errors.length > 0) {
    throw new CliError(
      `the variables on stdin have problems; nothing was changed:\n${parsed.errors.map((e) => `  - ${e}`).join("\n")}`,
    );
  }
  const names = Object.keys(parsed.vars);
  if (names.length === 0) {
    throw new CliError(
      "no variables on stdin; nothing was changed",
      "pier env import < .env  (NAME=value lines or JSON)",
    );
  }
  const answer = await ctx.client().call("PATCH /v1/apps/:app/env", {
    params: { app },
    body: { set: parsed.vars },
  });
  if (format === "json") ctx.out(json(answer.vars));
  else ctx.out(`Set ${names.length} variable${names.length === 1 ? "" : "s"}: ${names.join(", ")}.\n`);
  ctx.err(APPLY_HINT);
  return 0;
}

/** Also accepts the API's own `{ "vars": { ... } }` answer, so any env JSON can be imported back. */
function unwrapVars(text: string): string {
  if (!text.trimStart().startsWith("{")) return text;
  try {
    const data = JSON.parse(text) as unknown;
    if (typeof data === "object" && data !== null && Object.keys(data).length === 1) {
      const inner = (data as { vars?: unknown }).vars;
      if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) return JSON.stringify(inner);
    }
  } catch {
    // Not JSON: parseEnvImport names the problem.
  }
  return text;
}
