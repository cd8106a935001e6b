import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LABEL } from "../../core/labels.js";
import type { App } from "../../core/model.js";
import { PHP_IMAGE } from "../../core/plan-php.js";
import type { AppVolumes, BuildSlot, PreparedBuild, ReleaseImages } from "../../core/ports.js";
import { RELEASE_VOLUME_ROLE, releaseVolume, releaseVolumeName } from "../../core/release-volumes.js";
import { APP_HOME, buildContainer } from "./runtime.js";

/** Where a build container started ahead finds the build's variables and script (a host folder, read-only). */
export const WARM_DIR = "/pier";
export const WARM_SCRIPT = `${WARM_DIR}/build.sh`;
export const VENDOR_DIR = `${APP_HOME}/vendor`;

/**
 * A PHP release image's label: `true` when a redeploy with its dependencies unchanged still runs a step
 * in a build container (a hook, php.ini, dump-autoload), `false` when it has nothing to run.
 */
export const REDEPLOY_RUNS_LABEL = LABEL.redeployRuns;

/** A PHP build prepared while a push is received, with a new vendor/ volume (docs/adr/0012). */
export interface WarmBuild {
  id: string;
  /** The engine's token for the build prepared ahead. */
  prepared: PreparedBuild;
  /** The host folder bound at WARM_DIR: the build writes build.env and build.sh there. */
  dir: string;
  /** The volume it mounts at VENDOR_DIR: a new one (`own`), or the current release's (a redeploy). */
  volume: string;
  own: boolean;
  toolchainId: string;
  /** The build slot it joined. */
  slot: BuildSlot;
  memoryBytes: number;
  timer: NodeJS.Timeout | null;
}

/** The volume of a release volume that a warm build mounts at VENDOR_DIR, with its labels. */
export const vendorVolume = (appId: string, id: string, name: string, depsKey: string | null) => ({
  name,
  target: VENDOR_DIR,
  labels: {
    [LABEL.app]: appId,
    [LABEL.deployment]: id,
    [LABEL.role]: RELEASE_VOLUME_ROLE,
    ...(depsKey ? { [LABEL.depsKey]: depsKey } : {}),
  },
});

/**
 * Build containers of PHP apps started ahead: when a push to an app begins, its next build's container
 * (pier/php:8.4, the app's cache, its build slot, its build flavor) is created and started while the pack is
 * received, and waits on its stdin. Its vendor/ is a guess: the current release's volume when it has one
 * (a redeploy most often keeps composer.lock), else a new volume (a first deploy). The build takes it when
 * the guess was right (it shares that volume, or installs into a new one); otherwise, or after `idleMs`
 * unused, it goes (a volume it made with it).
 */
export class WarmBuilds {
  private readonly ready = new Map<string, Promise<WarmBuild | null>>();

  constructor(
    private readonly deps: {
      engine: ReleaseImages & AppVolumes;
      buildNetwork: string | null;
      buildSlot: (appId: string, buildNetwork: string | null) => Promise<BuildSlot>;
      findApp: (appId: string) => Promise<App | null>;
      /** The image of the app's current release, or null. */
      currentImage: (appId: string) => Promise<string | null>;
      idleMs?: number;
    },
  ) {}

  /** A push to the app begins: its next build's container, unless one is ready or on its way. */
  prepare(appId: string): void {
    if (this.ready.has(appId)) return;
    const made = this.make(appId).catch(() => null);
    this.ready.set(appId, made);
    void made.then((w) => {
      if (this.ready.get(appId) !== made) return;
      if (!w) {
        this.ready.delete(appId);
        return;
      }
      w.timer = setTimeout(() => {
        if (this.ready.get(appId) !== made) return;
        this.ready.delete(appId);
        void this.discard(w);
      }, this.deps.idleMs ?? 60_000);
      w.timer.unref();
    });
  }

  /** The app's container started ahead, if any: the caller's from now on (to use, or to discard). */
  async take(appId: string): Promise<WarmBuild | null> {
    const made = this.ready.get(appId);
    if (!made) return null;
    this.ready.delete(appId);
    const w = await made;
    if (w?.timer) clearTimeout(w.timer);
    if (!w) return null;
    // The engine may have restarted (the reconciler removes stopped build containers) since.
    if (await this.deps.engine.preparedBuildAlive(w.prepared).catch(() => false)) return w;
    await this.discard(w);
    return null;
  }

  /** pier server stops: the containers waiting for a build go (one taken by a build is the build's). */
  async close(): Promise<void> {
    const waiting = [...this.ready.values()];
    this.ready.clear();
    for (const made of waiting) {
      const w = await made;
      if (!w) continue;
      if (w.timer) clearTimeout(w.timer);
      await this.discard(w);
    }
  }

  /** Removes a container started ahead, its volume and its folder. */
  async discard(w: WarmBuild): Promise<void> {
    await this.deps.engine.discardPreparedBuild(w.prepared).catch(() => undefined);
    if (w.own) await this.deps.engine.removeReleaseVolume(w.volume).catch(() => undefined);
    await rm(w.dir, { recursive: true, force: true });
  }

  private async make(appId: string): Promise<WarmBuild | null> {
    const { engine } = this.deps;
    // On a swarm vendor/ goes into the image: no container with a volume started ahead (ADR 0030).
    if (!engine.instancesShareVolumes) return null;
    const app = await this.deps.findApp(appId);
    if (app?.type !== "phpserver") return null;
    const current = await this.deps.currentImage(appId);
    const info = current ? await engine.imageInfo(current) : null;
    const shared = info ? releaseVolume(info.labels) : null;
    // A redeploy of the current release's dependencies would run nothing (no build container, php.ts): the
    // next push most likely keeps them, and a container started for it would only compete for the CPU.
    if (shared && info?.labels[REDEPLOY_RUNS_LABEL] === "false") return null;
    if (shared) {
      const there = await engine.releaseVolumes(appId);
      if (!there.some((v) => v.name === shared.name)) return null;
    }
    const runtime = await engine.imageInfo(PHP_IMAGE);
    if (!runtime) return null;
    const slot = await this.deps.buildSlot(appId, this.deps.buildNetwork);
    const id = `warm-${randomBytes(6).toString("hex")}`;
    const volume = shared?.name ?? releaseVolumeName(appId, id, "vendor");
    const dir = await mkdtemp(join(tmpdir(), "pier-build-env-"));
    const spec = buildContainer({
      app,
      from: PHP_IMAGE,
      slot,
      binds: [{ source: dir, target: WARM_DIR }],
      volumes: [vendorVolume(appId, id, volume, null)],
      labels: { [LABEL.app]: appId, [LABEL.deployment]: id },
    });
    let prepared: PreparedBuild;
    try {
      prepared = await engine.prepareBuild({ ...spec, scriptPath: WARM_SCRIPT });
    } catch (e) {
      if (!shared) await engine.removeReleaseVolume(volume).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw e;
    }
    return {
      id,
      prepared,
      dir,
      volume,
      own: shared === null,
      toolchainId: runtime.id,
      slot,
      memoryBytes: spec.memoryBytes,
      timer: null,
    };
  }
}
