// The Docker adapter's volumes (the DependencyCache and ReleaseVolumes ports, and the release volume an
// instance mounts): only Pier's own, by label. DockerEngine (docker.ts) delegates to it.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import type { InstanceFilesystem } from "../../core/instance-fs.js";
import { LABEL, labelFilter } from "../../core/labels.js";
import type { ReleaseVolume } from "../../core/ports.js";
import { RELEASE_VOLUME_ROLE, releaseVolume, VOLUME_LABEL } from "../../core/release-volumes.js";
import { isNotFound } from "./docker-common.js";

export class DockerVolumes {
  constructor(
    private readonly docker: Docker,
    /** The labels every object of this Pier carries. */
    private readonly own: Record<string, string>,
  ) {}

  /** Pier's volumes with these labels, as the engine lists them. */
  private async volumesLabelled(labels: Record<string, string>): Promise<Docker.VolumeInspectInfo[]> {
    const { Volumes } = await this.docker.listVolumes({
      filters: { label: labelFilter(this.own, labels) },
    });
    return Volumes ?? [];
  }

  /** Removes Pier's volumes with these labels; one still in use stays. */
  private async removeVolumesLabelled(labels: Record<string, string>): Promise<void> {
    for (const v of await this.volumesLabelled(labels)) {
      await this.docker
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined);
    }
  }

  async dropDependencyCache(appId: string): Promise<void> {
    await this.removeVolumesLabelled({ [LABEL.app]: appId, [LABEL.cache]: "deps" });
  }

  async releaseVolumes(appId: string): Promise<ReleaseVolume[]> {
    const vols = await this.volumesLabelled({ [LABEL.app]: appId, [LABEL.role]: RELEASE_VOLUME_ROLE });
    return vols.map((v) => ({ name: v.Name, deploymentId: v.Labels?.[LABEL.deployment] ?? null }));
  }

  async removeReleaseVolume(name: string): Promise<boolean> {
    try {
      await this.docker.getVolume(name).remove();
      return true;
    } catch (e) {
      if (isNotFound(e)) return true;
      if ((e as { statusCode?: number }).statusCode === 409) return false;
      throw e;
    }
  }

  async removeAppVolumes(appId: string): Promise<void> {
    await this.removeVolumesLabelled({ [LABEL.app]: appId });
  }

  /**
   * The release volume an instance of this image mounts (core/release-volumes.ts), checked to exist (the
   * engine would otherwise make an empty one, and the app would fail without its files) and to be a
   * release volume of this Pier and of the instance's app: a Dockerfile's LABEL must not reach another
   * app's (or an add-on's) volume.
   */
  async releaseMount(
    image: string,
    labels: Record<string, string>,
    appId: string | undefined,
    fs: InstanceFilesystem,
  ): Promise<string[]> {
    const volume = releaseVolume(labels);
    if (!volume) return [];
    let own: Record<string, string>;
    try {
      own = (await this.docker.getVolume(volume.name).inspect()).Labels ?? {};
    } catch (e) {
      if (!isNotFound(e)) throw e;
      throw new PierError(
        "ENGINE_ERROR",
        `The volume ${volume.name} that holds ${volume.target} of the image ${image} is gone.`,
        "Deploy again: pier restart --without-cache installs it afresh.",
      );
    }
    const mine = { ...this.own, [LABEL.app]: appId ?? "", [LABEL.role]: RELEASE_VOLUME_ROLE };
    if (!appId || Object.entries(mine).some(([k, v]) => own[k] !== v)) {
      throw new PierError(
        "FORBIDDEN",
        `The image ${image} names the volume ${volume.name} (label ${VOLUME_LABEL}), which is not a release volume of this app.`,
        `Remove the ${VOLUME_LABEL} label from the image.`,
      );
    }
    // Writable for releases made before ADR 0023 (they run as root; HTMLPurifier caches into vendor/),
    // read-only for those that run unprivileged: a volume is on the engine's disk, with no size bound.
    return [`${volume.name}:${volume.target}${fs.readOnlyVolumes ? ":ro" : ""}`];
  }
}
