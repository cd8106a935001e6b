import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { CliError } from "./errors.js";

/**
 * Where the CLI finds the server: the only CLI module that reads process.env.
 * `PIER_URL` + `PIER_TOKEN` when set (CI, a remote server); otherwise `<data dir>/cli.json`,
 * which `pier server` writes at start (`PIER_DATA_DIR`, default `~/.pier`).
 */
export interface CliConfig {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:7070`. */
  url: string;
  token: string;
  /** Where url and token came from, for messages (never the token itself). */
  source: string;
}

export const CLI_CONFIG_FILE = "cli.json";

const httpUrl = z
  .string()
  .trim()
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  }, "must be an http(s) URL like http://127.0.0.1:7070")
  .transform((s) => s.replace(/\/+$/, ""));
const token = z.string().trim().min(1, "must not be empty");
const fileSchema = z.object({ url: httpUrl, token });

const START_HINT =
  "start the server with `pier server` (or `npm start`), which writes that file, or set PIER_URL and PIER_TOKEN";

/** `PIER_DATA_DIR`, default `~/.pier`; same rule as the server's config. */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.PIER_DATA_DIR;
  return resolve(dir !== undefined && dir !== "" ? dir : join(homedir(), ".pier"));
}

const issuesText = (error: z.ZodError, prefix = ""): string =>
  error.issues.map((i) => `${prefix}${i.path.join(".") || "value"}: ${i.message}`).join("; ");

export function loadCliConfig(env: NodeJS.ProcessEnv = process.env): CliConfig {
  const envUrl = env.PIER_URL || undefined;
  const envToken = env.PIER_TOKEN || undefined;

  if (envUrl !== undefined) {
    const url = httpUrl.safeParse(envUrl);
    if (!url.success) throw new CliError(`PIER_URL ${url.error.issues[0]?.message ?? "is invalid"}`);
    if (envToken === undefined) {
      throw new CliError(
        "PIER_URL is set but PIER_TOKEN is not",
        "set PIER_TOKEN to the server's API token as well (the local token is never sent to another server)",
      );
    }
    return { url: url.data, token: envToken, source: "PIER_URL" };
  }

  const path = join(dataDir(env), CLI_CONFIG_FILE);
  let raw: string;
  try {
    raw = readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new CliError(`no Pier server found: ${path} does not exist`, START_HINT);
    throw new CliError(`cannot read ${path}: ${code ?? String(e)}`, START_HINT);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new CliError(`${path} is not valid JSON`, START_HINT);
  }
  const file = fileSchema.safeParse(parsed);
  if (!file.success) throw new CliError(`${path} is invalid: ${issuesText(file.error)}`, START_HINT);
  return {
    url: file.data.url,
    token: envToken ?? file.data.token,
    source: envToken === undefined ? path : `${path} and PIER_TOKEN`,
  };
}
