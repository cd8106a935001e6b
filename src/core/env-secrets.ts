// Which variables are secrets, and how their values (and passwords in URLs) are masked wherever Pier
// shows or logs text. Pure.

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
