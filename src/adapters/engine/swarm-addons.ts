// Add-on servers on a swarm (ADR 0030): each add-on is a standalone container with its volume on one node's
// dockerd, pinned there (the swarm never moves it: it is no service), and joined to its linked apps'
// attachable overlays, which reach it from every node. Pier reaches a node's dockerd through
// PIER_SWARM_NODE_ENGINES; the manager's own always. Backups and restores exec in the container, so they run
// on its node.
import type Docker from "dockerode";
import { swarmAddonNode } from "../../core/addon-nodes.js";
import { addonHost } from "../../core/addons.js";
import { PierError } from "../../core/errors.js";
import type { AddonServerInfo, AddonServerSpec, AddonServers } from "../../core/ports.js";
import { DockerAddonServers } from "./docker-addons.js";
import { isNotFound } from "./docker-common.js";

export interface SwarmAddonServersOptions {
  /** The manager's engine (where Pier's images are built). */
  manager: Docker;
  /** The manager's node name. */
  managerName: string;
  /** The engines Pier reaches, by node name (the manager's among them). */
  engines: ReadonlyMap<string, Docker>;
  /** The swarm's node names now. */
  nodeNames: () => Promise<string[]>;
  /** Which Pier installation owns an add-on (LABEL.addonScope). */
  scope: string;
}

export class SwarmAddonServers implements AddonServers {
  private readonly servers = new Map<string, DockerAddonServers>();
  /** Add-on id -> its node, once seen. */
  private readonly placed = new Map<string, string>();

  constructor(private readonly opts: SwarmAddonServersOptions) {
    for (const [name, docker] of opts.engines)
      this.servers.set(name, new DockerAddonServers(docker, opts.scope));
  }

  private get manager(): DockerAddonServers {
    const m = this.servers.get(this.opts.managerName);
    if (m) return m;
    const made = new DockerAddonServers(this.opts.manager, this.opts.scope);
    this.servers.set(this.opts.managerName, made);
    return made;
  }

  /** The node asked for (it must be in the swarm and reachable), or the manager. */
  async addonNode(requested: string | null): Promise<string> {
    const node = swarmAddonNode(requested, await this.opts.nodeNames(), this.opts.managerName);
    if (node !== this.opts.managerName && !this.servers.has(node))
      throw new PierError(
        "INVALID_INPUT",
        `--node ${node}: Pier cannot reach that node's dockerd, so it cannot run an add-on there.`,
        `Add ${node}=unix:///path/to/docker.sock (or tcp://host:port on a trusted network) to PIER_SWARM_NODE_ENGINES and restart pier server, or choose another node.`,
      );
    return node;
  }

  /** The add-on servers of a node, or ENGINE_ERROR saying Pier cannot reach it. */
  private on(node: string): DockerAddonServers {
    if (node === this.opts.managerName) return this.manager;
    const s = this.servers.get(node);
    if (s) return s;
    throw new PierError(
      "ENGINE_ERROR",
      `The add-on's node ${node} is not in PIER_SWARM_NODE_ENGINES: Pier cannot reach its dockerd.`,
      `Add ${node}=unix:///path/to/docker.sock (or tcp://host:port) to PIER_SWARM_NODE_ENGINES.`,
    );
  }

  /**
   * The node whose engine has the add-on's server: the one it was seen on, else asked of every engine.
   * Found nowhere while a node does not answer: ENGINE_ERROR naming it (the add-on may be there; it is
   * never made again elsewhere). Found nowhere: null.
   */
  private async where(id: string): Promise<DockerAddonServers | null> {
    const known = this.placed.get(id);
    if (known) return this.on(known);
    const down: string[] = [];
    const found = await Promise.all(
      [...this.servers.entries()].map(async ([node, s]) => {
        try {
          return (await s.addonServer(id)) ? node : null;
        } catch (e) {
          down.push(`${node} (${(e as Error).message})`);
          return null;
        }
      }),
    );
    const node = found.find((n) => n !== null);
    if (node) {
      this.placed.set(id, node);
      return this.on(node);
    }
    if (down.length > 0)
      throw new PierError(
        "ENGINE_ERROR",
        `The add-on server ${addonHost(id)} is on no node that answers; these do not: ${down.join(", ")}.`,
        "Bring the node's dockerd back: an add-on stays on its node with its data, Pier never moves it.",
      );
    return null;
  }

  /** Its server or, unknown anywhere, the manager's (whose verbs answer an unknown id as the port says). */
  private async serversOf(id: string): Promise<DockerAddonServers> {
    return (await this.where(id)) ?? this.manager;
  }

  async runAddonServer(spec: AddonServerSpec): Promise<void> {
    const node = spec.node ?? this.opts.managerName;
    const servers = this.on(node);
    const docker = this.opts.engines.get(node) ?? this.opts.manager;
    if (docker !== this.opts.manager) await this.copyImage(spec.image, docker, node);
    await servers.runAddonServer({ ...spec, node });
    this.placed.set(spec.id, node);
  }

  /**
   * The add-on's image onto its node, from the manager (`docker save | docker load`): add-on images are
   * built by the set-up on Pier's machine, never pushed to a registry.
   */
  private async copyImage(image: string, docker: Docker, node: string): Promise<void> {
    try {
      await docker.getImage(image).inspect();
      return;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    try {
      await this.opts.manager.getImage(image).inspect();
    } catch (e) {
      if (!isNotFound(e)) throw e;
      throw new PierError(
        "ENGINE_ERROR",
        `The image ${image} is missing on the swarm's manager (and on ${node}).`,
        "Run scripts/setup.sh on the manager (it builds the add-on images from Debian packages).",
      );
    }
    const tar = await this.opts.manager.getImage(image).get();
    const out = await docker.loadImage(tar, { quiet: true });
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(out, (err: Error | null) => (err ? reject(err) : resolve())),
    );
  }

  async addonServer(id: string): Promise<AddonServerInfo | null> {
    const s = await this.where(id);
    return s ? s.addonServer(id) : null;
  }

  async restartAddonServer(id: string, graceMs: number): Promise<void> {
    await (await this.serversOf(id)).restartAddonServer(id, graceMs);
  }

  async removeAddonServer(id: string): Promise<void> {
    const s = await this.where(id);
    if (s) await s.removeAddonServer(id);
    this.placed.delete(id);
  }

  async connectAddonServer(id: string, network: string): Promise<void> {
    await (await this.serversOf(id)).connectAddonServer(id, network);
  }

  async disconnectAddonServer(id: string, network: string): Promise<void> {
    const s = await this.where(id);
    if (s) await s.disconnectAddonServer(id, network);
  }

  async execInAddonServer(
    id: string,
    argv: string[],
    stdout?: NodeJS.WritableStream,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return (await this.serversOf(id)).execInAddonServer(id, argv, stdout);
  }

  async copyToAddonServer(id: string, file: string, path: string): Promise<void> {
    await (await this.serversOf(id)).copyToAddonServer(id, file, path);
  }

  async addonServerLog(id: string, tail: number): Promise<string[]> {
    return (await this.serversOf(id)).addonServerLog(id, tail);
  }
}
