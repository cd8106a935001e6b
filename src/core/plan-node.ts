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

import {
  COREPACK_NODE_RANGE,
  chooseDevDependencies,
  chooseTool,
  installCommand,
  type NodeBuildTool,
  type NodeProjectFiles,
  npmConfigEnv,
  packageManagerConflicts,
  privateRegistry,
  TOOL_NAMES,
  type ToolChoice,
  toolSteps,
  unusedManagerWarnings,
} from "./plan-node-tool.js";
import { quoted, read } from "./plan-vars.js";
import { readWorkers, type Worker, withPreRunHook } from "./workers.js";

export {
  COREPACK_NODE_RANGE,
  DEFAULT_NPM_REGISTRY,
  NODE_BUILD_TOOLS,
  type NodeBuildTool,
  type NodeProjectFiles,
  registryHost,
} from "./plan-node-tool.js";

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
  workers: Worker[];
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

// ---------------------------------------------------------------------------------------------------
// The plan

type Result = { ok: true; plan: NodeBuildPlan } | { ok: false; errors: string[] };

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
  workers: Worker[];
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
  const { workers, errors: workerErrors } = readWorkers(vars);
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
    const w = c.workers[0] as Worker;
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
