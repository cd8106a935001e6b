// How the text given to `env import` is read (a JSON object or array, or NAME=value lines). Pure.
import { shown, validateVariable } from "./env.js";

export interface EnvImport {
  vars: Record<string, string>;
  errors: string[];
}

/**
 * Reads the text given to `env import`:
 * - a JSON object of string values (`{"A": "1"}`), or a JSON array of `{ "name", "value" }` objects;
 * - otherwise `NAME=value` lines: blank lines and `#` comment lines are ignored, an `export ` prefix is
 *   allowed, spaces around `=` are ignored. An unquoted value runs to the end of the line, trimmed; a `#`
 *   after whitespace starts a comment. `'single quoted'` values are literal and stay on one line.
 *   `"double quoted"` values may span lines and read the escapes `\n`, `\r`, `\t`, `\"` and `\\` (any other
 *   backslash is kept as is).
 * Each variable is checked with {@link validateVariable}. A name given twice keeps its last value.
 * Errors name the line (or the JSON key), never a value: values may be secrets.
 */
export function parseEnvImport(text: string): EnvImport {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const trimmed = body.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) return parseJsonImport(trimmed);
  return parseLinesImport(body);
}

function parseJsonImport(text: string): EnvImport {
  const vars: Record<string, string> = {};
  const errors: string[] = [];
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return { vars, errors: [`The input is not valid JSON: ${(e as Error).message}`] };
  }
  const add = (where: string, name: string, value: unknown) => {
    if (typeof value !== "string") {
      errors.push(`${where}: the value of ${shown(name)} must be a string, not ${jsonType(value)}.`);
      return;
    }
    const bad = validateVariable(name, value);
    if (bad) errors.push(`${where}: ${bad}`);
    else vars[name] = value;
  };
  if (Array.isArray(data)) {
    data.forEach((item: unknown, i) => {
      const where = `Item ${i}`;
      if (typeof item !== "object" || item === null || Array.isArray(item)) {
        errors.push(`${where}: expected an object { "name": ..., "value": ... }, not ${jsonType(item)}.`);
        return;
      }
      const { name, value } = item as { name?: unknown; value?: unknown };
      if (typeof name !== "string") {
        errors.push(`${where}: "name" must be a string.`);
        return;
      }
      add(where, name, value);
    });
  } else if (typeof data === "object" && data !== null) {
    for (const [name, value] of Object.entries(data)) add(`Key ${shown(name)}`, name, value);
  } else {
    errors.push(`The JSON input must be an object of string values, not ${jsonType(data)}.`);
  }
  return { vars, errors };
}

function jsonType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const LINE_RE = /^\s*(?:export\s+)?([^=\s]+)\s*=(\s*)(.*)$/;

function parseLinesImport(text: string): EnvImport {
  const vars: Record<string, string> = {};
  const errors: string[] = [];
  const lines = text.split(/\r?\n/);
  let i = 0;
  while (i < lines.length) {
    const lineNo = i + 1;
    const line = lines[i] ?? "";
    i++;
    const t = line.trim();
    if (t === "" || t.startsWith("#")) continue;
    const m = LINE_RE.exec(line);
    if (!m) {
      errors.push(`Line ${lineNo}: expected NAME=value.`);
      continue;
    }
    const name = m[1] ?? "";
    const spaced = (m[2] ?? "") !== "";
    let rest = m[3] ?? "";
    let value: string;
    if (rest.startsWith('"')) {
      // Read until the closing quote, across lines when needed.
      let out = "";
      let pos = 1;
      let closed = false;
      for (;;) {
        while (pos < rest.length) {
          const c = rest[pos];
          if (c === "\\" && pos + 1 < rest.length) {
            const n = rest[pos + 1] as string;
            const esc: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };
            out += esc[n] ?? `\\${n}`;
            pos += 2;
          } else if (c === '"') {
            closed = true;
            break;
          } else {
            out += c;
            pos++;
          }
        }
        if (closed || i >= lines.length) break;
        out += "\n";
        rest = lines[i] ?? "";
        i++;
        pos = 0;
      }
      if (!closed) {
        errors.push(`Line ${lineNo}: the double-quoted value of ${name} is not closed.`);
        continue;
      }
      if (!onlyCommentAfter(rest.slice(pos + 1))) {
        errors.push(`Line ${lineNo}: unexpected text after the closing quote of ${name}.`);
        continue;
      }
      value = out;
    } else if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) {
        errors.push(
          `Line ${lineNo}: the single-quoted value of ${name} is not closed (single quotes stay on one line).`,
        );
        continue;
      }
      if (!onlyCommentAfter(rest.slice(end + 1))) {
        errors.push(`Line ${lineNo}: unexpected text after the closing quote of ${name}.`);
        continue;
      }
      value = rest.slice(1, end);
    } else if (spaced && rest.startsWith("#")) {
      value = ""; // `NAME= # comment`
    } else {
      value = rest.replace(/\s#.*$/, "").trim();
    }
    const bad = validateVariable(name, value);
    if (bad) errors.push(`Line ${lineNo}: ${bad}`);
    else vars[name] = value;
  }
  return { vars, errors };
}

function onlyCommentAfter(s: string): boolean {
  const t = s.trim();
  return t === "" || t.startsWith("#");
}
