/**
 * Environment variables: which names and values a user may set, how `env import` text is read, which
 * variables the platform sets in every instance, the health check paths, and secret masking. Pure.
 */

/** Variables the platform sets in every build and instance; a user cannot set or unset them. */
export const READONLY_VARIABLES: readonly string[] = [
  "APP_ID",
  "CC_APP_NAME",
  "APP_HOME",
  "INSTANCE_NUMBER",
  "INSTANCE_ID",
  "INSTANCE_TYPE",
  "PORT",
  "CC_DEPLOYMENT_ID",
  "CC_COMMIT_ID",
];

/** The one name of the contract with `-` in it (section 2.4). `CC_DOCKER_FIXED_CIDR_V6` is its plain spelling. */
export const DASHED_VARIABLE = "CC_DOCKER_FIXED-CIDR-V6";

export const MAX_NAME_LENGTH = 255;
/** 64 KiB, counted in UTF-8 bytes. */
export const MAX_VALUE_BYTES = 64 * 1024;

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names of Object.prototype's properties (`__proto__`, `constructor`, `toString`, `valueOf`...): stored as
 * keys of a plain object they are lost or change the object, so they are refused as variable names.
 */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/** A name as it can be shown in a message: quoted, escaped, cut when long. */
function shown(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

/** null when `name` may be set (or unset) by a user, else a message naming it and the rule. */
export function validateVariableName(name: string): string | null {
  if (name.length === 0) return "A variable name must not be empty.";
  if (name.length > MAX_NAME_LENGTH) {
    return `The variable name ${shown(name)} is too long (${name.length} characters; at most ${MAX_NAME_LENGTH}).`;
  }
  if (READONLY_VARIABLES.includes(name)) {
    return `${name} is set by the platform in every instance and cannot be changed.`;
  }
  if (name === DASHED_VARIABLE) return null;
  if (PROTOTYPE_KEYS.has(name)) {
    return `The variable name ${shown(name)} is reserved (it names a property of every JavaScript object): choose another name.`;
  }
  if (!NAME_RE.test(name)) {
    return `The variable name ${shown(name)} is invalid: use ASCII letters, digits and _, not starting with a digit.`;
  }
  return null;
}

/** null when `name=value` may be set, else a message naming the variable and the rule (never the value). */
export function validateVariable(name: string, value: string): string | null {
  const bad = validateVariableName(name);
  if (bad) return bad;
  if (value.includes("\0")) return `The value of ${name} contains a NUL character, which is not allowed.`;
  const bytes = new TextEncoder().encode(value).length;
  if (bytes > MAX_VALUE_BYTES) {
    return `The value of ${name} is too long (${bytes} bytes; at most ${MAX_VALUE_BYTES}, the cap on one value's size).`;
  }
  return null;
}

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

export interface PlatformVariableInput {
  appId: string;
  appName: string;
  appHome: string;
  instanceNumber: number;
  instanceId: string;
  instanceType: "build" | "production";
  port: number;
  deploymentId: string;
  commitId: string;
}

/** The read-only variables the platform sets in a build or an instance. */
export function platformVariables(p: PlatformVariableInput): Record<string, string> {
  return {
    APP_ID: p.appId,
    CC_APP_NAME: p.appName,
    APP_HOME: p.appHome,
    INSTANCE_NUMBER: String(p.instanceNumber),
    INSTANCE_ID: p.instanceId,
    INSTANCE_TYPE: p.instanceType,
    PORT: String(p.port),
    CC_DEPLOYMENT_ID: p.deploymentId,
    CC_COMMIT_ID: p.commitId,
  };
}

/** `$APP_HOME` (not followed by a name character) and `${APP_HOME}`; there is no escape. */
const APP_HOME_RE = /\$\{APP_HOME\}|\$APP_HOME(?![A-Za-z0-9_])/g;

/**
 * The environment of an instance: the app's variables with `$APP_HOME` / `${APP_HOME}` expanded in their
 * values, then the platform variables on top. An app variable with a read-only name (stored before the
 * rule existed) is dropped: the platform owns those names.
 */
export function instanceEnvironment(
  appVars: Record<string, string>,
  platformVars: Record<string, string>,
  appHome: string,
): Record<string, string> {
  // Built from entries (own data properties): a name like `__proto__`, stored before the rule refused it,
  // stays a variable instead of changing the object.
  const entries: [string, string][] = [];
  for (const [name, value] of Object.entries(appVars)) {
    if (READONLY_VARIABLES.includes(name) || Object.hasOwn(platformVars, name)) continue;
    entries.push([name, value.replace(APP_HOME_RE, () => appHome)]);
  }
  return Object.fromEntries([...entries, ...Object.entries(platformVars)]);
}

export const HEALTH_CHECK_PATH = "CC_HEALTH_CHECK_PATH";
const NUMBERED_PATH_RE = /^CC_HEALTH_CHECK_PATH_(\d+)$/;
const MAX_PATH_LENGTH = 2048;

/** null when `path` can be requested by the health check, else the rule it breaks. */
function pathProblem(path: string): string | null {
  if (!path.startsWith("/")) return "must start with /";
  if (path.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters long`;
  // Printable ASCII only: no whitespace, no control character; other characters must be percent-encoded.
  if (/[^\x21-\x7e]/.test(path))
    return "must not contain whitespace or control characters (percent-encode others)";
  return null;
}

/**
 * The paths the health check requests, in order: CC_HEALTH_CHECK_PATH first, then CC_HEALTH_CHECK_PATH_<n>
 * by increasing n (gaps allowed). None set: `/`. A path given twice is checked once. `_<n>` must be
 * written without leading zeros (`_01` is an error, so that `_01` and `_1` never compete).
 */
export function healthCheckPaths(vars: Record<string, string>): { paths: string[]; errors: string[] } {
  const errors: string[] = [];
  const named: { name: string; n: number; value: string }[] = [];
  const single = vars[HEALTH_CHECK_PATH];
  if (single !== undefined) named.push({ name: HEALTH_CHECK_PATH, n: -1, value: single });
  for (const [name, value] of Object.entries(vars)) {
    const m = NUMBERED_PATH_RE.exec(name);
    if (!m) continue;
    const digits = m[1] as string;
    if (digits.length > 1 && digits.startsWith("0")) {
      errors.push(
        `${name}: write the number without leading zeros (${HEALTH_CHECK_PATH}_${Number(digits)}).`,
      );
      continue;
    }
    named.push({ name, n: Number(digits), value });
  }
  named.sort((a, b) => a.n - b.n);
  const paths: string[] = [];
  for (const { name, value } of named) {
    const problem = pathProblem(value);
    if (problem) errors.push(`${name}=${JSON.stringify(value)}: a health check path ${problem}.`);
    else if (!paths.includes(value)) paths.push(value);
  }
  if (paths.length === 0 && errors.length === 0) paths.push("/");
  return { paths, errors };
}

/**
 * Words that make a variable secret when a `_`/`-`-separated part of its name is, or ends with, one of them
 * (`DB_PASS`, `FTP_PASSWD`, `MYSQL_PWD`, `API_KEY`, `GOOGLE_CREDENTIALS`, `REDISCLI_AUTH`, `NPM_TOKEN`,
 * `WP_NONCE_SALT`: WordPress's salts sign its cookies with its keys).
 */
export const SECRET_WORDS: readonly string[] = [
  "PASSWORD",
  "PASSWD",
  "PASS",
  "PWD",
  "TOKEN",
  "SECRET",
  "KEY",
  "AUTH",
  "CREDENTIAL",
  "SALT",
];

/**
 * A variable is secret when a part of its name (split on `_` and `-`, case-insensitive) is one of
 * {@link SECRET_WORDS} or ends with one, optionally plural: `NPM_TOKEN`, `DB_PASSWORD`, `DB_PASS`, `APIKEY`,
 * `AWS_SECRET_ACCESS_KEY`, `REDISCLI_AUTH`, `API_KEYS`, `GOOGLE_CREDENTIALS`. `KEYBOARD_LAYOUT` or
 * `TOKENIZER` are not (the word must end the part). The rule errs on the side of masking (`MONKEY`,
 * `BYPASS` are secret).
 */
export function isSecretVariable(name: string): boolean {
  return name
    .toUpperCase()
    .split(/[_-]/)
    .some((part) => SECRET_WORDS.some((w) => part.endsWith(w) || part.endsWith(`${w}S`)));
}

/** The smallest secret value masked: shorter ones would mask ordinary words. */
export const MIN_SECRET_LENGTH = 4;

/** What a secret is replaced with. */
export const MASK = "****";

/**
 * `scheme://userinfo@` (any scheme). The userinfo runs to the last `@` before the host, as URL parsers read
 * it: a raw `@` in a password (`https://user:p@ss@host`) or an e-mail user name (`https://me@corp.com:pw@host`)
 * belongs to it. It stops at what ends a URL's authority (`/`, `?`, `#`), at white space and at quotes.
 */
const URL_USERINFO_RE = /([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"'`<>\\]*)@/gi;

/** A userinfo's password (after its first `:`), or null when it has none. */
function passwordOf(userinfo: string): string | null {
  const colon = userinfo.indexOf(":");
  return colon < 0 || colon === userinfo.length - 1 ? null : userinfo.slice(colon + 1);
}

/** The passwords of the URLs in `text` (`scheme://user:password@host`), as written. */
export function urlPasswords(text: string): string[] {
  if (!text.includes("://")) return [];
  return [...text.matchAll(URL_USERINFO_RE)].flatMap((m) => {
    const pw = passwordOf(m[2] ?? "");
    return pw === null ? [] : [pw];
  });
}

/**
 * Masks the credentials of every URL in `text`: `https://user:****@host`; a user part alone is masked when it
 * is long enough to be a token (16 characters or more: `https://****@host`; `ssh://git@host` stays as it is).
 */
export function maskUrlCredentials(text: string): string {
  if (!text.includes("://")) return text;
  return text.replace(URL_USERINFO_RE, (whole, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    if (colon < 0) return userinfo.length >= 16 ? `${scheme}${MASK}@` : whole;
    return passwordOf(userinfo) === null ? whole : `${scheme}${userinfo.slice(0, colon)}:${MASK}@`;
  });
}

/**
 * A variable's value as `pier env`, `pier addon env` and the console show it until revealed: a secret's
 * value is MASK, any other keeps its shape with the credentials of its URLs masked.
 */
export function shownValue(name: string, value: string): string {
  return isSecretVariable(name) ? MASK : maskUrlCredentials(value);
}

/** Variables as shown until revealed (`shownValue`); an empty value stays empty (nothing to hide). */
export function shownVariables(vars: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, v === "" ? v : shownValue(k, v)]));
}

/**
 * Why `value` cannot be set as `name`: it is what a masked listing shows (MASK, or a URL whose password is
 * MASK), so setting it would replace the secret with the mask (`pier env --format json` then `env import`);
 * null otherwise.
 */
export function maskedValueProblem(name: string, value: string): string | null {
  if (value === MASK && isSecretVariable(name))
    return `The value of ${name} is Pier's mask (${MASK}), not a secret: it comes from a masked listing. Export the values with pier env --reveal.`;
  if (urlPasswords(value).includes(MASK))
    return `The value of ${name} is a URL whose password is Pier's mask (${MASK}): it comes from a masked listing. Export the values with pier env --reveal.`;
  return null;
}

/** Replaces secrets in a text: a deploy log line, a deployment's reason, an error message. */
export type Masker = (text: string) => string;

/**
 * The masker of an app: it masks the credentials of any URL in the text, the value of each secret variable
 * (and each line of a multi-line one, its percent-encoded form and its form inside a JSON string), the password of any
 * `scheme://user:password@` URL found in any variable's value (e.g. a `DATABASE_URL`), and each of
 * `secrets` (e.g. the app's private SSH key, line by line; its `-----BEGIN/END` lines are not secret).
 * Values shorter than 4 characters are not masked.
 */
export function secretMasker(
  vars: Readonly<Record<string, string>>,
  secrets: readonly string[] = [],
): Masker {
  const found = new Set<string>();
  const add = (s: string) => {
    if (s.length >= MIN_SECRET_LENGTH) found.add(s);
  };
  const addValue = (value: string) => {
    add(value);
    add(encodeURIComponent(value));
    // As a JSON string shows it (messages quote values with JSON.stringify; tools print JSON): `{\"k\":1}`.
    add(JSON.stringify(value).slice(1, -1));
    if (value.includes("\n")) {
      for (const line of value.split(/\r?\n/)) {
        const t = line.trim();
        if (!t.startsWith("-----")) add(t);
      }
    }
  };
  for (const [name, value] of Object.entries(vars)) {
    if (isSecretVariable(name)) addValue(value);
    for (const pw of urlPasswords(value)) {
      add(pw);
      try {
        // Written raw (`p@ss`) or percent-encoded (`p%40ss`): a tool may print either form.
        const plain = decodeURIComponent(pw);
        add(plain);
        add(encodeURIComponent(plain));
      } catch {
        // Not valid percent-encoding: the raw form is masked already.
      }
    }
  }
  for (const s of secrets) addValue(s);
  // Longest first, so that a secret containing another is masked whole.
  const ordered = [...found].sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = text;
    for (const s of ordered) if (out.includes(s)) out = out.split(s).join(MASK);
    return maskUrlCredentials(out);
  };
}

/** {@link secretMasker} for one text. */
export function maskSecrets(text: string, vars: Readonly<Record<string, string>>): string {
  return secretMasker(vars)(text);
}
