/**
 * The package manager of a Node.js build (contract sections 2.3, 5.1, 8 and 9): which tool installs the
 * dependencies (CC_NODE_BUILD_TOOL, the lock files, packageManager), with or without development
 * dependencies, how the tool itself is provided (Corepack, npm), and the private registry's `.npmrc`.
 * Pure; planNodeBuild (plan-node.ts) puts these choices into a plan.
 */

import semver from "semver";
import type { PackageManagerField } from "./package-json.js";
import { hasControlCharacter, quoted, read } from "./plan-vars.js";

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

export const DEFAULT_NPM_REGISTRY = "registry.npmjs.org";
/** Corepack ships with these Node.js versions (contract section 2.3). */
export const COREPACK_NODE_RANGE = "^14.19.0 || >=16.9.0";

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
export function privateRegistry(
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

export interface ToolChoice {
  tool: NodeBuildTool;
  why: string;
}

export const TOOL_NAMES: Record<NodeBuildTool, string> = {
  "npm-install": "npm install",
  "npm-ci": "npm ci",
  yarn: "Yarn Classic (v1)",
  yarn2: "Yarn Berry (v2 or later)",
  bun: "Bun",
  custom: "CC_CUSTOM_BUILD_TOOL",
};

export function chooseTool(
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
export function packageManagerConflicts({ tool, why }: ToolChoice, pm: PackageManagerField): string[] {
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
export function chooseDevDependencies(
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
export function unusedManagerWarnings(
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
export function installCommand(tool: NodeBuildTool, dev: boolean, npmMajor: number): string {
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

export function npmConfigEnv(tool: NodeBuildTool, dev: boolean, npmMajor: number): Record<string, string> {
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
export function toolSteps(
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
