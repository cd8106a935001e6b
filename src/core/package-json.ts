/** package.json, its packageManager field and .gitignore, as the Node.js runtime reads them. Pure. */

import semver from "semver";
import { z } from "zod";
import { hasControlCharacter } from "./plan-vars.js";

// ---------------------------------------------------------------------------------------------------
// package.json

const field = (what: string) =>
  z.string({ error: (iss) => (iss.input === undefined ? "is missing" : `must be ${what}`) });

const PackageJsonSchema = z.looseObject({
  name: field("a string").min(1, "must not be empty"),
  version: field("a string").min(1, "must not be empty"),
  main: field("a file path (a string)")
    .min(1, "must not be empty")
    .refine((s) => !s.startsWith("-") && !hasControlCharacter(s), "must be a file path")
    .optional(),
  scripts: z
    .record(z.string(), z.string({ error: "must be a string (a command)" }), {
      error: "must be an object of commands",
    })
    .optional(),
  engines: z
    .looseObject({ node: z.string({ error: "must be a string (a version range)" }).optional() })
    .optional(),
  packageManager: z.string({ error: 'must be a string such as "pnpm@9.1.0"' }).optional(),
});

export type PackageJson = z.infer<typeof PackageJsonSchema>;

/** What to add for each required field, appended to its error. */
const FIELD_HINTS: Record<string, string> = {
  name: 'add e.g. "name": "my-app"',
  version: 'add e.g. "version": "1.0.0"',
};

/** package.json read and checked: every problem, each naming the field and what to write. */
export function parsePackageJson(
  text: string | null,
): { ok: true; pkg: PackageJson } | { ok: false; errors: string[]; enginesNode?: string } {
  if (text === null) {
    return {
      ok: false,
      errors: [
        'No package.json at the root of the application: add one with "name", "version" and "scripts": { "start": "node server.js" } (or "main": "server.js").',
      ],
    };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch (e) {
    return {
      ok: false,
      errors: [`package.json is not valid JSON: ${(e as Error).message}. Fix its syntax.`],
    };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { ok: false, errors: ["package.json must hold a JSON object ({ ... })."] };
  }
  const errors: string[] = [];
  const parsed = PackageJsonSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.map(String).join(".");
      const hint = issue.message === "is missing" ? FIELD_HINTS[path] : undefined;
      errors.push(`package.json: "${path}" ${issue.message}${hint ? `: ${hint}` : ""}.`);
    }
  }
  const obj = raw as { main?: unknown; scripts?: unknown; engines?: { node?: unknown } };
  const scripts = obj.scripts;
  const hasStart =
    typeof scripts === "object" &&
    scripts !== null &&
    (scripts as Record<string, unknown>).start !== undefined;
  if (obj.main === undefined && !hasStart) {
    errors.push(
      'package.json has neither "scripts.start" nor "main": add "scripts": { "start": "node server.js" } or "main": "server.js" (the file that starts the application).',
    );
  }
  if (errors.length > 0 || !parsed.success) {
    // engines.node, when readable, still decides the version (so that its problems are listed too).
    const node = typeof obj.engines === "object" && obj.engines !== null ? obj.engines.node : undefined;
    return typeof node === "string" ? { ok: false, errors, enginesNode: node } : { ok: false, errors };
  }
  return { ok: true, pkg: parsed.data };
}

export interface PackageManagerField {
  raw: string;
  name: string;
  version: string;
  /** null when the version is not semver (corepack also accepts a URL). */
  major: number | null;
}

/** `name@version` (an optional `+sha...` hash after it), as Corepack reads it; null when not that shape. */
export function parsePackageManager(value: string): PackageManagerField | null {
  const m = /^([a-z][a-z0-9-]*)@([^\s+]+)(\+[A-Za-z0-9.]+)?$/.exec(value.trim());
  if (!m) return null;
  const version = m[2] as string;
  const v = semver.valid(version);
  return { raw: value.trim(), name: m[1] as string, version, major: v ? semver.major(v) : null };
}

/** The npm package whose releases a packageManager field names (Corepack fetches it from there), or null. */
export function packageManagerPackage(pm: PackageManagerField): string | null {
  if (pm.major === null) return null;
  if (pm.name === "yarn") return pm.major >= 2 ? "@yarnpkg/cli-dist" : "yarn";
  return ["pnpm", "npm", "bun"].includes(pm.name) ? pm.name : null;
}

/** The fields through which a package brings in others (workspaces: their packages' own). */
const INSTALLING_FIELDS = [
  "dependencies",
  "devDependencies",
  "optionalDependencies",
  "peerDependencies",
  "bundleDependencies",
  "bundledDependencies",
  "workspaces",
] as const;

/**
 * Whether package.json declares nothing an install would bring in: each of those fields absent, or an
 * empty object or list. Its install's result is then known without a lock file. Unreadable: false.
 */
export function declaresNoDependencies(packageJson: string | null): boolean {
  let pkg: unknown;
  try {
    pkg = JSON.parse((packageJson ?? "").replace(/^\uFEFF/, ""));
  } catch {
    return false;
  }
  if (typeof pkg !== "object" || pkg === null || Array.isArray(pkg)) return false;
  return INSTALLING_FIELDS.every((f) => {
    const v = (pkg as Record<string, unknown>)[f];
    if (v === undefined) return true;
    return typeof v === "object" && v !== null && Object.keys(v).length === 0;
  });
}

/**
 * Whether `.gitignore` keeps the root `node_modules` folder out of git (`node_modules`, `/node_modules`,
 * with or without a trailing `/`, or `**\/node_modules`), and no later `!` line takes it back.
 */
export function ignoresNodeModules(gitignore: string | null): boolean {
  if (gitignore === null) return false;
  const patterns = new Set(["node_modules", "/node_modules", "**/node_modules"]);
  let ignored = false;
  for (const line of gitignore.split(/\r?\n/)) {
    let t = line.trim();
    if (t === "" || t.startsWith("#")) continue;
    const negated = t.startsWith("!");
    if (negated) t = t.slice(1);
    if (t.endsWith("/")) t = t.slice(0, -1);
    if (patterns.has(t)) ignored = !negated;
  }
  return ignored;
}
