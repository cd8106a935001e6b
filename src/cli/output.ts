import { CliError, UsageError } from "./errors.js";

/** Where a command reads and writes. `main.ts` binds it to the process; tests bind it to buffers. */
export interface Io {
  /** Data: what the command answers. */
  out(text: string): void;
  /** Progress, warnings, errors. */
  err(text: string): void;
  cwd: string;
  stdinIsTTY: boolean;
  /** The whole of stdin, as text. */
  readStdin(): Promise<string>;
  /** Asks on stderr, reads one line from stdin; null when stdin ends first. */
  prompt(question: string): Promise<string | null>;
}

export const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
export const ndjson = (value: unknown): string => `${JSON.stringify(value)}\n`;

/** Left-aligned columns separated by two spaces; empty cells print as `-`. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = [headers, ...rows].map((row) => headers.map((_, i) => row[i] || "-"));
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

/** Quotes a value for a POSIX shell: inside single quotes nothing is special but `'` itself. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A name a POSIX shell accepts after `export`. */
export const isShellName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);

const sortedEntries = (vars: Record<string, string>) =>
  Object.entries(vars).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

export function renderEnvHuman(vars: Record<string, string>): string {
  return sortedEntries(vars)
    .map(([name, value]) => `${name}=${value}\n`)
    .join("");
}

/**
 * `export NAME='value'` lines that `eval "$(pier env --format shell)"` loads exactly (multi-line
 * values, quotes, `$` included). Names a shell cannot export (`CC_DOCKER_FIXED-CIDR-V6`) are
 * returned in `skipped` for a warning instead of producing a line the shell would reject.
 */
export function renderEnvShell(vars: Record<string, string>): { text: string; skipped: string[] } {
  const skipped: string[] = [];
  let text = "";
  for (const [name, value] of sortedEntries(vars)) {
    if (isShellName(name)) text += `export ${name}=${shellQuote(value)}\n`;
    else skipped.push(name);
  }
  return { text, skipped };
}

/** The stderr text for a failure: `pier: <message>`, then `hint: <hint>`, then usage pointers. */
export function renderError(err: unknown, commandNames: readonly string[]): string {
  if (err instanceof UsageError) {
    let text = err.problems.map((p) => `pier: ${p}\n`).join("");
    if (err.hint) text += `hint: ${err.hint}\n`;
    if (err.listCommands) text += `\nCommands: ${commandNames.join(", ")}\n`;
    text += err.command
      ? `Run 'pier ${err.command} --help' for its options.\n`
      : "Run 'pier help' for the commands and their options.\n";
    return text;
  }
  if (err instanceof CliError) {
    return `pier: ${err.message}\n${err.hint ? `hint: ${err.hint}\n` : ""}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return `pier: unexpected error: ${message}\nhint: this is a bug in pier; please report it with the command you ran\n`;
}
