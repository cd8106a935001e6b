// The fake engine's release images, builds prepared ahead and volumes (ReleaseImages, AppVolumes): part of
// the unit tests' one in-memory engine (test/support/fake-engine.ts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PierError } from "../../src/core/errors.js";
import { LABEL, ROLE } from "../../src/core/labels.js";
import { releaseRepository } from "../../src/core/model.js";
import type {
  BuildContainer,
  BuildSlot,
  ContainerBuild,
  ImageBuild,
  PreparedBuild,
  ReleaseVolume,
} from "../../src/core/ports.js";
import { RELEASE_VOLUME_ROLE } from "../../src/core/release-volumes.js";
import { FakeEngineState, type Labels, matches } from "./fake-engine-state.js";
import { interpret } from "./fake-shell.js";

export abstract class FakeBuilds extends FakeEngineState {
  /** The build slot's sandbox a build joins (the slots are the engine's: fake-engine.ts). */
  protected abstract buildHolder(slot: BuildSlot): Promise<string>;

  // Release images.

  async buildImage(b: ImageBuild, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
    await this.enter("buildImage", b, onLine, signal);
    onLine(`Successfully tagged ${b.tag}`);
    this.images.set(b.tag, { id: `sha256:${b.tag}`, labels: { ...b.labels } });
  }

  async buildRelease(
    b: ContainerBuild,
    onLine: (line: string) => void,
    signal: AbortSignal,
    prepared?: PreparedBuild,
  ): Promise<void> {
    await this.enter("buildRelease", b, onLine, signal, prepared);
    if (!prepared && b.slot) await this.buildHolder(b.slot);
    const script = prepared ? this.preparedScript(prepared) : b.script;
    const run = interpret(["sh", "-c", script]);
    for (const l of run.lines) onLine(l);
    if (run.exitCode !== 0 && run.exitCode !== null)
      throw new PierError("BUILD_FAILED", `The build exited with code ${run.exitCode}.`);
    if (b.commit !== false) this.commit(b);
  }

  private commit(b: ContainerBuild): void {
    this.images.set(b.tag, { id: `sha256:${b.tag}`, labels: { ...b.labels, [LABEL.role]: ROLE.release } });
  }

  /**
   * A prepared build is used up; its script is the file at its scriptPath, read through the bind that holds
   * it (as the container reads it). One that is gone, or a script that is not there, fails the build.
   */
  private preparedScript(prepared: PreparedBuild): string {
    const alive = this.buildContainers.some((c) => c.id === prepared.ref && c.running);
    const spec = this.preparedSpecs.get(prepared.ref);
    this.buildContainers = this.buildContainers.filter((c) => c.id !== prepared.ref);
    if (!alive || !spec) throw new PierError("ENGINE_ERROR", `No such container: ${prepared.ref}`);
    const bind = spec.binds.find((m) => spec.scriptPath.startsWith(`${m.target}/`));
    try {
      return readFileSync(
        join(bind?.source ?? "/nonexistent", spec.scriptPath.slice(bind?.target.length ?? 0)),
        "utf8",
      );
    } catch {
      throw new PierError("BUILD_FAILED", `The build failed: ${spec.scriptPath}: not found.`);
    }
  }

  async prepareBuild(b: BuildContainer & { scriptPath: string }): Promise<PreparedBuild> {
    await this.enter("prepareBuild", b);
    const holder = b.slot ? await this.buildHolder(b.slot) : null;
    this.startedBuilds.push(b);
    for (const v of b.volumes) if (!this.volumes.has(v.name)) this.volumes.set(v.name, v.labels ?? b.labels);
    const id = this.nextId("build");
    this.preparedSpecs.set(id, b);
    this.buildContainers.push({
      id,
      name: id,
      labels: { ...b.labels, [LABEL.role]: ROLE.build, ...(holder ? { [LABEL.sandbox]: holder } : {}) },
      state: "running",
      running: true,
      startedAt: new Date().toISOString(),
      restarts: 0,
      exitCode: null,
      http: null,
      tcp: null,
      networkAddress: null,
    });
    return { ref: id };
  }

  async preparedBuildAlive(prepared: PreparedBuild): Promise<boolean> {
    await this.enter("preparedBuildAlive", prepared);
    const c = this.buildContainers.find((x) => x.id === prepared.ref && x.running);
    // Its network is its sandbox's: one that stopped left it without one.
    const holder = c?.labels[LABEL.sandbox];
    return c !== undefined && (!holder || this.sandboxes.some((s) => s.id === holder && s.running));
  }

  async imageFromFiles(b: ContainerBuild): Promise<void> {
    await this.enter("imageFromFiles", b);
    this.commit(b);
  }

  async discardPreparedBuild(prepared: PreparedBuild): Promise<void> {
    await this.enter("discardPreparedBuild", prepared);
    this.buildContainers = this.buildContainers.filter((c) => c.id !== prepared.ref);
  }

  async imageExists(tag: string): Promise<boolean> {
    await this.enter("imageExists", tag);
    return this.images.has(tag);
  }

  async imageInfo(tag: string): Promise<{ id: string; labels: Labels } | null> {
    await this.enter("imageInfo", tag);
    const i = this.images.get(tag);
    return i ? { id: i.id, labels: { ...i.labels } } : null;
  }

  async removeImage(tag: string): Promise<void> {
    await this.enter("removeImage", tag);
    this.images.delete(tag);
  }

  async releaseImages(appId: string): Promise<string[]> {
    await this.enter("releaseImages", appId);
    return [...this.images.keys()].filter((t) => t.startsWith(`${releaseRepository(appId)}:`));
  }

  // Volumes.

  /** False: the engine of a swarm (release files go into the image); a test sets it. */
  instancesShareVolumes = true;

  async dropDependencyCache(appId: string): Promise<void> {
    await this.enter("dropDependencyCache", appId);
    this.dropVolumes({ [LABEL.app]: appId, [LABEL.cache]: "deps" });
  }

  async releaseVolumes(appId: string): Promise<ReleaseVolume[]> {
    await this.enter("releaseVolumes", appId);
    return [...this.volumes]
      .filter(([, own]) => matches(own, { [LABEL.app]: appId, [LABEL.role]: RELEASE_VOLUME_ROLE }))
      .map(([name, own]) => ({ name, deploymentId: own[LABEL.deployment] ?? null }));
  }

  async removeReleaseVolume(name: string): Promise<boolean> {
    await this.enter("removeReleaseVolume", name);
    if (this.volumeInUse(name)) return false;
    this.volumes.delete(name);
    return true;
  }

  async removeAppVolumes(appId: string): Promise<void> {
    await this.enter("removeAppVolumes", appId);
    this.dropVolumes({ [LABEL.app]: appId });
  }

  /** Removes the volumes with these labels; one still in use stays (as the engine refuses it). */
  private dropVolumes(labels: Labels): void {
    for (const [name, own] of this.volumes)
      if (matches(own, labels) && !this.volumeInUse(name)) this.volumes.delete(name);
  }

  /** Whether a build container that is still there mounts the volume. */
  private volumeInUse(name: string): boolean {
    return [...this.preparedSpecs].some(
      ([id, b]) => b.volumes.some((v) => v.name === name) && this.buildContainers.some((c) => c.id === id),
    );
  }
}
