import { createHash } from "node:crypto";
import { mkdtemp, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { isTask } from "../../core/app-state.js";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import { FLAVOR_MEMORY_MIB } from "../../core/model.js";
import {
  type PathFact,
  PHP_IMAGE,
  type PhpBuildPlan,
  phpProjectPaths,
  phpSettings,
  planPhpBuild,
} from "../../core/plan-php.js";
import { planVendor, type VendorPlan } from "../../core/plan-php-vendor.js";
import type { AppVolumes, BuildSlot, ContainerBuild, ReleaseImages } from "../../core/ports.js";
import { releaseVolume, releaseVolumeName, VOLUME_LABEL, volumeLabel } from "../../core/release-volumes.js";
import { renderEnvFile, shellQuote } from "../../core/shell.js";
import {
  REDEPLOY_RUNS_LABEL,
  VENDOR_DIR,
  vendorVolume,
  type WarmBuild,
  type WarmBuilds,
} from "./php-warm.js";
import {
  APP_HOME,
  appBuild,
  type BuildContext,
  imageTag,
  type RunSettings,
  type Runtime,
  readInside,
} from "./runtime.js";

/** Lines of a failing step kept for the deployment's reason. */
const TAIL = 6;

/** What a path of the commit is, following symlinks; one that leads outside the commit is "outside". */
export async function inspectPath(root: string, relative: string): Promise<PathFact> {
  const realRoot = await realpath(root);
  let real: string;
  try {
    real = await realpath(join(realRoot, relative));
  } catch {
    return "missing";
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) return "outside";
  const s = await stat(real);
  return s.isDirectory() ? "dir" : s.isFile() ? "file" : "missing";
}

/**
 * The PHP application-server runtime (contract sections 2.5, 4.2, 4.4, 4.5, 8; docs/adr/0012): a pure
 * planner decides the webroot, composer, php.ini and the start command; this executor inspects the
 * commit's paths, runs the steps in a memory-limited build container of pier/php:8.4 with the app's
 * composer cache mounted, and commits the result as the release image. vendor/ that composer installs
 * lives in a release volume that the image names (core/plan-php-vendor.ts): the commit copies none of it,
 * and a redeploy with an unchanged composer.lock mounts the current release's volume again.
 */
export class PhpRuntime implements Runtime {
  constructor(
    private readonly deps: {
      engine: ReleaseImages & AppVolumes;
      /** PIER_BUILD_NETWORK: the network build containers join, or null. */
      buildNetwork: string | null;
      /** The app's build slot: builds join its network. */
      buildSlot: (appId: string, buildNetwork: string | null) => Promise<BuildSlot>;
      /** Build containers started while pushes are received. None: each build starts its own. */
      warm?: WarmBuilds;
    },
  ) {}

  settings(vars: Record<string, string>): { settings: RunSettings; errors: string[] } {
    const { port, errors } = phpSettings(vars);
    return {
      settings: { httpPort: port, tcpPort: null, ipv6Subnet: null, mountDockerSocket: false, cmd: null },
      errors,
    };
  }

  async build(ctx: BuildContext): Promise<string> {
    // The container started while the push was received, if any: this build uses it or removes it, even
    // when it fails before it gets that far.
    const ahead = this.deps.warm ? this.deps.warm.take(ctx.app.id) : Promise.resolve(null);
    ahead.catch(() => undefined);
    const claim = { settled: false };
    try {
      return await this.buildWith(ctx, ahead, claim);
    } finally {
      if (!claim.settled) {
        const w = await ahead.catch(() => null);
        if (w) void this.deps.warm?.discard(w);
      }
    }
  }

  private async buildWith(
    ctx: BuildContext,
    aheadOf: Promise<WarmBuild | null>,
    claim: { settled: boolean },
  ): Promise<string> {
    const { app, deployment: d, sourceDir: dir, write } = ctx;
    // The app's build slot (its network made at create) is looked up while the commit is inspected and planned.
    const slotOf = this.deps.buildSlot(app.id, this.deps.buildNetwork);
    slotOf.catch(() => undefined);
    const { plan, paths, composerJson } = await planCommit(ctx);
    const runtime = await this.runtimeImage();
    const depsKey = await phpDepsKey(dir, paths, plan, composerJson, runtime.id);
    const vendorPlanned = await this.vendorPlan(ctx, plan, paths.vendor ?? "missing", depsKey, runtime.id);
    // composer install is the only step (no php.ini, no hook, no config check).
    const onlyInstall = plan.buildSteps.every((s) => s.install);
    // vendor/ shared as it is and no other step: nothing runs, the image is the commit's files (no container).
    const nothingToRun = vendorPlanned.kind === "shared" && onlyInstall;
    const slot = await slotOf;
    const warm = await this.warmFor(ctx, aheadOf, claim, {
      nothingToRun,
      vendorPlanned,
      slot,
      runtimeId: runtime.id,
    });
    const vendor: VendorPlan = warm?.own === true ? { kind: "install", volume: warm.volume } : vendorPlanned;
    const secrets = warm?.dir ?? (await mkdtemp(join(tmpdir(), "pier-build-env-")));
    // Once the build has the container started ahead, its failure removes it; until then, this does.
    let handed = false;
    try {
      if (!nothingToRun)
        await writeFile(
          join(secrets, "build.env"),
          renderEnvFile({ ...ctx.vars, ...ctx.platformVars, ...plan.buildEnv }),
          { mode: 0o600 },
        );
      const script = phpBuildScript(plan, vendor);
      if (d.withoutCache) {
        write("Building without cache: the composer cache of this app is emptied.");
        await this.deps.engine.dropDependencyCache(app.id);
      }
      const tag = imageTag(app.id, d.id);
      if (!nothingToRun)
        write(
          `Building in a ${app.buildFlavor} build container (${FLAVOR_MEMORY_MIB[app.buildFlavor]} MiB) from ${PHP_IMAGE}...`,
        );
      if (vendor.kind !== "image") write(vendorLine(vendor, warm !== null));
      else if (plan.composer !== null && !this.deps.engine.instancesShareVolumes)
        write("vendor/ goes into the release image: its instances may run on any node.");
      if (warm) await writeFile(join(secrets, "build.sh"), script, { mode: 0o600 });
      handed = true;
      const spec = phpRelease({
        ctx,
        plan,
        vendor,
        warm,
        depsKey,
        onlyInstall,
        script,
        secrets,
        slot,
        runtimeId: runtime.id,
      });
      if (nothingToRun) {
        write(`-----> ${REUSED} (its volume; the autoloader lists no class of the project)`);
        write(
          `Nothing to run: the release image is the commit's files on ${PHP_IMAGE} (no build container).`,
        );
        await this.deps.engine.imageFromFiles(spec);
      } else await this.runBuild(ctx, spec, { vendor, depsKey, onlyInstall, plan, warm });
      write(`Built ${tag} (PHP 8.4, webroot ${plan.webroot}, start: ${plan.start.join(" ")}).`);
      return tag;
    } finally {
      if (warm && !handed) await this.deps.warm?.discard(warm);
      await rm(secrets, { recursive: true, force: true });
    }
  }

  /** The PHP runtime image's id and labels; missing: the error says how to build it. */
  private async runtimeImage(): Promise<{ id: string; labels: Record<string, string> }> {
    const runtime = await this.deps.engine.imageInfo(PHP_IMAGE);
    if (!runtime)
      throw new PierError(
        "ENGINE_ERROR",
        `The PHP runtime image ${PHP_IMAGE} is missing.`,
        "Run scripts/setup.sh (npm start runs it) to build it.",
      );
    return runtime;
  }

  /**
   * The container started while the push was received, when it serves this build: made as this build would
   * make its own (image, build slot, build flavor) and guessing its vendor/ right (a new volume for an install,
   * or the current release's volume that this build shares). One that does not serve goes. With nothing to
   * run it is not waited for (its start may still be under way): it goes meanwhile.
   */
  private async warmFor(
    ctx: BuildContext,
    aheadOf: Promise<WarmBuild | null>,
    claim: { settled: boolean },
    o: { nothingToRun: boolean; vendorPlanned: VendorPlan; slot: BuildSlot; runtimeId: string },
  ): Promise<WarmBuild | null> {
    const { app, deployment: d } = ctx;
    const { vendorPlanned } = o;
    const ahead = o.nothingToRun ? null : await aheadOf;
    claim.settled = true;
    if (o.nothingToRun)
      void aheadOf.then(
        (w) => w && this.deps.warm?.discard(w),
        () => undefined,
      );
    const guessed =
      ahead !== null &&
      (ahead.own
        ? vendorPlanned.kind === "install"
        : vendorPlanned.kind === "shared" && vendorPlanned.volume === ahead.volume);
    const warm =
      ahead &&
      guessed &&
      !d.withoutCache &&
      ahead.toolchainId === o.runtimeId &&
      ahead.slot.network === o.slot.network &&
      ahead.memoryBytes === FLAVOR_MEMORY_MIB[app.buildFlavor] * 2 ** 20
        ? ahead
        : null;
    // Gone before the composer cache is emptied (it mounts the cache volume); else off the critical path.
    if (ahead && !warm && d.withoutCache) await this.deps.warm?.discard(ahead);
    else if (ahead && !warm) void this.deps.warm?.discard(ahead);
    return warm;
  }

  /**
   * Runs the build container (in the one started ahead, if any). composer install with a lock and
   * --no-scripts, and no other step, writes only into volumes (vendor/, its cache): the release image, the
   * commit's files alone, is made while it runs, not after it. A failed step is named with its last lines.
   */
  private async runBuild(
    ctx: BuildContext,
    spec: ContainerBuild,
    o: {
      vendor: VendorPlan;
      depsKey: string | null;
      onlyInstall: boolean;
      plan: PhpBuildPlan;
      warm: WarmBuild | null;
    },
  ): Promise<void> {
    const { engine } = this.deps;
    const { vendor } = o;
    const made = vendor.kind === "install" || vendor.kind === "copy" ? vendor.volume : null;
    const alongside =
      vendor.kind === "install" &&
      o.depsKey !== null &&
      o.onlyInstall &&
      /(^|\s)--no-scripts(\s|$)/.test(o.plan.composer?.install ?? "")
        ? engine.imageFromFiles(spec)
        : null;
    alongside?.catch(() => undefined);
    const steps = stepTail(ctx.write);
    await engine
      .buildRelease(alongside ? { ...spec, commit: false } : spec, steps.onLine, ctx.signal, o.warm?.prepared)
      .catch(async (e: unknown) => {
        // A failed or cancelled build leaves no volume behind (its container is gone: nothing uses it),
        // and no image made alongside.
        if (alongside)
          await alongside.then(
            () => engine.removeImage(spec.tag),
            () => undefined,
          );
        if (made) await engine.removeReleaseVolume(made).catch(() => undefined);
        if (steps.failed() === null || !(e instanceof PierError)) throw e;
        throw new PierError("BUILD_FAILED", `${steps.failed()} failed: ${steps.tail.join(" | ")}`, e.hint);
      });
    if (alongside)
      await alongside.catch(async (e: unknown) => {
        if (made) await engine.removeReleaseVolume(made).catch(() => undefined);
        throw e;
      });
  }

  /** Where vendor/ of this release goes: the current release's image and the app's volumes decide. */
  private async vendorPlan(
    ctx: BuildContext,
    plan: PhpBuildPlan,
    vendor: PathFact,
    depsKey: string | null,
    toolchainId: string,
  ): Promise<VendorPlan> {
    const { engine } = this.deps;
    const reuse =
      engine.instancesShareVolumes &&
      plan.composer !== null &&
      vendor === "missing" &&
      depsKey !== null &&
      !ctx.deployment.withoutCache;
    const info = reuse && ctx.previousImage ? await engine.imageInfo(ctx.previousImage) : null;
    const volumes = info ? await engine.releaseVolumes(ctx.app.id) : [];
    return planVendor({
      composer: plan.composer,
      vendor,
      depsKey,
      withoutCache: ctx.deployment.withoutCache,
      previous:
        info && info.labels[LABEL.toolchain] === toolchainId
          ? {
              depsKey: info.labels[LABEL.depsKey] ?? null,
              volume: releaseVolume(info.labels)?.name ?? null,
            }
          : null,
      volumes: volumes.map((v) => v.name),
      newVolume: releaseVolumeName(ctx.app.id, ctx.deployment.id, "vendor"),
      instancesShareVolumes: engine.instancesShareVolumes,
    });
  }
}

const REUSED =
  "Dependencies unchanged (composer.lock, composer.json, flags, PHP image): vendor/ reused from the current release";
/** Where the current release's vendor/ is mounted when it is copied into a new volume. */
const PREVIOUS_VENDOR = "/tmp/pier-vendor-previous";

/** The commit's paths inspected and the build planned; its log lines and warnings are written. */
async function planCommit(
  ctx: BuildContext,
): Promise<{ plan: PhpBuildPlan; paths: Record<string, PathFact>; composerJson: string | null }> {
  const { sourceDir: dir, write } = ctx;
  const located = phpProjectPaths(ctx.vars);
  const paths: Record<string, PathFact> = {};
  for (const p of located.paths) paths[p] = await inspectPath(dir, p);
  const composerJson = paths["composer.json"] === "file" ? await readInside(dir, "composer.json") : null;
  const planned = planPhpBuild({
    vars: ctx.vars,
    paths,
    composerJson,
    appHome: APP_HOME,
    task: isTask(ctx.app, ctx.vars),
  });
  if (!planned.ok) throw new PierError("BUILD_FAILED", planned.errors.join(" "));
  const plan = planned.plan;
  for (const l of plan.logLines) write(l);
  for (const w of plan.warnings) write(`Warning: ${w}`);
  return { plan, paths, composerJson };
}

/**
 * With composer.lock, the release image records a key of what the install depends on; a current release
 * with the same key lends its vendor/ (a release volume). Null without a lock or composer.
 */
async function phpDepsKey(
  dir: string,
  paths: Record<string, PathFact>,
  plan: PhpBuildPlan,
  composerJson: string | null,
  runtimeId: string,
): Promise<string | null> {
  const lock = paths["composer.lock"] === "file" ? await readInside(dir, "composer.lock") : null;
  if (!plan.composer || lock === null) return null;
  return createHash("sha256")
    .update(JSON.stringify([lock, composerJson, plan.composer.install, runtimeId]))
    .digest("hex")
    .slice(0, 24);
}

/** Where this release's vendor/ is, for the deploy log. */
function vendorLine(vendor: Exclude<VendorPlan, { kind: "image" }>, warm: boolean): string {
  const started = warm ? "; the build container started while the push was received" : "";
  return vendor.kind === "shared"
    ? `vendor/ is the current release's volume ${vendor.volume}${started}.`
    : `vendor/ goes into the volume ${vendor.volume} (not into the image: no copy of it at the commit)${started}.`;
}

/** The build container's script: each step says which it is when it fails (`pier-step-failed: ...`). */
function phpBuildScript(plan: PhpBuildPlan, vendor: VendorPlan): string {
  return [
    "set -a; . /pier/build.env; set +a",
    ...plan.buildSteps.flatMap((s) => {
      if (s.install && vendor.kind === "shared")
        return [
          `echo ${shellQuote(`-----> ${REUSED} (its volume; the autoloader lists no class of the project)`)}`,
        ];
      const dump = plan.composer?.dumpAutoload;
      if (s.install && vendor.kind === "copy" && dump)
        return [
          `echo ${shellQuote(`-----> ${REUSED}, copied into a new volume; ${dump}`)}`,
          `cp -a ${PREVIOUS_VENDOR}/. ${VENDOR_DIR}/`,
          `/bin/sh -ec ${shellQuote(dump)} || { code=$?; echo ${shellQuote(`pier-step-failed: ${dump}`)}; exit $code; }`,
        ];
      const [label, command] = [s.label, s.command];
      return [
        `echo ${shellQuote(`-----> ${label}`)}`,
        `/bin/sh -ec ${shellQuote(command)} || { code=$?; echo ${shellQuote(`pier-step-failed: ${s.label}`)}; exit $code; }`,
      ];
    }),
  ].join("\n");
}

/** The release's build: the app's build container with vendor/'s volume and the labels a redeploy reads. */
function phpRelease(o: {
  ctx: BuildContext;
  plan: PhpBuildPlan;
  vendor: VendorPlan;
  warm: WarmBuild | null;
  depsKey: string | null;
  onlyInstall: boolean;
  script: string;
  secrets: string;
  slot: BuildSlot;
  runtimeId: string;
}): ContainerBuild {
  const { ctx, plan, vendor } = o;
  return appBuild({
    app: ctx.app,
    deployment: ctx.deployment,
    toolchainImage: PHP_IMAGE,
    toolchainId: o.runtimeId,
    base: null,
    depsKey: o.depsKey,
    contextDir: ctx.sourceDir,
    script: o.script,
    binds: [{ source: o.secrets, target: "/pier" }],
    volumes:
      vendor.kind === "image"
        ? []
        : [
            vendorVolume(ctx.app.id, o.warm?.id ?? ctx.deployment.id, vendor.volume, o.depsKey),
            ...(vendor.kind === "copy"
              ? [{ name: vendor.from, target: PREVIOUS_VENDOR, readOnly: true }]
              : []),
          ],
    labels: {
      ...(vendor.kind === "image" ? {} : { [VOLUME_LABEL]: volumeLabel(vendor.volume, VENDOR_DIR) }),
      // Whether a redeploy with the same dependencies runs anything (the next push's guess, php-warm.ts).
      [REDEPLOY_RUNS_LABEL]: String(!o.onlyInstall || (plan.composer?.dumpAutoload ?? null) !== null),
    },
    slot: o.slot,
    plan,
  });
}

/** Writes a build's lines; keeps the failed step's name and the last lines of the step that runs. */
function stepTail(write: (line: string) => void) {
  const tail: string[] = [];
  let failedStep: string | null = null;
  return {
    tail,
    failed: () => failedStep,
    onLine: (line: string) => {
      const m = /^pier-step-failed: (.*)$/.exec(line);
      if (m) {
        failedStep = m[1] as string;
        return;
      }
      if (line.trim() !== "" && !line.startsWith("----->")) {
        tail.push(line.trim());
        if (tail.length > TAIL) tail.shift();
      }
      if (line.startsWith("----->")) tail.length = 0;
      write(line);
    },
  };
}
