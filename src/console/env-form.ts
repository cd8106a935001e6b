/**
 * The variables form of the console, as data: rows made from the app's variables, the PATCH body the rows
 * make (and each row's problem, shown before anything is sent), the expert mode's `NAME=value` text, and
 * the masking of the links' values. Pure (no DOM): unit-tested in test/unit/console.
 */
import { validateVariable } from "../core/env.js";
import { shownValue } from "../core/env-secrets.js";

export interface Row {
  /** Stable per row while the user edits (the list's key). */
  key: number;
  name: string;
  value: string;
  revealed: boolean;
}

let lastKey = 0;
export const newKey = (): number => ++lastKey;

/** One row per variable, sorted by name. */
export const rowsOf = (vars: Readonly<Record<string, string>>): Row[] =>
  Object.entries(vars)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ key: newKey(), name, value, revealed: false }));

/**
 * The rows as `NAME=value` lines that `parseEnvImport` (src/core/env.ts) reads back to the same variables:
 * a value that an unquoted line would change (quotes, `#`, a backslash, a line break or tab, spaces at
 * either end) is double-quoted with `\\`, `\"`, `\n`, `\r`, `\t` escaped.
 */
export function toLines(rows: readonly Row[]): string {
  return rows
    .filter((r) => r.name !== "")
    .map((r) =>
      /["'#\\\n\r\t]|^\s|\s$/.test(r.value)
        ? `${r.name}="${r.value
            .replace(/\\/g, "\\\\")
            .replace(/"/g, '\\"')
            .replace(/\n/g, "\\n")
            .replace(/\r/g, "\\r")
            .replace(/\t/g, "\\t")}"`
        : `${r.name}=${r.value}`,
    )
    .join("\n");
}

export interface Changes {
  /** Variables to set (new or changed). */
  set: Record<string, string>;
  /** Saved variables no row names any more. */
  unset: string[];
  /** Row key -> why the row cannot be sent (the platform's rule, or a name given twice). */
  problems: Map<number, string>;
  count: number;
}

/** What the rows change against `saved`: the PATCH body, and each row's problem. Blank rows are ignored. */
export function changes(saved: Readonly<Record<string, string>>, rows: readonly Row[]): Changes {
  const problems = new Map<number, string>();
  const seen = new Set<string>();
  const set: Record<string, string> = {};
  for (const r of rows) {
    if (r.name === "" && r.value === "") continue;
    const p = validateVariable(r.name, r.value);
    if (p) problems.set(r.key, p);
    else if (seen.has(r.name)) problems.set(r.key, `${r.name} is given twice.`);
    seen.add(r.name);
    if (!p && (!Object.hasOwn(saved, r.name) || saved[r.name] !== r.value)) set[r.name] = r.value;
  }
  const unset = Object.keys(saved).filter((n) => !seen.has(n));
  return { set, unset, problems, count: Object.keys(set).length + unset.length };
}

/** A link's value as shown until revealed: secrets masked, a URL's password masked (as `pier env`). */
export const masked = shownValue;
