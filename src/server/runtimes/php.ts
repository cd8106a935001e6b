import { createHash } from "node:crypto";
import { mkdtemp, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
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
import type { AppVolumes, ReleaseImages } from "../../core/ports.js";
import {
  RELEASE_VOLUME_ROLE,
  releaseVolume,
  releaseVolumeName,
  VOLUME_LABEL,
  volumeLabel,
} from "../../core/release-volumes.js";
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
      /** The app's build sandbox (its container id): builds join its network namespace. */
      buildSandbox: (appId: string, buildNetwork: string | null) => Promise<string>;
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
    // The app's build sandbox is looked up (made at create) while the commit is inspected and planned.
    const sandbox = this.deps.buildSandbox(app.id, this.deps.buildNetwork);
    sandbox.catch(() => undefined);
    const located = phpProjectPaths(ctx.vars);
    const paths: Record<string, PathFact> = {};
    for (const p of located.paths) paths[p] = await inspectPath(dir, p);
    const composerJson = paths["composer.json"] === "file" ? await readInside(dir, "composer.json") : null;
    const planned = planPhpBuild({
      vars: ctx.vars,
      paths,
      composerJson,
      appHome: APP_HOME,
      task: app.task !== null || ctx.vars.CC_TASK === "true",
    });
    if (!planned.ok) throw new PierError("BUILD_FAILED", planned.errors.join(" "));
    const plan = planned.plan;
    for (const l of plan.logLines) write(l);
    for (const w of plan.warnings) write(`Warning: ${w}`);

    const runtime = await this.deps.engine.imageInfo(PHP_IMAGE);
    if (!runtime)
      throw new PierError(
        "ENGINE_ERROR",
        `The PHP runtime image ${PHP_IMAGE} is missing.`,
        "Run scripts/setup.sh (npm start runs it) to build it.",
      );
    // With composer.lock, the release image records a key of what the install depends on; a current
    // release with the same key lends its vendor/ (a release volume).
    const lock = paths["composer.lock"] === "file" ? await readInside(dir, "composer.lock") : null;
    const depsKey =
      plan.composer && lock !== null
        ? createHash("sha256")
            .update(JSON.stringify([lock, composerJson, plan.composer.install, runtime.id]))
            .digest("hex")
            .slice(0, 24)
        : null;
    const vendorPlanned = await this.vendorPlan(ctx, plan, paths.vendor ?? "missing", depsKey, runtime.id);
    // composer install is the only step (no php.ini, no hook, no config check).
    const onlyInstall = plan.buildSteps.every((s) => s.install);
    // vendor/ shared as it is and no other step: nothing runs, the image is the commit's files (no container).
    const nothingToRun = vendorPlanned.kind === "shared" && onlyInstall;
    const previousDir = "/tmp/pier-vendor-previous";
    const sandboxId = await sandbox;
    // The container started while the push was received serves this build if it was made as this build
    // would make its own (image, sandbox, build flavor) and guessed its vendor/ right: a new volume for an
    // install, or the current release's volume that this build shares.
    // With nothing to run it is not waited for (its start may still be under way): it goes meanwhile.
    const ahead = nothingToRun ? null : await aheadOf;
    claim.settled = true;
    if (nothingToRun)
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
      ahead.toolchainId === runtime.id &&
      ahead.sandbox === sandboxId &&
      ahead.memoryBytes === FLAVOR_MEMORY_MIB[app.buildFlavor] * 2 ** 20
        ? ahead
        : null;
    // Gone before the composer cache is emptied (it mounts the cache volume); else off the critical path.
    if (ahead && !warm && d.withoutCache) await this.deps.warm?.discard(ahead);
    else if (ahead && !warm) void this.deps.warm?.discard(ahead);
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
      const reused =
        "Dependencies unchanged (composer.lock, composer.json, flags, PHP image): vendor/ reused from the current release";
      // Each step says which it is when it fails: the deployment's reason names it, with its last lines.
      const script = [
        "set -a; . /pier/build.env; set +a",
        ...plan.buildSteps.flatMap((s) => {
          if (s.install && vendor.kind === "shared")
            return [
              `echo ${shellQuote(`-----> ${reused} (its volume; the autoloader lists no class of the project)`)}`,
            ];
          const dump = plan.composer?.dumpAutoload;
          if (s.install && vendor.kind === "copy" && dump)
            return [
              `echo ${shellQuote(`-----> ${reused}, copied into a new volume; ${dump}`)}`,
              `cp -a ${previousDir}/. ${VENDOR_DIR}/`,
              `/bin/sh -ec ${shellQuote(dump)} || { code=$?; echo ${shellQuote(`pier-step-failed: ${dump}`)}; exit $code; }`,
            ];
          const [label, command] = [s.label, s.command];
          return [
            `echo ${shellQuote(`-----> ${label}`)}`,
            `/bin/sh -ec ${shellQuote(command)} || { code=$?; echo ${shellQuote(`pier-step-failed: ${s.label}`)}; exit $code; }`,
          ];
        }),
      ].join("\n");
      if (d.withoutCache) {
        write("Building without cache: the composer cache of this app is emptied.");
        await this.deps.engine.removeVolumes({ [LABEL.app]: app.id, [LABEL.cache]: "deps" });
      }
      const tag = imageTag(app.id, d.id);
      if (!nothingToRun)
        write(
          `Building in a ${app.buildFlavor} build container (${FLAVOR_MEMORY_MIB[app.buildFlavor]} MiB) from ${PHP_IMAGE}...`,
        );
      const tail: string[] = [];
      let failedStep: string | null = null;
      if (vendor.kind !== "image")
        write(
          vendor.kind === "shared"
            ? `vendor/ is the current release's volume ${vendor.volume}${warm ? "; the build container started while the push was received" : ""}.`
            : `vendor/ goes into the volume ${vendor.volume} (not into the image: no copy of it at the commit)${warm ? "; the build container started while the push was received" : ""}.`,
        );
      if (warm) await writeFile(join(secrets, "build.sh"), script, { mode: 0o600 });
      const made = vendor.kind === "install" || vendor.kind === "copy" ? vendor.volume : null;
      handed = true;
      const spec = appBuild({
        app,
        deployment: d,
        toolchainImage: PHP_IMAGE,
        toolchainId: runtime.id,
        base: null,
        depsKey,
        contextDir: dir,
        script,
        binds: [{ source: secrets, target: "/pier" }],
        volumes:
          vendor.kind === "image"
            ? []
            : [
                vendorVolume(app.id, warm?.id ?? d.id, vendor.volume, depsKey),
                ...(vendor.kind === "copy"
                  ? [{ name: vendor.from, target: previousDir, readOnly: true }]
                  : []),
              ],
        labels: {
          ...(vendor.kind === "image" ? {} : { [VOLUME_LABEL]: volumeLabel(vendor.volume, VENDOR_DIR) }),
          // Whether a redeploy with the same dependencies runs anything (the next push's guess, php-warm.ts).
          [REDEPLOY_RUNS_LABEL]: String(!onlyInstall || (plan.composer?.dumpAutoload ?? null) !== null),
        },
        sandbox: sandboxId,
        plan,
      });
      if (nothingToRun) {
        write(`-----> ${reused} (its volume; the autoloader lists no class of the project)`);
        write(
          `Nothing to run: the release image is the commit's files on ${PHP_IMAGE} (no build container).`,
        );
        await this.deps.engine.imageFromFiles(spec);
        write(`Built ${tag} (PHP 8.4, webroot ${plan.webroot}, start: ${plan.start.join(" ")}).`);
        return tag;
      }
      // composer install with a lock and --no-scripts, and no other step, writes only into volumes (vendor/,
      // its cache): the release image, the commit's files alone, is made while it runs, not after it.
      const alongside =
        vendor.kind === "install" &&
        depsKey !== null &&
        onlyInstall &&
        /(^|\s)--no-scripts(\s|$)/.test(plan.composer?.install ?? "")
          ? this.deps.engine.imageFromFiles(spec)
          : null;
      alongside?.catch(() => undefined);
      await this.deps.engine
        .buildInContainer(
          alongside ? { ...spec, commit: false } : spec,
          (line) => {
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
          ctx.signal,
          warm?.containerId,
        )
        .catch(async (e: unknown) => {
          // A failed or cancelled build leaves no volume behind (its container is gone: nothing uses it),
          // and no image made alongside.
          if (alongside)
            await alongside.then(
              () => this.deps.engine.removeImage(tag),
              () => undefined,
            );
          if (made) await this.deps.engine.removeVolume(made).catch(() => undefined);
          if (failedStep === null || !(e instanceof PierError)) throw e;
          throw new PierError("BUILD_FAILED", `${failedStep} failed: ${tail.join(" | ")}`, e.hint);
        });
      if (alongside)
        await alongside.catch(async (e: unknown) => {
          if (made) await this.deps.engine.removeVolume(made).catch(() => undefined);
          throw e;
        });
      write(`Built ${tag} (PHP 8.4, webroot ${plan.webroot}, start: ${plan.start.join(" ")}).`);
      return tag;
    } finally {
      if (warm && !handed) await this.deps.warm?.discard(warm);
      await rm(secrets, { recursive: true, force: true });
    }
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
      plan.composer !== null && vendor === "missing" && depsKey !== null && !ctx.deployment.withoutCache;
    const info = reuse && ctx.previousImage ? await engine.imageInfo(ctx.previousImage) : null;
    const volumes = info
      ? await engine.listVolumes({ [LABEL.app]: ctx.app.id, [LABEL.role]: RELEASE_VOLUME_ROLE })
      : [];
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
    });
  }
}
