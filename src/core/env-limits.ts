/**
 * The caps on an app's variables (ADR 0022), under what the engine accepts. Measured on Docker 20.10 with
 * the instance's variables in the create request's body: the kernel refuses to start the instance's
 * process (E2BIG, "argument list too long") for one `NAME=value` of 128 KiB or more (MAX_ARG_STRLEN) and
 * for an environment past about 2 MiB in all (a quarter of the 8 MiB stack limit, pointers included).
 * Every path that sets variables (the API, so the console and the CLI) checks the app's own variables;
 * a deploy checks the environment its instances would get (with its links') before anything starts.
 */
import { MAX_VALUE_BYTES } from "./env.js";

/** Variables an app may set. */
export const MAX_VARIABLES = 1000;

/** Bytes an app's own variables may take in all (each `NAME=value` and its terminator). */
export const MAX_ENV_BYTES = 256 * 1024;

/** Bytes the environment of an instance may take: the app's variables, its links' and the platform's. */
export const MAX_INSTANCE_ENV_BYTES = 1024 * 1024;

export { MAX_VALUE_BYTES };

const encoder = new TextEncoder();

/** The bytes `vars` take in a process's environment: `NAME=value` and a NUL each. */
export function envBytes(vars: Readonly<Record<string, string>>): number {
  let n = 0;
  for (const [k, v] of Object.entries(vars)) n += encoder.encode(k).length + encoder.encode(v).length + 2;
  return n;
}

const kib = (n: number) => (n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

/**
 * null if an app may hold `vars` (all its own variables after a change, or all it publishes: `what`),
 * else the cap it passes.
 */
export function envCapProblem(
  vars: Readonly<Record<string, string>>,
  appName: string,
  what: "variables" | "published variables" = "variables",
): string | null {
  const count = Object.keys(vars).length;
  if (count > MAX_VARIABLES)
    return `${appName} would have ${count} ${what}: at most ${MAX_VARIABLES} (the cap on the number of variables).`;
  const bytes = envBytes(vars);
  if (bytes > MAX_ENV_BYTES)
    return `${appName}'s ${what} would take ${bytes} bytes: at most ${MAX_ENV_BYTES} (${kib(MAX_ENV_BYTES)}, the cap on the variables' total size, names and values).`;
  return null;
}

/** null if an instance may start with `env` (the merged environment of a deploy), else why not. */
export function instanceEnvProblem(env: Readonly<Record<string, string>>, appName: string): string | null {
  const bytes = envBytes(env);
  if (bytes > MAX_INSTANCE_ENV_BYTES)
    return `The environment of ${appName}'s instances (its variables, its links' and the platform's) would take ${bytes} bytes: at most ${MAX_INSTANCE_ENV_BYTES} (${kib(MAX_INSTANCE_ENV_BYTES)}, the cap on an instance's environment).`;
  return null;
}

/** The hint of a variables cap: nothing changed, and what to do. */
export const ENV_CAP_HINT =
  "Nothing was changed. Remove variables you no longer use (pier env unset NAME), or keep large data in a file or an add-on; these caps are the same for every app.";
