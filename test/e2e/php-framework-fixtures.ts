// Symfony 6.4 and Laravel 10 apps as a user without Packagist commits them (issue 17, item 2;
// docs/research/php-frameworks-from-debian.md): Debian trixie's packaged PHP code copied into lib/, each
// package given a composer.json, required through composer path repositories, locked by composer itself
// with no network. The apps' own files are in php-symfony-app.ts and php-laravel-app.ts.
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { debianPackages } from "../support/debian-packages.js";
import { composerLock } from "./php-fixtures.js";
import { LARAVEL_FILES } from "./php-laravel-app.js";
import { SYMFONY_FILES } from "./php-symfony-app.js";

export const SYMFONY_DEBS = [
  "php-symfony-framework-bundle",
  "php-symfony-runtime",
  "php-symfony-twig-bundle",
  "php-symfony-dotenv",
  "php-symfony-yaml",
];
export const LARAVEL_DEBS = ["php-laravel-framework"];

/** Writes `files` (path -> text) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
}

/** The Debian version of `deb` (without its revision) in the set extracted at `root` (`<entry>/root`). */
function debVersion(root: string, deb: string): string {
  const list = readFileSync(join(root, "..", "packages.txt"), "utf8");
  const m = new RegExp(`^${deb}_([0-9.]+)`, "m").exec(list);
  if (!m?.[1]) throw new Error(`${deb} is not in ${root}`);
  return m[1];
}

const kebab = (s: string) => s.replace(/(?<!^)(?=[A-Z])/g, "-").toLowerCase();

/** The composer name upstream gives the package Debian installs at `rel` (under /usr/share/php). */
function packageName(rel: string): string {
  const [top, kind = "", name = ""] = rel.split("/");
  if (top === "Symfony") {
    const suffix = kind === "Bridge" ? "-bridge" : kind === "Contracts" ? "-contracts" : "";
    return `symfony/${kebab(name)}${suffix}`;
  }
  if (rel === "Illuminate") return "laravel/framework";
  if (rel === "Twig") return "twig/twig";
  if (top === "Psr" || top === "Illuminate") return `${top.toLowerCase()}/${kebab(kind)}`;
  return `debian/${rel.split("/").map(kebab).join("-")}`;
}

/** Package roots: the folders with a pkg-php-tools autoload.php, relative to `lib`. */
function packageRoots(lib: string, rel = ""): string[] {
  const here = join(lib, rel);
  const found: string[] = rel && readdirSync(here).includes("autoload.php") ? [rel] : [];
  for (const e of readdirSync(here)) {
    if (statSync(join(here, e)).isDirectory()) found.push(...packageRoots(lib, rel ? `${rel}/${e}` : e));
  }
  return found;
}

/**
 * The composer.json of the package at `rel`: its dependencies and helper files are those its Debian
 * autoload.php requires; its classes a classmap (Debian's folders do not always follow PSR-4).
 */
function composerJson(lib: string, rel: string, roots: Set<string>, version: string): object {
  const src = readFileSync(join(lib, rel, "autoload.php"), "utf8");
  const require: Record<string, string> = {};
  const files: string[] = [];
  for (const m of src.matchAll(
    /require_once\s+(?:'\/usr\/share\/php\/([^']+)'|__DIR__\s*\.\s*'\/([^']+)')/g,
  )) {
    const path = m[1] ?? normalize(join(rel, m[2] ?? ""));
    if (path.endsWith("/autoload.php")) {
      const dep = dirname(path);
      if (roots.has(dep)) require[packageName(dep)] = "*";
    } else if (m[2]) files.push(m[2]);
  }
  const name = packageName(rel);
  const autoload =
    name === "laravel/framework"
      ? { classmap: ["Foundation/"], files: ["Foundation/helpers.php"] }
      : { classmap: [""], ...(files.length ? { files } : {}) };
  if (name !== "symfony/runtime") return { name, version, require, autoload };
  return {
    name,
    version,
    type: "composer-plugin",
    require: { ...require, "composer-plugin-api": "^2.0", "symfony/filesystem": "*" },
    autoload,
    extra: { class: "Symfony\\Component\\Runtime\\Internal\\ComposerPlugin" },
  };
}

/**
 * Copies Debian's /usr/share/php (of the set at `root`) into `app/lib` and gives each package a
 * composer.json; returns the path repositories (globs) an app's composer.json names.
 */
export function debianLib(root: string, app: string, version: string): object[] {
  const lib = join(app, "lib");
  cpSync(join(root, "usr/share/php"), lib, { recursive: true });
  const roots = packageRoots(lib);
  const set = new Set(roots);
  for (const rel of roots) {
    writeFileSync(
      join(lib, rel, "composer.json"),
      `${JSON.stringify(composerJson(lib, rel, set, version), null, 2)}\n`,
    );
  }
  const depths = [...new Set(roots.map((r) => r.split("/").length))].sort((a, b) => a - b);
  return [
    ...depths.map((d) => ({ type: "path", url: relative(app, join(lib, ...Array(d).fill("*"))) })),
    { "packagist.org": false },
  ];
}

/** A Symfony 6.4 app in `dir` (lib/ from Debian, composer.json, composer.lock, the skeleton's files). */
export async function symfonyApp(dir: string): Promise<void> {
  const root = await debianPackages("symfony", SYMFONY_DEBS);
  const repositories = debianLib(root, dir, debVersion(root, "php-symfony-framework-bundle"));
  const composer = {
    name: "pier-test/symfony",
    type: "project",
    repositories,
    require: Object.fromEntries(
      ["framework-bundle", "runtime", "twig-bundle", "dotenv", "yaml"].map((p) => [`symfony/${p}`, "*"]),
    ),
    autoload: { "psr-4": { "App\\": "src/" } },
    config: { "allow-plugins": { "symfony/runtime": true } },
  };
  writeFiles(dir, { ...SYMFONY_FILES, "composer.json": `${JSON.stringify(composer, null, 2)}\n` });
  await composerLock(dir);
}

/** A Laravel 10 app in `dir` (lib/ from Debian, composer.json, composer.lock, the skeleton's files). */
export async function laravelApp(dir: string): Promise<void> {
  const root = await debianPackages("laravel", LARAVEL_DEBS);
  const repositories = debianLib(root, dir, debVersion(root, "php-laravel-framework"));
  const composer = {
    name: "pier-test/laravel",
    type: "project",
    repositories,
    require: { "laravel/framework": "*" },
    autoload: { "psr-4": { "App\\": "app/" } },
  };
  writeFiles(dir, { ...LARAVEL_FILES, "composer.json": `${JSON.stringify(composer, null, 2)}\n` });
  await composerLock(dir);
}
