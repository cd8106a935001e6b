/**
 * The PHP application-server runtime's build as data (contract sections 2.2, 2.5, 4.2, 4.4, 4.5, 8, and the
 * hooks and workers the Node.js runtime has): the webroot, the composer install, php.ini, the start
 * command and its rule, the workers. The executor (src/server/runtimes/php.ts) inspects the commit's
 * paths that phpProjectPaths names, then carries the plan out in a build container of pier/php:8.4.
 */

import { instanceEnvironment } from "./env.js";
import { parseRunCommand, projectPath } from "./php-run-command.js";
import { hasControlCharacter, quoted, read } from "./plan-vars.js";
import { shellQuote } from "./shell.js";
import { readWorkers, type Worker, withPreRunHook } from "./workers.js";

export const PHP_IMAGE = "pier/php:8.4";
export const PHP_DEFAULT_COMPOSER_FLAGS = "--no-interaction --no-progress --no-scripts --no-dev";
export const PHP_DEFAULT_PORT = 8080;
/** The composer cache in the build container: the app's cache volume (kept between deploys). */
export const COMPOSER_CACHE_DIR = "/cache/composer";

/** What a path of the commit is: symlinks are followed, and one that leads outside the commit is "outside". */
export type PathFact = "file" | "dir" | "missing" | "outside";

export interface PhpBuildInput {
  vars: Record<string, string>;
  /** What each path of phpProjectPaths(vars).paths is in the commit. */
  paths: Record<string, PathFact>;
  /** Text of composer.json at the root, or null if absent. */
  composerJson: string | null;
  /** The app's folder in the build container and in instances. Default /app. */
  appHome?: string;
  /** A task app (--task, or CC_TASK=true): it serves no HTTP, so no index file is required. */
  task?: boolean;
}

export interface PhpBuildStep {
  label: string;
  command: string;
  /** The composer install, which the current release's vendor/ may replace (unchanged composer.lock). */
  install?: boolean;
}

export interface PhpBuildPlan {
  port: number;
  /** The served folder, absolute in the image. */
  webroot: string;
  /** The composer install, or null without composer.json. */
  /**
   * The composer install, and what runs instead when vendor/ is reused: `composer dump-autoload` when the
   * autoloader lists the project's classes (a classmap, an optimized autoloader), else null (PSR-4 and
   * PSR-0 find new classes by themselves, and `files` entries are in the unchanged composer.json).
   */
  composer: { install: string; dumpAutoload: string | null; devDependencies: boolean } | null;
  buildSteps: PhpBuildStep[];
  /** The app's variables ($APP_HOME expanded), INSTANCE_TYPE=build and composer's settings. */
  buildEnv: Record<string, string>;
  /** How instances start (argv, with CC_PRE_RUN_HOOK), before the workers. */
  start: string[];
  runEnv: Record<string, string>;
  workers: Worker[];
  warnings: string[];
  logLines: string[];
}

type Result = { ok: true; plan: PhpBuildPlan } | { ok: false; errors: string[] };

/** CC_PHPSERVER_PORT (default 8080). */
export function phpSettings(vars: Record<string, string>): { port: number; errors: string[] } {
  const raw = read(vars, "CC_PHPSERVER_PORT")?.trim();
  if (raw === undefined) return { port: PHP_DEFAULT_PORT, errors: [] };
  const n = Number(raw);
  if (!/^\d{1,5}$/.test(raw) || n < 1 || n > 65535)
    return {
      port: PHP_DEFAULT_PORT,
      errors: [
        `CC_PHPSERVER_PORT=${quoted(raw)} is not a port: use an integer from 1 to 65535 (default 8080).`,
      ],
    };
  return { port: n, errors: [] };
}

/** A word as a shell reads it: as is when it holds nothing a shell would interpret, else quoted. */
const word = (f: string) => (/^[A-Za-z0-9_./=:,@%+-]+$/.test(f) ? f : shellQuote(f));

const child = (dir: string, name: string) => (dir === "." ? name : `${dir}/${name}`);

/** The paths of the commit the plan depends on (the executor inspects them), and the variables' errors. */
export function phpProjectPaths(vars: Record<string, string>): {
  webroot: string | null;
  paths: string[];
  errors: string[];
} {
  const errors: string[] = [];
  const { port } = phpSettings(vars);
  const paths = ["composer.json", "composer.lock", "composer.phar", "php.ini", "vendor"];
  let webroot: string | null = ".";
  const raw = read(vars, "CC_WEBROOT");
  if (raw !== undefined) {
    const p = projectPath(raw);
    if ("error" in p) {
      errors.push(`CC_WEBROOT=${quoted(raw)} ${p.error}: use a folder of the project such as /public.`);
      webroot = null;
    } else webroot = p.path;
  }
  const run = read(vars, "CC_RUN_COMMAND");
  if (run !== undefined) {
    const r = parseRunCommand(run, port);
    if (!r.ok) errors.push(r.error);
    else if (r.cmd.kind === "run") paths.push(r.cmd.config);
    else {
      if (r.cmd.root !== null) webroot = r.cmd.root;
      if (r.cmd.worker !== null) paths.push(r.cmd.worker);
    }
  }
  const worker = read(vars, "CC_PHPSERVER_WORKER");
  if (worker !== undefined) {
    const p = projectPath(worker);
    if ("error" in p) errors.push(`CC_PHPSERVER_WORKER=${quoted(worker)} ${p.error}.`);
    else paths.push(p.path);
  }
  if (webroot !== null) paths.push(webroot, child(webroot, "index.php"), child(webroot, "index.html"));
  return { webroot, paths, errors };
}

/** Composer's flags: CC_PHP_COMPOSER_FLAGS or the default, without --no-dev for CC_PHP_DEV_DEPENDENCIES=install. */
function composerFlags(
  vars: Record<string, string>,
  errors: string[],
  logLines: string[],
): { flags: string[]; dev: boolean } {
  const raw = read(vars, "CC_PHP_COMPOSER_FLAGS");
  let flags = (raw ?? PHP_DEFAULT_COMPOSER_FLAGS).trim().split(/\s+/);
  if (raw !== undefined && hasControlCharacter(raw.replace(/\s/g, " ")))
    errors.push("CC_PHP_COMPOSER_FLAGS must not contain control characters.");
  const devRaw = read(vars, "CC_PHP_DEV_DEPENDENCIES")?.trim();
  if (devRaw !== undefined && devRaw !== "install")
    errors.push(`CC_PHP_DEV_DEPENDENCIES=${quoted(devRaw)} is not a choice: use install (or unset it).`);
  if (devRaw === "install") {
    flags = flags.filter((f) => f !== "--no-dev");
    logLines.push("CC_PHP_DEV_DEPENDENCIES=install: development dependencies are installed (no --no-dev).");
  }
  logLines.push(
    raw !== undefined
      ? `Composer flags: ${flags.join(" ")} (CC_PHP_COMPOSER_FLAGS).`
      : `Composer flags: ${flags.join(" ")} (the default).`,
  );
  return { flags, dev: !flags.includes("--no-dev") };
}

const OPTIMIZING_FLAGS = new Set(["-o", "--optimize-autoloader", "-a", "--classmap-authoritative"]);

/** Whether composer's autoloader lists the project's classes (so that a changed file needs a dump). */
function listsClasses(composerJson: unknown, flags: readonly string[]): boolean {
  if (flags.some((f) => OPTIMIZING_FLAGS.has(f))) return true;
  if (typeof composerJson !== "object" || composerJson === null) return true;
  const j = composerJson as Record<string, unknown>;
  const has = (section: unknown, key: string) =>
    typeof section === "object" &&
    section !== null &&
    (section as Record<string, unknown>)[key] !== undefined;
  const config = j.config;
  return (
    has(j.autoload, "classmap") ||
    has(j["autoload-dev"], "classmap") ||
    (has(config, "optimize-autoloader") &&
      (config as Record<string, unknown>)["optimize-autoloader"] !== false) ||
    (has(config, "classmap-authoritative") &&
      (config as Record<string, unknown>)["classmap-authoritative"] !== false)
  );
}

const INI_CHECK =
  'php -n -r \'$r = @parse_ini_file("php.ini", true); if ($r === false) { $e = error_get_last(); fwrite(STDERR, "php.ini is malformed: " . preg_replace("/^syntax error, /", "", $e["message"] ?? "it cannot be read") . "\\n"); exit(1); }\'';

/** Where the steps of a plan write, in the order they run: problems, warnings and the deploy log's lines. */
interface Notes {
  errors: string[];
  warnings: string[];
  logLines: string[];
}

/** What the steps of a PHP plan read: the input, the port, and what a path of the commit is. */
interface PhpContext {
  input: PhpBuildInput;
  vars: Record<string, string>;
  port: number;
  fact: (p: string) => PathFact;
  notes: Notes;
}

const shownFolder = (p: string) => (p === "." ? "the project root" : `${p}/`);

/** Step 1: the webroot is a folder of the project with an index file (contract section 2.5). */
function checkWebroot(ctx: PhpContext, webroot: string | null): void {
  const { vars, fact, notes } = ctx;
  if (webroot === null) return;
  const w = fact(webroot);
  const by =
    read(vars, "CC_WEBROOT") !== undefined
      ? `CC_WEBROOT=${quoted(vars.CC_WEBROOT as string)}`
      : "the webroot";
  if (w === "outside")
    notes.errors.push(
      `${by} leaves the project through a symlink: the webroot must be a folder of the project.`,
    );
  else if (w !== "dir") notes.errors.push(`${by}: ${shownFolder(webroot)} is not a folder of the project.`);
  else {
    const php = fact(child(webroot, "index.php"));
    const html = fact(child(webroot, "index.html"));
    if (php === "outside" || html === "outside")
      notes.errors.push(`The index file of ${shownFolder(webroot)} points outside of the project.`);
    else if (php !== "file" && html !== "file" && !ctx.input.task)
      notes.errors.push(
        `No index.php or index.html in ${shownFolder(webroot)}: one is required${read(vars, "CC_WEBROOT") === undefined ? " (set CC_WEBROOT if your webroot is another folder, e.g. /public)" : ""}.`,
      );
    else if (!ctx.input.task)
      notes.logLines.push(
        `Webroot: ${shownFolder(webroot)} (${php === "file" ? "index.php" : "index.html"}).`,
      );
  }
}

/** CC_PHPSERVER_WORKER_NUM (1..999) and CC_PHPSERVER_WORKER_MAX_REQUESTS (0: no limit). */
function checkWorkerNumbers(vars: Record<string, string>, errors: string[]): void {
  for (const name of ["CC_PHPSERVER_WORKER_NUM", "CC_PHPSERVER_WORKER_MAX_REQUESTS"]) {
    const v = read(vars, name)?.trim();
    const min = name.endsWith("NUM") ? 1 : 0;
    if (v !== undefined && (!/^\d{1,6}$/.test(v) || Number(v) < min || (min === 1 && Number(v) > 999)))
      errors.push(
        `${name}=${quoted(v)} is not ${min === 1 ? "a number of workers from 1 to 999" : "a number of requests (0: no limit)"}.`,
      );
  }
}

/**
 * Step 2, worker mode (docs/adr/0013): CC_PHPSERVER_WORKER, or --worker in CC_RUN_COMMAND, names a file of
 * the project. Returns CC_PHPSERVER_WORKER's path (null: none).
 */
function checkWorkerMode(ctx: PhpContext, locatedErrors: readonly string[]): string | null {
  const { vars, fact, notes } = ctx;
  const runVar = read(vars, "CC_RUN_COMMAND");
  const parsedRun = runVar === undefined ? null : parseRunCommand(runVar, ctx.port);
  const runWorker = parsedRun?.ok && parsedRun.cmd.kind === "php-server" ? parsedRun.cmd.worker : null;
  const workerVar = read(vars, "CC_PHPSERVER_WORKER");
  let workerPath: string | null = null;
  if (workerVar !== undefined && locatedErrors.every((e) => !e.startsWith("CC_PHPSERVER_WORKER"))) {
    const p = projectPath(workerVar);
    if ("path" in p) workerPath = p.path;
  }
  const checkWorker = (path: string, by: string) => {
    const f = fact(path);
    if (f === "outside") notes.errors.push(`${by} leaves the project through a symlink.`);
    else if (f !== "file") notes.errors.push(`${by}: there is no such file in the project.`);
  };
  if (workerPath !== null) checkWorker(workerPath, `CC_PHPSERVER_WORKER=${quoted(workerVar as string)}`);
  if (runWorker !== null) checkWorker(runWorker, `CC_RUN_COMMAND's --worker ${runWorker}`);
  checkWorkerNumbers(vars, notes.errors);
  if (workerPath !== null || runWorker !== null)
    notes.logLines.push(
      `Worker mode: ${runWorker ?? workerPath} is loaded once per worker and serves requests through frankenphp_handle_request().`,
    );
  return workerPath;
}

/** The php.ini step: checked, then linked into the CLI's and FPM's configuration (null: no php.ini). */
function iniStep(ctx: PhpContext, appHome: string): PhpBuildStep | null {
  const ini = ctx.fact("php.ini");
  if (ini === "outside") ctx.notes.errors.push("php.ini points outside of the project.");
  if (ini !== "file") return null;
  return {
    label: "Applying php.ini (web requests, workers and tasks)",
    command: [
      INI_CHECK,
      `for d in /etc/php/8.4/cli/conf.d /etc/php/8.4/fpm/conf.d; do ln -sf ${appHome}/php.ini "$d/99-app-php.ini"; done`,
    ].join(" && "),
  };
}

/** The composer install of composer.json (null without one), and what runs instead when vendor/ is reused. */
function composerPlan(ctx: PhpContext): PhpBuildPlan["composer"] {
  const { vars, fact, notes } = ctx;
  if (fact("composer.json") === "outside") notes.errors.push("composer.json points outside of the project.");
  if (ctx.input.composerJson === null) {
    if (read(vars, "CC_PHP_COMPOSER_FLAGS") !== undefined)
      notes.warnings.push(
        "CC_PHP_COMPOSER_FLAGS is not used: there is no composer.json at the root of the project.",
      );
    notes.logLines.push("No composer.json at the root: no dependencies to install.");
    return null;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(ctx.input.composerJson);
  } catch (e) {
    notes.errors.push(`composer.json is not valid JSON: ${(e as Error).message}.`);
  }
  if (parsed !== undefined && (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)))
    notes.errors.push("composer.json must hold a JSON object.");
  const { flags, dev } = composerFlags(vars, notes.errors, notes.logLines);
  const bin = fact("composer.phar") === "file" ? "php composer.phar" : "composer";
  if (bin !== "composer") notes.logLines.push("Composer: composer.phar of the project.");
  const install = `${bin} install ${flags.map(word).join(" ")}`.trim();
  const dumpAutoload = listsClasses(parsed, flags)
    ? `${bin} dump-autoload --no-interaction${dev ? "" : " --no-dev"}`
    : null;
  return { install, dumpAutoload, devDependencies: dev };
}

/** Step 3, the build steps: CC_PRE_BUILD_HOOK, php.ini, composer, CC_POST_BUILD_HOOK. */
function phpBuildSteps(
  ctx: PhpContext,
  appHome: string,
): { steps: PhpBuildStep[]; composer: PhpBuildPlan["composer"] } {
  const steps: PhpBuildStep[] = [];
  const preBuild = read(ctx.vars, "CC_PRE_BUILD_HOOK");
  if (preBuild !== undefined) steps.push({ label: "Running CC_PRE_BUILD_HOOK", command: preBuild });
  const ini = iniStep(ctx, appHome);
  if (ini) steps.push(ini);
  const composer = composerPlan(ctx);
  if (composer) {
    steps.push({
      label: `Installing dependencies: ${composer.install}`,
      command: composer.install,
      install: true,
    });
  }
  const postBuild = read(ctx.vars, "CC_POST_BUILD_HOOK");
  if (postBuild !== undefined) steps.push({ label: "Running CC_POST_BUILD_HOOK", command: postBuild });
  return { steps, composer };
}

/**
 * Step 4, the start command (contract section 4.4): php-server on the port, or CC_RUN_COMMAND (a `run
 * --config` file gets its check as the last build step), then CC_PRE_RUN_HOOK.
 */
function phpStart(ctx: PhpContext, steps: PhpBuildStep[], workers: readonly Worker[]): string[] {
  const { vars, fact, notes } = ctx;
  let start = ["phpserver", "php-server", "--listen", `0.0.0.0:${ctx.port}`];
  const run = read(vars, "CC_RUN_COMMAND");
  const r = run === undefined ? null : parseRunCommand(run, ctx.port);
  if (r?.ok) {
    start = r.cmd.argv;
    if (r.cmd.kind === "run") {
      const c = fact(r.cmd.config);
      if (c === "outside")
        notes.errors.push(`CC_RUN_COMMAND: the config file ${r.cmd.config} points outside of the project.`);
      else if (c !== "file")
        notes.errors.push(`CC_RUN_COMMAND: there is no config file ${r.cmd.config} in the project.`);
      else
        steps.push({
          label: `Checking ${r.cmd.config}`,
          command: `phpserver run --config ${word(r.cmd.config)} --check`,
        });
    }
  }
  steps.forEach((s, i) => {
    notes.logLines.push(`Step ${i + 1}/${steps.length}: ${s.label}`);
  });
  notes.logLines.push(`Start command: ${start.join(" ")}${run !== undefined ? " (CC_RUN_COMMAND)" : ""}`);
  start = withPreRunHook(start, read(vars, "CC_PRE_RUN_HOOK"));
  if (read(vars, "CC_PRE_RUN_HOOK") !== undefined)
    notes.logLines.push("CC_PRE_RUN_HOOK runs before the start command.");
  if (workers.length > 0) {
    const w = workers[0] as Worker;
    notes.logLines.push(
      `${workers.length} background worker${workers.length > 1 ? "s" : ""} (restart ${w.restart}, after ${w.delaySeconds}s).`,
    );
  }
  return start;
}

/**
 * Plans the build of a PHP application. Every problem is listed at once, each naming the file or the
 * variable and what to change. The steps run in order; each appends to the problems and the log's lines.
 */
export function planPhpBuild(input: PhpBuildInput): Result {
  const { vars, paths } = input;
  const appHome = input.appHome ?? "/app";
  const notes: Notes = { errors: [], warnings: [], logLines: [] };
  const { port, errors: portErrors } = phpSettings(vars);
  notes.errors.push(...portErrors);
  const located = phpProjectPaths(vars);
  notes.errors.push(...located.errors);
  const { workers, errors: workerErrors } = readWorkers(vars);
  notes.errors.push(...workerErrors);
  const ctx: PhpContext = { input, vars, port, fact: (p) => paths[p] ?? "missing", notes };

  const webroot = located.webroot;
  checkWebroot(ctx, webroot);
  const workerPath = checkWorkerMode(ctx, located.errors);
  const { steps, composer } = phpBuildSteps(ctx, appHome);
  const start = phpStart(ctx, steps, workers);
  if (notes.errors.length > 0 || webroot === null) return { ok: false, errors: notes.errors };
  const buildEnv: Record<string, string> = {
    ...instanceEnvironment(vars, { INSTANCE_TYPE: "build" }, appHome),
    COMPOSER_CACHE_DIR,
    COMPOSER_ALLOW_SUPERUSER: "1",
    COMPOSER_NO_AUDIT: "1",
  };
  const webrootAbs = webroot === "." ? appHome : `${appHome}/${webroot}`;
  return {
    ok: true,
    plan: {
      port,
      webroot: webrootAbs,
      composer,
      buildSteps: steps,
      buildEnv,
      start,
      runEnv: {
        PHPSERVER_ROOT: webrootAbs,
        PHPSERVER_PORT: String(port),
        ...(workerPath !== null ? { PHPSERVER_WORKER: `${appHome}/${workerPath}` } : {}),
      },
      workers,
      warnings: notes.warnings,
      logLines: notes.logLines,
    },
  };
}
