import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { z } from "zod";
import { FLAVORS } from "../core/model.js";
import { UsageError } from "./errors.js";

/** Options most commands share. Spread the ones a command takes into its option table. */
export const HELP = { help: { type: "boolean", short: "h" } } as const;
export const APP = { app: { type: "string", short: "a" } } as const;
export const FORMAT = { format: { type: "string" } } as const;

/** node:util parseArgs, strict, with positionals; its errors become usage errors naming the flag. */
export function parseFlags<const O extends ParseArgsOptionsConfig>(
  command: string,
  args: string[],
  options: O,
) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw flagError(command, e);
  }
}

function flagError(command: string, e: unknown): unknown {
  const err = e as { code?: unknown; message?: unknown };
  if (typeof err.code !== "string" || !err.code.startsWith("ERR_PARSE_ARGS")) return e;
  const message = String(err.message);
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
    return new UsageError(`unknown option '${flag}' for 'pier ${command}'`, {
      command,
      listCommands: true,
      hint: flag.startsWith("--") ? undefined : `if '${flag}' is a value, not an option, put it after '--'`,
    });
  }
  // Node's own wording is precise here ("Option '--app <value>' argument missing"): its first line is
  // the problem, the others (a value starting with '-' goes as '--flag=-x') the hint.
  const [first = message, ...more] = message.split("\n");
  return new UsageError(first.replace(/\.$/, ""), { command, hint: more.join(" ") || undefined });
}

/**
 * Checks flag values against a zod schema whose keys are the flag names; every problem is listed,
 * each as `--flag: rule`.
 */
export function checkFlags<S extends z.ZodType>(command: string, schema: S, values: unknown): z.output<S> {
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  throw new UsageError(
    parsed.error.issues.map((i) => `${i.path.length > 0 ? `--${i.path.join(".")}` : "flags"}: ${i.message}`),
    { command },
  );
}

/**
 * A command's subcommand from its table (its own keys only: `toString` is no subcommand); an unknown one is
 * a usage error that names what the command takes.
 */
export function subcommand<H>(
  command: string,
  table: Readonly<Record<string, H>>,
  sub: string,
  expected: string,
): H {
  const handler = Object.hasOwn(table, sub) ? table[sub] : undefined;
  if (handler === undefined)
    throw new UsageError(`unknown ${command} command '${sub}' (expected ${expected})`, { command });
  return handler;
}

/** Between min and max positionals; `what` names the missing ones in the message. */
export function takePositionals(
  command: string,
  positionals: string[],
  min: number,
  max: number,
  what: string,
): string[] {
  if (positionals.length < min) throw new UsageError(`missing ${what}`, { command });
  if (positionals.length > max) {
    throw new UsageError(`unexpected argument '${positionals[max]}'`, { command });
  }
  return positionals;
}

// Flag value rules, shared by commands.
export const formatFlag = <const F extends readonly [string, ...string[]]>(formats: F) =>
  z.enum(formats, { error: `must be one of ${formats.join(", ")}` }).default(formats[0]);
export const humanJson = formatFlag(["human", "json"]);

/** A whole number of at least `min`; upper limits are the server's to set. */
export const countFlag = (min: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number, at least ${min}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be a whole number, at least ${min}`));

export const flavorFlag = z.enum(FLAVORS, { error: `must be one of ${FLAVORS.join(", ")}` });

/** `--since` / `--until`: an ISO time or a duration back from now (`30s`, `10m`, `2h`, `1d`). */
export const timeFlag = z
  .string()
  .refine(
    (s) => /^\d+[smhd]$/.test(s) || (/^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s))),
    "must be an ISO time (2026-01-31T12:00:00Z) or a duration such as 10m or 2h",
  );

/** Splits `pier [global flags] <command> [args]`: the first word that is not a flag or a flag's value. */
export function splitCommand(argv: readonly string[]): { command: string | undefined; rest: string[] } {
  const takesValue = new Set(["--app", "-a", "--format"]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") break;
    if (takesValue.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith("-") && arg !== "-") continue;
    return { command: arg, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { command: undefined, rest: [...argv] };
}
