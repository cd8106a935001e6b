/**
 * The Node.js runtime's build as data (contract sections 2.2, 2.3, 3, 4.4, 5.1, 8 and 9, and the hooks,
 * workers and tasks of platform-extensions): the Node.js and npm versions, the package manager, whether
 * development dependencies are installed, the build steps, the start command and the workers. The
 * executor (src/server/runtimes/node.ts) carries the plan out.
 */

import semver from "semver";
import { instanceEnvironment } from "./env.js";
import { bundledNpmMajor, chooseNodeVersion, chooseNpmVersion, type NodeVersion } from "./node-versions.js";
import {
  ignoresNodeModules,
  type PackageJson,
  type PackageManagerField,
  parsePackageJson,
  parsePackageManager,
} from "./package-json.js";

export {
  ignoresNodeModules,
  type PackageJson,
  type PackageManagerField,
  parsePackageJson,
  parsePackageManager,
};

import { hasControlCharacter } from "./plan-docker.js";
import { withPreRunHook } from "./workers.js";

export interface NodeProjectFiles {
  /** Text of package.json at the app root, or null if absent. */
  packageJson: string | null;
  gitignore: string | null;
  lockFiles: {
    packageLock: boolean;
    npmShrinkwrap: boolean;
    yarnLock: boolean;
    /** bun.lock or bun.lockb */
    bunLock: boolean;
    pnpmLock: boolean;
  };
  /** .yarnrc.yml present (Yarn Berry). */
  yarnrcYml: boolean;
}

export const NODE_BUILD_TOOLS = ["bun", "npm", "npm-install", "npm-ci", "yarn", "yarn2", "custom"] as const;
export type NodeBuildTool = "npm-install" | "npm-ci" | "yarn" | "yarn2" | "bun" | "custom";

export const WORKER_RESTARTS = ["always", "on-failure", "no"] as const;
export type WorkerRestart = (typeof WORKER_RESTARTS)[number];

export interface NodeWorker {
  command: string;
  restart: WorkerRestart;
  delaySeconds: number;
}

export interface NodeBuildPlan {
  /** Exact, from chooseNodeVersion. */
  nodeVersion: string;
  npmVersion: string | null;
  tool: NodeBuildTool;
  /** Installed or not (the contract's section 8 table). */
  devDependencies: boolean;
  /**
   * Shell commands run in order in the build container, in /app, each with `set -e`. User commands (hooks,
   * CC_CUSTOM_BUILD_TOOL) are verbatim; Pier's own are built only from fixed words and validated values.
   */
  buildSteps: {
    label: string;
    command: string /** The dependency install, which a cache may replace. */;
    install?: boolean;
  }[];
  /**
   * Environment of the build steps on top of the app's variables: the app's variables with `$APP_HOME`
   * expanded (so NODE_ENV and YARN_GLOBAL_FOLDER as the app set them), INSTANCE_TYPE=build, and the
   * package manager's settings (npm_config_include / npm_config_omit, YARN_NPM_AUTH_TOKEN).
   */
  buildEnv: Record<string, string>;
  /** How instances start: argv. */
  start: string[];
  /** Variables of the run phase that npm would set when the start script is run without it. */
  runEnv: Record<string, string>;
  /** Background workers (CC_WORKER_COMMAND, CC_WORKER_COMMAND_<n>), in order. */
  workers: NodeWorker[];
  /** CC_TASK=true: the command runs once to completion; no HTTP, no health gate. */
  task: boolean;
  /** `.npmrc` content when NPM_TOKEN is set. Secret: never in logLines. */
  npmrc: string | null;
  warnings: string[];
  /** What the deploy log says (never a secret). */
  logLines: string[];
}

export interface NodeBuildInput {
  /** The app's variables. */
  vars: Record<string, string>;
  files: NodeProjectFiles;
  /** Available Node.js versions, as markVersions returns them. */
  versions: readonly NodeVersion[];
  /** Versions of the npm package, and the engines.node of each. */
  npmVersions: readonly string[];
  npmEngines: Record<string, string | undefined>;
  /** The app's folder in the build container and in instances, for `$APP_HOME` in values. Default /app. */
  appHome?: string;
  /** The app is a task whatever its CC_TASK says (created with --task): isTask in core/app-state.ts. */
  task?: boolean;
}

export const DEFAULT_APP_HOME = "/app";
export const DEFAULT_NPM_REGISTRY = "registry.npmjs.org";
/** Corepack ships with these Node.js versions (contract section 2.3). */
export const COREPACK_NODE_RANGE = "^14.19.0 || >=16.9.0";

/** A variable's value, or undefined when it is unset or empty (an empty value counts as unset). */
function read(vars: Record<string, string>, name: string): string | undefined {
  const v = vars[name];
  return v === undefined || v.trim() === "" ? undefined : v;
}

const quoted = (s: string) => JSON.stringify(s);

// ---------------------------------------------------------------------------------------------------
// Variables

const CC_WORKER = "CC_WORKER_COMMAND";
const NUMBERED_WORKER_RE = /^CC_WORKER_COMMAND_(\d+)$/;

/** CC_WORKER_COMMAND first, then CC_WORKER_COMMAND_<n> by increasing n, with the restart policy of all. */
export function nodeWorkers(vars: Record<string, string>): { workers: NodeWorker[]; errors: string[] } {
  const errors: string[] = [];
  let restart: WorkerRestart = "on-failure";
  const r = read(vars, "CC_WORKER_RESTART")?.trim();
  if (r !== undefined) {
    if ((WORKER_RESTARTS as readonly string[]).includes(r)) restart = r as WorkerRestart;
    else
      errors.push(
        `CC_WORKER_RESTART=${quoted(r)} is not a restart policy: use ${WORKER_RESTARTS.join(", ")}.`,
      );
  }
  let delaySeconds = 1;
  const d = read(vars, "CC_WORKER_RESTART_DELAY")?.trim();
  if (d !== undefined) {
    if (/^\d{1,6}$/.test(d)) delaySeconds = Number(d);
    else
      errors.push(
        `CC_WORKER_RESTART_DELAY=${quoted(d)} is not a number of seconds: use an integer such as 1.`,
      );
  }
  const named: { n: number; command: string }[] = [];
  const single = read(vars, CC_WORKER);
  if (single !== undefined) named.push({ n: -1, command: single });
  for (const [name, value] of Object.entries(vars)) {
    const m = NUMBERED_WORKER_RE.exec(name);
    if (!m || value.trim() === "") continue;
    const digits = m[1] as string;
    if (digits.length > 1 && digits.startsWith("0")) {
      errors.push(`${name}: write the number without leading zeros (${CC_WORKER}_${Number(digits)}).`);
      continue;
    }
    named.push({ n: Number(digits), command: value });
  }
  named.sort((a, b) => a.n - b.n);
  return { workers: named.map((w) => ({ command: w.command, restart, delaySeconds })), errors };
}

/** The registry host of CC_NPM_REGISTRY (a scheme and trailing slashes are dropped), or the rule it breaks. */
export function registryHost(value: string): { host: string } | { error: string } {
  const host = value
    .trim()
    .replace(/^https?:\/\//i, "")
    .replace(/\/+$/, "");
  if (!/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?(\/[A-Za-z0-9._~%@+-]+)*$/.test(host)) {
    return {
      error: "is not a registry host: use a host name such as npm.example.com (optionally with a path)",
    };
  }
  return { host };
}

/**
 * The `.npmrc` of NPM_TOKEN (contract section 5.1): `//<host>/:_authToken=<token>` for CC_NPM_REGISTRY or
 * the public registry. Messages never hold the token.
 */
function privateRegistry(
  vars: Record<string, string>,
  errors: string[],
  warnings: string[],
): { npmrc: string | null; registry: string; token: string | null } {
  const raw = read(vars, "NPM_TOKEN");
  const registryRaw = read(vars, "CC_NPM_REGISTRY");
  let registry = DEFAULT_NPM_REGISTRY;
  if (registryRaw !== undefined) {
    const r = registryHost(registryRaw);
    if ("host" in r) registry = r.host;
    else errors.push(`CC_NPM_REGISTRY=${quoted(registryRaw)} ${r.error}.`);
  }
  if (raw === undefined) {
    if (registryRaw !== undefined) {
      warnings.push("CC_NPM_REGISTRY is set but NPM_TOKEN is not: no .npmrc is written (set NPM_TOKEN).");
    }
    return { npmrc: null, registry, token: null };
  }
  const token = raw.trim();
  if (/\s/.test(token) || hasControlCharacter(token)) {
    errors.push("NPM_TOKEN must be a single token, without spaces, newlines or control characters.");
    return { npmrc: null, registry, token: null };
  }
  return { npmrc: `//${registry}/:_authToken=${token}\n`, registry, token };
}

// ---------------------------------------------------------------------------------------------------
// The plan

type Result = { ok: true; plan: NodeBuildPlan } | { ok: false; errors: string[] };

interface ToolChoice {
  tool: NodeBuildTool;
  why: string;
}

const TOOL_NAMES: Record<NodeBuildTool, string> = {
  "npm-install": "npm install",
  "npm-ci": "npm ci",
  yarn: "Yarn Classic (v1)",
  yarn2: "Yarn Berry (v2 or later)",
  bun: "Bun",
  custom: "CC_CUSTOM_BUILD_TOOL",
};

function chooseTool(
  vars: Record<string, string>,
  files: NodeProjectFiles,
  pm: PackageManagerField | null,
  errors: string[],
  warnings: string[],
): ToolChoice | null {
  const lock = files.lockFiles;
  const lockNames = [lock.bunLock ? "bun.lock/bun.lockb" : null, lock.yarnLock ? "yarn.lock" : null].filter(
    (s): s is string => s !== null,
  );
  const berry = files.yarnrcYml || (pm?.name === "yarn" && pm.major !== null && pm.major >= 2);
  const raw = read(vars, "CC_NODE_BUILD_TOOL");
  const custom = read(vars, "CC_CUSTOM_BUILD_TOOL");
  if (raw !== undefined) {
    const value = raw.trim().toLowerCase();
    if (!(NODE_BUILD_TOOLS as readonly string[]).includes(value)) {
      errors.push(
        `CC_NODE_BUILD_TOOL=${quoted(raw)} is not a build tool: use one of ${NODE_BUILD_TOOLS.join(", ")}.`,
      );
      return null;
    }
    if (value === "custom" && custom === undefined) {
      errors.push(
        "CC_NODE_BUILD_TOOL=custom needs CC_CUSTOM_BUILD_TOOL: set it to the install/build command, e.g. pnpm install && pnpm build.",
      );
      return null;
    }
    if (value !== "custom" && custom !== undefined) {
      warnings.push(
        `CC_CUSTOM_BUILD_TOOL is ignored: it is used only with CC_NODE_BUILD_TOOL=custom (it is ${value}).`,
      );
    }
    const tool: NodeBuildTool = value === "npm" ? "npm-install" : (value as NodeBuildTool);
    if (tool === "npm-ci" && !lock.packageLock && !lock.npmShrinkwrap) {
      errors.push(
        "CC_NODE_BUILD_TOOL=npm-ci needs package-lock.json or npm-shrinkwrap.json: commit one, or set CC_NODE_BUILD_TOOL=npm.",
      );
      return null;
    }
    const overrides = lockNames.length > 0 ? `, over the lock-file rule (${lockNames.join(", ")})` : "";
    return { tool, why: `CC_NODE_BUILD_TOOL=${value}${overrides}` };
  }
  if (custom !== undefined) {
    warnings.push("CC_CUSTOM_BUILD_TOOL is ignored: set CC_NODE_BUILD_TOOL=custom to use it.");
  }
  if (lock.bunLock && lock.yarnLock) {
    errors.push(
      "Conflicting lock files: bun.lock (or bun.lockb) and yarn.lock are both in the application folder. Set CC_NODE_BUILD_TOOL (bun, yarn or yarn2) to choose, or delete the lock file you do not use.",
    );
    return null;
  }
  if (lock.bunLock) return { tool: "bun", why: "bun.lock/bun.lockb is in the application folder" };
  if (lock.yarnLock) {
    if (!berry) return { tool: "yarn", why: "yarn.lock is in the application folder" };
    const by = files.yarnrcYml ? ".yarnrc.yml is present" : `packageManager is ${pm?.raw}`;
    return { tool: "yarn2", why: `yarn.lock is in the application folder and ${by}` };
  }
  return {
    tool: "npm-install",
    why: lock.packageLock
      ? "the default; package-lock.json is followed by npm install (CC_NODE_BUILD_TOOL=npm-ci runs a clean install)"
      : "the default (no bun.lock, bun.lockb or yarn.lock)",
  };
}

/** A Yarn build tool that packageManager contradicts (Corepack would refuse, or run the other Yarn). */
function packageManagerConflicts({ tool, why }: ToolChoice, pm: PackageManagerField): string[] {
  if (tool !== "yarn" && tool !== "yarn2") return [];
  if (pm.name !== "yarn") {
    return [
      `The build tool is ${TOOL_NAMES[tool]} (${why}) but package.json's packageManager is ${pm.raw}: set CC_NODE_BUILD_TOOL to match, or fix packageManager.`,
    ];
  }
  if (tool === "yarn" && pm.major !== null && pm.major >= 2) {
    return [
      `CC_NODE_BUILD_TOOL=yarn is Yarn Classic (v1), but packageManager is ${pm.raw}: set CC_NODE_BUILD_TOOL=yarn2.`,
    ];
  }
  if (tool === "yarn2" && pm.major === 1) {
    return [`The build tool is yarn2 (${why}) but packageManager is ${pm.raw}: set CC_NODE_BUILD_TOOL=yarn.`];
  }
  return [];
}

/** The contract's section 8 table. */
function chooseDevDependencies(
  vars: Record<string, string>,
  errors: string[],
): { install: boolean; why: string } | null {
  const raw = read(vars, "CC_NODE_DEV_DEPENDENCIES");
  const nodeEnv = read(vars, "NODE_ENV");
  if (raw !== undefined) {
    const v = raw.trim();
    if (v === "install") return { install: true, why: "CC_NODE_DEV_DEPENDENCIES=install" };
    if (v === "ignore") return { install: false, why: "CC_NODE_DEV_DEPENDENCIES=ignore" };
    errors.push(
      `CC_NODE_DEV_DEPENDENCIES=${quoted(raw)} is not a choice: use install or ignore (or unset it).`,
    );
    return null;
  }
  if (nodeEnv === "production") {
    return {
      install: false,
      why: "NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default",
    };
  }
  const env = nodeEnv === undefined ? "NODE_ENV unset" : `NODE_ENV=${nodeEnv}`;
  return { install: true, why: `${env} and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default` };
}

/** Lock files and a packageManager the chosen tool does not use (contract section 9: pnpm and yarn need the variable). */
function unusedManagerWarnings(
  t: NodeBuildTool,
  lock: NodeProjectFiles["lockFiles"],
  pm: PackageManagerField | null,
): string[] {
  const out: string[] = [];
  const tool = TOOL_NAMES[t];
  if (t !== "yarn" && t !== "yarn2" && lock.yarnLock)
    out.push(`yarn.lock is not used: the build tool is ${tool}.`);
  if (t !== "bun" && lock.bunLock) out.push(`bun.lock/bun.lockb is not used: the build tool is ${tool}.`);
  if ((t === "yarn" || t === "yarn2" || t === "bun") && (lock.packageLock || lock.npmShrinkwrap)) {
    out.push(`package-lock.json / npm-shrinkwrap.json is not used: the build tool is ${tool}.`);
  }
  if (lock.pnpmLock && t !== "custom") {
    out.push(
      "pnpm-lock.yaml is not used: for pnpm set CC_NODE_BUILD_TOOL=custom, CC_CUSTOM_BUILD_TOOL=pnpm install (and a packageManager field or a CC_PRE_BUILD_HOOK that enables pnpm).",
    );
  }
  if (pm && (pm.name === "pnpm" || pm.name === "yarn") && (t === "npm-install" || t === "npm-ci")) {
    const how = pm.name === "yarn" ? "yarn or yarn2" : "custom, with CC_CUSTOM_BUILD_TOOL";
    out.push(
      `package.json's packageManager is ${pm.raw} but dependencies are installed with npm: CC_NODE_BUILD_TOOL must be set for ${pm.name} (${how}).`,
    );
  }
  return out;
}

/** The install command of each tool (Pier's own words only). */
function installCommand(tool: NodeBuildTool, dev: boolean, npmMajor: number): string {
  switch (tool) {
    case "npm-install":
    case "npm-ci": {
      const verb = tool === "npm-ci" ? "ci" : "install";
      // npm 6 knows --production only; npm 7+ --include / --omit (and --include wins over NODE_ENV).
      if (npmMajor < 7) return `npm ${verb} ${dev ? "--production=false" : "--production"}`;
      return `npm ${verb} ${dev ? "--include=dev" : "--omit=dev"}`;
    }
    case "yarn":
      return `yarn install ${dev ? "--production=false" : "--production=true"}`;
    case "yarn2":
      // Yarn 2+ has no --production install; `workspaces focus --all --production` installs every workspace
      // without devDependencies (plugin workspace-tools: built in since Yarn 4, imported for 2 and 3).
      return dev ? "yarn install" : "yarn workspaces focus --all --production";
    case "bun":
      return dev ? "bun install" : "bun install --production";
    case "custom":
      return "";
  }
}

function npmConfigEnv(tool: NodeBuildTool, dev: boolean, npmMajor: number): Record<string, string> {
  if (tool !== "npm-install" && tool !== "npm-ci") return {};
  if (npmMajor < 7) return { npm_config_production: dev ? "false" : "true" };
  return dev ? { npm_config_include: "dev" } : { npm_config_omit: "dev" };
}

/**
 * Corepack, installed from npm when the Node.js build has none (Pier's toolchain images carry node and
 * npm only; Node.js 25+ ships without it). `corepack@0` is a range, so npm (7+) picks the newest release
 * whose engines.node accepts the Node.js version, where `corepack` alone would take the latest tag.
 */
const COREPACK_ENSURE = "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; }";

/**
 * Steps that provide the package manager: Corepack for a packageManager field (pnpm, yarn, npm), Yarn
 * Classic from npm, Yarn Berry through Corepack, Bun from npm (the version packageManager pins, or the latest).
 */
function toolSteps(
  t: NodeBuildTool,
  pm: PackageManagerField | null,
  dev: boolean,
  nodeVersion: string,
  warnings: string[],
): { label: string; command: string }[] {
  const steps: { label: string; command: string }[] = [];
  const hasCorepack = semver.satisfies(nodeVersion, COREPACK_NODE_RANGE);
  const corepackFor = pm && pm.name !== "bun" ? pm : null;
  const yarnFromCorepack = (t === "yarn" || t === "yarn2") && corepackFor?.name === "yarn" && hasCorepack;
  if (corepackFor) {
    if (hasCorepack) {
      steps.push({
        label: `Enabling Corepack (packageManager ${corepackFor.raw})`,
        command: `${COREPACK_ENSURE} && corepack enable`,
      });
    } else {
      warnings.push(
        `packageManager ${corepackFor.raw} is not applied: Corepack comes with Node.js ${COREPACK_NODE_RANGE}, and this build uses ${nodeVersion}.`,
      );
    }
  }
  if (t === "yarn" && !yarnFromCorepack) {
    // Skipped when a build starts from the current release's image, which has it already.
    steps.push({
      label: "Installing Yarn Classic (v1)",
      command: "yarn --version 2>/dev/null | grep -q '^1\\.' || npm install --global yarn@1",
    });
  }
  if (t === "yarn2" && !yarnFromCorepack) {
    // No packageManager: the latest stable Yarn, which runs the release of .yarnrc.yml's yarnPath if any.
    steps.push({
      label: "Enabling Yarn (latest stable) through Corepack",
      command: `${COREPACK_ENSURE} && corepack enable && corepack prepare yarn@stable --activate`,
    });
  }
  if (t === "yarn2" && !dev && yarnFromCorepack && pm?.major != null && pm.major < 4) {
    steps.push({
      label: "Importing the Yarn plugin workspace-tools (for yarn workspaces focus)",
      command: "yarn plugin import workspace-tools",
    });
  }
  if (t === "bun") {
    const pinned =
      pm?.name === "bun" && semver.valid(pm.version) ? (semver.valid(pm.version) as string) : null;
    steps.push({
      label: pinned ? `Installing Bun ${pinned} (packageManager)` : "Installing Bun (latest)",
      command: pinned
        ? `[ "$(bun --version 2>/dev/null)" = ${pinned} ] || npm install --global bun@${pinned}`
        : "command -v bun >/dev/null 2>&1 || npm install --global bun",
    });
  }
  return steps;
}

/** `node <file> [args]` with nothing a shell would interpret, as argv; otherwise null. */
export function plainNodeCommand(script: string): string[] | null {
  const argv = script.trim().split(/\s+/);
  if (argv[0] !== "node" || argv.length < 2) return null;
  return argv.every((a) => /^[A-Za-z0-9_./@%+=:,-]+$/.test(a)) ? argv : null;
}

/**
 * How instances start (before CC_PRE_RUN_HOOK): `npm start` (it runs prestart and poststart), the start
 * script through Yarn or Bun for those tools, or with only `main`, prestart then `node <main>`.
 */
function startCommand(
  tool: NodeBuildTool,
  pkg: PackageJson,
  runCommand: string | undefined,
  warnings: string[],
): string[] {
  if (runCommand !== undefined) return ["/bin/sh", "-c", runCommand];
  const scripts = pkg.scripts ?? {};
  const runner = tool === "yarn" || tool === "yarn2" ? "yarn" : tool === "bun" ? "bun" : "npm";
  if (scripts.start !== undefined) {
    if (runner === "npm") {
      // A plain `node <file> [args]` start script with no prestart or poststart runs as is: npm would only
      // stay resident beside it (tens of MB per instance, and a slower start).
      const plain = plainNodeCommand(scripts.start);
      if (plain && scripts.prestart === undefined && scripts.poststart === undefined) return plain;
      return ["npm", "start"];
    }
    if (runner === "bun") return ["bun", "run", "start"];
    if (tool === "yarn") return ["yarn", "start"];
    // Yarn 2+ runs no pre/post scripts by itself.
    if (scripts.poststart !== undefined) {
      warnings.push(
        "scripts.poststart is not run: Yarn 2+ does not run pre/post scripts (call it from scripts.start).",
      );
    }
    if (scripts.prestart !== undefined) return ["/bin/sh", "-c", "yarn run prestart && exec yarn run start"];
    return ["yarn", "run", "start"];
  }
  const main = pkg.main as string;
  const exe = runner === "bun" ? "bun" : tool === "yarn2" ? "yarn node" : "node";
  if (scripts.poststart !== undefined) {
    warnings.push(
      'scripts.poststart is not run: it runs after scripts.start, and package.json has only "main" (add a start script to use it).',
    );
  }
  if (scripts.prestart !== undefined) {
    const run = runner === "npm" ? "npm run" : `${runner} run`;
    return ["/bin/sh", "-c", `${run} prestart && exec ${exe} "$1"`, "pier-start", main];
  }
  return runner === "bun" ? ["bun", main] : tool === "yarn2" ? ["yarn", "node", main] : ["node", main];
}

/** Where the steps of a plan write what the deploy log shows, in the order they run. */
interface Notes {
  warnings: string[];
  logLines: string[];
}

/** What planNodeBuild read and checked before it plans: every later step works from these. */
interface NodeChecks {
  pkg: PackageJson;
  pm: PackageManagerField | null;
  choice: Extract<ReturnType<typeof chooseNodeVersion>, { ok: true }>;
  tool: ToolChoice;
  dev: { install: boolean; why: string };
  workers: NodeWorker[];
  task: boolean;
  npmrc: string | null;
  registry: string;
  token: string | null;
}

/** The Node.js and npm versions a plan uses. */
interface NodeVersions {
  nodeVersion: string;
  npmVersion: string | null;
  npmMajor: number;
}

/** The `packageManager` field, or null (with a warning when it is not `<name>@<version>`). */
function readPackageManager(pkg: PackageJson | null, warnings: string[]): PackageManagerField | null {
  if (pkg?.packageManager === undefined) return null;
  const pm = parsePackageManager(pkg.packageManager);
  if (!pm) {
    warnings.push(
      `package.json: "packageManager" ${quoted(pkg.packageManager)} is not <name>@<version> (e.g. "pnpm@9.1.0"): Corepack is not enabled.`,
    );
  }
  return pm;
}

/** The Node.js version engines.node and CC_NODE_VERSION choose (a CC_NODE_VERSION that engines.node overrides is warned of). */
function nodeVersionChoice(
  input: NodeBuildInput,
  parsed: ReturnType<typeof parsePackageJson>,
  notes: Notes,
  errors: string[],
): ReturnType<typeof chooseNodeVersion> {
  const ccNodeVersion = read(input.vars, "CC_NODE_VERSION");
  const enginesNode = parsed.ok ? parsed.pkg.engines?.node : parsed.enginesNode;
  const choice = chooseNodeVersion({ ccNodeVersion, enginesNode, available: input.versions });
  if (!choice.ok) errors.push(choice.error);
  if (choice.ok && ccNodeVersion !== undefined && enginesNode?.trim()) {
    const alone = chooseNodeVersion({ ccNodeVersion, enginesNode: undefined, available: input.versions });
    if (!alone.ok) notes.warnings.push(`${alone.error} It is ignored: engines.node in package.json decides.`);
  }
  return choice;
}

/** CC_TASK: exactly `true` or `false` (the deployer reads CC_TASK=true as written, so no other spelling may pass). */
function readTask(vars: Record<string, string>, errors: string[]): boolean {
  const taskRaw = read(vars, "CC_TASK");
  if (taskRaw !== undefined && taskRaw !== "true" && taskRaw !== "false") {
    errors.push(`CC_TASK=${quoted(taskRaw)} is not a boolean: use true or false (lower case).`);
  }
  return taskRaw === "true";
}

/** Step 1: every input read and checked; all problems listed at once. */
function checkNodeInputs(
  input: NodeBuildInput,
  notes: Notes,
): { ok: true; checks: NodeChecks } | { ok: false; errors: string[] } {
  const { vars, files } = input;
  const errors: string[] = [];
  const parsed = parsePackageJson(files.packageJson);
  if (!parsed.ok) errors.push(...parsed.errors);
  const pkg = parsed.ok ? parsed.pkg : null;
  const pm = readPackageManager(pkg, notes.warnings);
  const choice = nodeVersionChoice(input, parsed, notes, errors);
  const tool = chooseTool(vars, files, pm, errors, notes.warnings);
  if (tool && pm) errors.push(...packageManagerConflicts(tool, pm));
  const dev = chooseDevDependencies(vars, errors);
  const { workers, errors: workerErrors } = nodeWorkers(vars);
  errors.push(...workerErrors);
  // A task however it was made (isTask in core/app-state.ts): CC_TASK=true, or the app created with --task.
  const task = readTask(vars, errors) || input.task === true;
  const { npmrc, registry, token } = privateRegistry(vars, errors, notes.warnings);
  if (!pkg || !choice.ok || !tool || !dev || errors.length > 0) return { ok: false, errors };
  return { ok: true, checks: { pkg, pm, choice, tool, dev, workers, task, npmrc, registry, token } };
}

/** Step 2: the npm version for the chosen Node.js, and the log lines that say why each was chosen. */
function chooseVersions(
  c: NodeChecks,
  input: NodeBuildInput,
  notes: Notes,
): { ok: true; versions: NodeVersions } | { ok: false; errors: string[] } {
  const nodeVersion = c.choice.version.version;
  const node = semver.parse(nodeVersion) as semver.SemVer;
  const npmVersion = chooseNpmVersion(nodeVersion, input.npmVersions, input.npmEngines);
  const npmMajor = npmVersion ? semver.major(npmVersion) : bundledNpmMajor(node.major);
  if (c.tool.tool === "yarn2" && !semver.satisfies(node, COREPACK_NODE_RANGE)) {
    return {
      ok: false,
      errors: [
        `Yarn 2+ is provided through Corepack, which Node.js ${nodeVersion} lacks (it needs ${COREPACK_NODE_RANGE}): choose a newer Node.js with engines.node or CC_NODE_VERSION.`,
      ],
    };
  }
  notes.logLines.push(`Node.js version: ${c.choice.reason}.`);
  if (c.choice.version.eol) {
    notes.warnings.push(
      `Node.js ${nodeVersion} is end-of-life (no more security fixes): choose a supported version with engines.node or CC_NODE_VERSION.`,
    );
  }
  notes.logLines.push(
    npmVersion
      ? `npm ${npmVersion}: the newest npm ${npmMajor}.x (the line of Node.js ${node.major}) that accepts Node.js ${nodeVersion}.`
      : `No npm ${npmMajor}.x release accepts Node.js ${nodeVersion}.`,
  );
  return { ok: true, versions: { nodeVersion, npmVersion, npmMajor } };
}

/** Step 3: the log lines of the build tool and of development dependencies, and their warnings. */
function toolNotes(c: NodeChecks, vars: Record<string, string>, files: NodeProjectFiles, notes: Notes): void {
  const t = c.tool.tool;
  notes.logLines.push(`Build tool: ${TOOL_NAMES[t]} (${c.tool.why}).`);
  if (t !== "custom")
    notes.logLines.push(
      `Development dependencies: ${c.dev.install ? "installed" : "not installed"} (${c.dev.why}).`,
    );
  else {
    notes.logLines.push(
      "Development dependencies: left to CC_CUSTOM_BUILD_TOOL (NODE_ENV is passed as the application sets it).",
    );
    if (read(vars, "CC_NODE_DEV_DEPENDENCIES") !== undefined) {
      notes.warnings.push(
        "CC_NODE_DEV_DEPENDENCIES is not applied with CC_NODE_BUILD_TOOL=custom: the CC_CUSTOM_BUILD_TOOL command decides (e.g. pnpm install --prod).",
      );
    }
  }
  notes.warnings.push(...unusedManagerWarnings(t, files.lockFiles, c.pm));
}

/**
 * Step 4, the build steps: the package manager, CC_PRE_BUILD_HOOK, the install (npm's own preinstall,
 * install and postinstall scripts run inside it), CC_POST_BUILD_HOOK.
 */
function nodeBuildSteps(
  c: NodeChecks,
  v: NodeVersions,
  vars: Record<string, string>,
  notes: Notes,
): NodeBuildPlan["buildSteps"] {
  const t = c.tool.tool;
  const steps: NodeBuildPlan["buildSteps"] = [];
  steps.push(...toolSteps(t, c.pm, c.dev.install, v.nodeVersion, notes.warnings));
  const preBuild = read(vars, "CC_PRE_BUILD_HOOK");
  if (preBuild !== undefined) steps.push({ label: "Running CC_PRE_BUILD_HOOK", command: preBuild });
  if (t === "custom") {
    steps.push({
      label: "Running CC_CUSTOM_BUILD_TOOL",
      command: read(vars, "CC_CUSTOM_BUILD_TOOL") as string,
    });
  } else {
    const command = installCommand(t, c.dev.install, v.npmMajor);
    steps.push({ label: `Installing dependencies: ${command}`, command, install: true });
  }
  const postBuild = read(vars, "CC_POST_BUILD_HOOK");
  if (postBuild !== undefined) steps.push({ label: "Running CC_POST_BUILD_HOOK", command: postBuild });
  steps.forEach((s, i) => {
    notes.logLines.push(`Step ${i + 1}/${steps.length}: ${s.label}`);
  });
  return steps;
}

/** Step 5, the build's environment: the instance environment, npm's settings, the registry token for Yarn 2+. */
function nodeBuildEnv(
  c: NodeChecks,
  v: NodeVersions,
  vars: Record<string, string>,
  appHome: string,
  notes: Notes,
): Record<string, string> {
  const t = c.tool.tool;
  const buildEnv: Record<string, string> = {
    ...instanceEnvironment(vars, { INSTANCE_TYPE: "build" }, appHome),
    ...(t === "custom" ? {} : npmConfigEnv(t, c.dev.install, v.npmMajor)),
  };
  if (c.npmrc !== null && c.token !== null) {
    notes.logLines.push(`Writing .npmrc with the NPM_TOKEN of ${c.registry}.`);
    if (t === "yarn2") {
      // Yarn 2+ does not read .npmrc.
      buildEnv.YARN_NPM_AUTH_TOKEN = c.token;
      notes.logLines.push("Yarn 2+ does not read .npmrc: NPM_TOKEN is passed as YARN_NPM_AUTH_TOKEN.");
    }
  }
  if (buildEnv.YARN_GLOBAL_FOLDER !== undefined) {
    notes.logLines.push(`Yarn global folder: ${buildEnv.YARN_GLOBAL_FOLDER} (kept with the application).`);
  } else if (t === "yarn2") {
    notes.logLines.push(
      "Tip: with Yarn 3 or 4, set YARN_GLOBAL_FOLDER=$APP_HOME/.yarncache/ so that restarts use the build cache.",
    );
  }
  return buildEnv;
}

/** Step 6, the run phase: the start command (with CC_PRE_RUN_HOOK), npm's variables when node runs directly. */
function nodeRunPhase(
  c: NodeChecks,
  vars: Record<string, string>,
  notes: Notes,
): { start: string[]; runEnv: Record<string, string> } {
  const { pkg } = c;
  const runCommand = read(vars, "CC_RUN_COMMAND");
  let start = startCommand(c.tool.tool, pkg, runCommand, notes.warnings);
  const direct = runCommand === undefined && start[0] === "node" && pkg.scripts?.start !== undefined;
  const runEnv: Record<string, string> = direct
    ? {
        npm_lifecycle_event: "start",
        npm_lifecycle_script: pkg.scripts?.start ?? "",
        npm_package_name: String(pkg.name ?? ""),
        npm_package_version: String(pkg.version ?? ""),
        npm_package_json: "/app/package.json",
      }
    : {};
  notes.logLines.push(
    runCommand !== undefined
      ? "Start command: CC_RUN_COMMAND (through /bin/sh -c)."
      : direct
        ? `Start command: ${start.join(" ")} (scripts.start, run directly: a plain node command with no prestart or poststart needs no npm beside it).`
        : `Start command: ${start.join(" ")}`,
  );
  const preRun = read(vars, "CC_PRE_RUN_HOOK");
  if (preRun !== undefined) {
    start = withPreRunHook(start, preRun);
    notes.logLines.push("CC_PRE_RUN_HOOK runs before the start command.");
  }
  if (c.workers.length > 0) {
    const w = c.workers[0] as NodeWorker;
    notes.logLines.push(
      `${c.workers.length} background worker${c.workers.length > 1 ? "s" : ""} (restart ${w.restart}, after ${w.delaySeconds}s).`,
    );
  }
  if (c.task)
    notes.logLines.push(
      `${read(vars, "CC_TASK") === "true" ? "CC_TASK=true" : "A task (--task)"}: the application runs once to completion (no HTTP, no health check).`,
    );
  return { start, runEnv };
}

/** Step 7: the contract's mandatory conditions that do not stop the build (section 8). */
function mandatoryNotes(c: NodeChecks, input: NodeBuildInput, notes: Notes): void {
  const { gitignore } = input.files;
  if (!ignoresNodeModules(gitignore)) {
    notes.warnings.push(
      gitignore === null
        ? "There is no .gitignore: add one with the line /node_modules (dependencies are installed by the build, not committed)."
        : "/node_modules is not in .gitignore: add the line /node_modules (dependencies are installed by the build, not committed).",
    );
  }
  const nodeEnv = read(input.vars, "NODE_ENV");
  if (nodeEnv !== "production") {
    notes.warnings.push(
      `NODE_ENV is ${nodeEnv === undefined ? "not set" : quoted(nodeEnv)}: set NODE_ENV=production (required by the mandatory configuration).`,
    );
  }
  if (!c.task) notes.logLines.push("The application must listen on 0.0.0.0:8080 (PORT=8080).");
}

/**
 * Plans the build of a Node.js application. Every problem is listed at once, each naming the file or
 * the variable and what to change. The steps run in order; each appends to the deploy log's lines.
 */
export function planNodeBuild(input: NodeBuildInput): Result {
  const notes: Notes = { warnings: [], logLines: [] };
  const checked = checkNodeInputs(input, notes);
  if (!checked.ok) return checked;
  const c = checked.checks;
  const chosen = chooseVersions(c, input, notes);
  if (!chosen.ok) return chosen;
  const v = chosen.versions;
  toolNotes(c, input.vars, input.files, notes);
  const buildSteps = nodeBuildSteps(c, v, input.vars, notes);
  const buildEnv = nodeBuildEnv(c, v, input.vars, input.appHome ?? DEFAULT_APP_HOME, notes);
  const { start, runEnv } = nodeRunPhase(c, input.vars, notes);
  mandatoryNotes(c, input, notes);
  return {
    ok: true,
    plan: {
      nodeVersion: v.nodeVersion,
      npmVersion: v.npmVersion,
      tool: c.tool.tool,
      devDependencies: c.dev.install,
      buildSteps,
      buildEnv,
      start,
      runEnv,
      workers: c.workers,
      task: c.task,
      npmrc: c.npmrc,
      warnings: notes.warnings,
      logLines: notes.logLines,
    },
  };
}
