/**
 * Environment variables: which names and values a user may set, which variables the platform sets in
 * every instance, the health check paths. Pure. How `env import` text is read: env-import.ts; which
 * variables are secrets and how they are masked: env-secrets.ts.
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
export function shown(name: string): string {
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
