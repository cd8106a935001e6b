import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { CliError, UsageError } from "./errors.js";

/** `.pier.json` ties a project folder (and its sub-folders) to an app: `{ "app": "<id>", "name": "<name>" }`. */
export const LINK_FILE = ".pier.json";

const linkSchema = z.object({
  app: z.string().trim().min(1, "must be the app's id"),
  name: z.string().optional(),
});
export type Link = z.output<typeof linkSchema>;

/** The app a command acts on: `ref` is what goes in `/v1/apps/:app` (a name or an id). */
export interface AppRef {
  ref: string;
  /** The link file it came from, when it came from one. */
  linkPath?: string;
}

/** The nearest link file in `start` or one of its parents. */
export function findLinkFile(start: string): { path: string; link: Link } | null {
  let dir = start;
  for (;;) {
    const path = join(dir, LINK_FILE);
    let raw: string | undefined;
    try {
      raw = readFileSync(path, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR")
        throw new CliError(`cannot read ${path}: ${code ?? String(e)}`);
    }
    if (raw !== undefined) return { path, link: parseLink(path, raw) };
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

function parseLink(path: string, raw: string): Link {
  const fix = `fix it, or replace it with \`pier link <app>\``;
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new CliError(`${path} is not valid JSON`, fix);
  }
  const parsed = linkSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "file"}: ${i.message}`).join("; ");
    throw new CliError(`${path} is invalid: ${issues}`, fix);
  }
  return parsed.data;
}

export function writeLinkFile(dir: string, app: { id: string; name: string }): string {
  const path = join(dir, LINK_FILE);
  try {
    writeFileSync(path, `${JSON.stringify({ app: app.id, name: app.name }, null, 2)}\n`);
  } catch (e) {
    throw new CliError(`cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  return path;
}

/** `--app` wins; else the nearest link file; else a usage error saying how to name one. */
export function resolveApp(flag: string | undefined, cwd: string, command: string): AppRef {
  if (flag !== undefined) {
    if (flag.trim() === "") throw new UsageError("--app: must not be empty", { command });
    return { ref: flag };
  }
  const found = findLinkFile(cwd);
  if (found) return { ref: found.link.app, linkPath: found.path };
  throw new UsageError(`no app given, and no ${LINK_FILE} in ${cwd} or its parents`, {
    command,
    hint: "pass --app <name|id>, or run `pier link <app>` in your project folder",
  });
}
