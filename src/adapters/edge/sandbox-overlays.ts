// The app overlays the edge's sandbox is on (ADR 0030): each app's joined before its instances are routed
// (with an address there), all of them walked while the edge serves once the sandbox is made again, left
// before an overlay is removed; and, after the sandbox is made again, its tables watched and a stale one
// rejoined (overlay-sync.ts).
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL, labelFilter } from "../../core/labels.js";
import { instancesOnOverlays, managerNodeId, readTable, syncOverlays } from "./overlay-sync.js";

type Inspected = Awaited<ReturnType<Docker.Container["inspect"]>>;

export interface SandboxOverlaysOptions {
  /** The manager's dockerd. */
  docker: Docker;
  /** The sandbox container's name. */
  name: string;
  /** The labels of what Pier's scope owns. */
  own: Record<string, string>;
  /** The sandbox as the engine shows it now; null when there is none. */
  inspect: () => Promise<Inspected | null>;
  /** Whether the sandbox was prepared: before, a join is left to its walk of every overlay. */
  prepared: () => boolean;
  /** How many network namespaces the sandbox has had: the tables' watch starts over when it goes up. */
  generation: () => number;
  logger?: { warn: (o: object, m?: string) => void };
}

const networkIds = (c: Inspected) =>
  new Set(Object.values(c.NetworkSettings.Networks ?? {}).map((n) => n.NetworkID));

/**
 * The networks the sandbox is on with an address there: joined for real. A connect made while the swarm's
 * manager was not ready yet (right after its dockerd started) can leave an attachment with no address,
 * which reaches nothing and which the engine keeps (seen on the lab: the edge then never served that app).
 */
export const addressedIds = (
  networks: Record<string, { NetworkID: string; IPAddress?: string }>,
): Set<string> =>
  new Set(
    Object.values(networks)
      .filter((n) => (n.IPAddress ?? "") !== "")
      .map((n) => n.NetworkID),
  );

/**
 * Joins each network in turn; one that fails is reported and the others are still joined: one app's
 * network the engine cannot attach (it timed out once in 18 sandbox restarts on the lab) must not keep
 * the edge, and so every other app, from serving.
 */
export async function joinEach(
  networks: readonly string[],
  join: (network: string) => Promise<void>,
): Promise<{ network: string; message: string }[]> {
  const failed: { network: string; message: string }[] = [];
  for (const network of networks)
    await join(network).catch((e: Error) => failed.push({ network, message: e.message }));
  return failed;
}

export class SandboxOverlays {
  /** A join of the last walk of the overlays failed: the next prepare() walks them again. */
  private failedJoin = false;
  /** The walk of the overlays under way (joins run in the background once the pool is closed). */
  private walking: Promise<void> | null = null;
  /** The watch of the overlays' tables after the sandbox was made (overlay-sync.ts), while it runs. */
  private syncing: Promise<void> | null = null;

  constructor(private readonly opts: SandboxOverlaysOptions) {}

  /** Whether an overlay is left to join: a join of the last walk failed. */
  get unjoined(): boolean {
    return this.failedJoin;
  }

  /** Watches the overlays' tables on the manager, and rejoins those the gossip left stale (overlay-sync.ts). */
  syncInBackground(): void {
    if (this.syncing) return;
    let self: string | null = null; // read once it answers
    this.syncing = syncOverlays({
      instances: async () => {
        self ??= await managerNodeId(this.opts.docker);
        const networks = (await this.opts.inspect())?.NetworkSettings.Networks ?? {};
        return instancesOnOverlays(this.opts.docker, this.opts.own, networks, self);
      },
      table: (network) => readTable(this.opts.docker, network),
      rejoin: (network) => this.rejoin(network),
      generation: this.opts.generation,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms).unref()),
      now: Date.now,
      ...(this.opts.logger ? { logger: this.opts.logger } : {}),
    })
      .then(() => undefined)
      .catch((e: Error) => this.opts.logger?.warn({ err: e.message }, "edge: watching the overlays failed"))
      .finally(() => {
        this.syncing = null;
      });
  }

  /** Leaves the overlay and joins it again (overlay-sync.ts says why). */
  private async rejoin(network: string): Promise<void> {
    await this.opts.docker
      .getNetwork(network)
      .disconnect({ Container: this.opts.name, Force: true })
      .catch(() => undefined);
    await this.join(network);
  }

  /**
   * Overlays joined while the edge serves: each app is served once its own is (a join costs the engine
   * 0.3-1 s, one at a time, so hundreds of apps would keep every app, and pier server's start, waiting).
   */
  walkInBackground(): void {
    if (this.walking) {
      this.failedJoin = true; // walked again when this walk ends
      return;
    }
    this.walking = this.joinAll()
      .catch((e: Error) => {
        this.failedJoin = true;
        this.opts.logger?.warn({ err: e.message }, "edge: could not list the apps' networks to join");
      })
      .finally(() => {
        this.walking = null;
        if (this.failedJoin && this.opts.prepared()) this.walkAgainLater();
      });
  }

  /** A failed walk is tried again after a pause (not at once: the engine may be failing). */
  private walkAgainLater(): void {
    setTimeout(() => {
      if (this.failedJoin && this.opts.prepared() && !this.walking) this.walkInBackground();
    }, 5000).unref();
  }

  /**
   * The scope's apps' overlays the sandbox is not on yet, joined (after a restart of Pier or of the
   * sandbox). Not add-ons' networks: the edge routes to apps only.
   */
  async joinAll(): Promise<void> {
    this.failedJoin = false;
    const sandbox = await this.opts.inspect();
    if (!sandbox) return;
    const label = [...labelFilter(this.opts.own), LABEL.app];
    const nets = await this.opts.docker.listNetworks({ filters: { label, driver: ["overlay"] } });
    const on = addressedIds(sandbox.NetworkSettings.Networks ?? {});
    const missing = nets.filter((n) => !on.has(n.Id)).map((n) => n.Name);
    const failed = await joinEach(missing, (network) => this.join(network));
    for (const f of failed)
      this.opts.logger?.warn(
        { network: f.network, err: f.message },
        "edge: joining an app's network failed; its app is not served until a later walk joins it",
      );
    if (failed.length > 0) this.failedJoin = true;
  }

  private async joined(): Promise<Set<string>> {
    const c = await this.opts.inspect();
    return c ? networkIds(c) : new Set();
  }

  /**
   * The sandbox joins an app's overlay (before the app's instances are routed to), with an address there:
   * an attachment left without one is dropped and made again; one the engine makes without one fails the
   * join (a later walk tries again).
   */
  async join(network: string): Promise<void> {
    if (!this.opts.prepared()) return; // prepare() joins every overlay
    await this.attach(network);
    if (await this.addressedOn(network)) return;
    await this.opts.docker
      .getNetwork(network)
      .disconnect({ Container: this.opts.name, Force: true })
      .catch(() => undefined);
    await this.attach(network);
    if (!(await this.addressedOn(network)))
      throw new PierError("EDGE_ERROR", `The edge joined the network ${network} but got no address there.`);
  }

  /** Connects the sandbox to the network; attached already (a second call, a walk meanwhile) is fine. */
  private async attach(network: string): Promise<void> {
    try {
      await this.opts.docker.getNetwork(network).connect({ Container: this.opts.name });
    } catch (e) {
      const message = (e as Error).message;
      if (!/already exists|already attached/i.test(message))
        throw new PierError("EDGE_ERROR", `The edge could not join the network ${network}: ${message}`);
    }
  }

  /** Whether the sandbox has an address on the network (by name or id): `addressedIds`'s rule. */
  private async addressedOn(network: string): Promise<boolean> {
    const networks = (await this.opts.inspect())?.NetworkSettings.Networks ?? {};
    const id = networks[network]?.NetworkID ?? network;
    return addressedIds(networks).has(id);
  }

  /** The sandbox leaves the scope's overlays with these labels (except `keep`), so they can be removed. */
  async leave(labels: Record<string, string>, keep?: string): Promise<void> {
    const filters = labelFilter(this.opts.own, labels);
    const nets = await this.opts.docker.listNetworks({ filters: { label: filters } });
    const on = await this.joined();
    for (const n of nets) {
      if (n.Name === keep || !on.has(n.Id)) continue;
      await this.opts.docker
        .getNetwork(n.Id)
        .disconnect({ Container: this.opts.name, Force: true })
        .catch((e: Error) =>
          this.opts.logger?.warn({ network: n.Name, err: e.message }, "edge: leave failed"),
        );
    }
  }
}
