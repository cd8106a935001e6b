// Instance slots and build slots (the InstanceSlots port, ADR 0021 and 0025) over an engine's network
// holders: which holder an instance starts in, which are made ahead, which go, and which instances rejoin
// a restarted one. The choice is the same on every engine that holds a network namespace for its
// instances (dockerd's sandbox containers; the unit tests' fake engine), so it is written once here and
// each engine gives only its holders (SlotHolders).
import { randomUUID } from "node:crypto";
import { LABEL, SANDBOX_FOR } from "../../core/labels.js";
import type { BuildSlot, InstanceInfo, RouteTarget, SlotShape } from "../../core/ports.js";

/** A holder of a network namespace on an app's network, with the app's ports published. */
export interface SandboxSpec {
  name: string;
  labels: Record<string, string>;
  network: { name: string; ipv6Subnet: string | null };
  httpPort: number | null;
  tcpPort: number | null;
}

/** A holder as the engine lists it; its labels carry its app, purpose, network and ports. */
export interface SandboxInfo {
  id: string;
  labels: Record<string, string>;
  running: boolean;
  http: RouteTarget | null;
  tcp: RouteTarget | null;
  networkAddress: string | null;
}

/** What an engine gives the keeper: its holders, and the instances that run in them. */
export interface SlotHolders {
  createSandbox(spec: SandboxSpec): Promise<SandboxInfo>;
  /** The holders with these labels (one engine call). */
  listSandboxes(labels: Record<string, string>): Promise<SandboxInfo[]>;
  /** Gone already: nothing to do. */
  removeSandbox(id: string): Promise<void>;
  /** Whether it runs and since when; null when it is gone. */
  sandboxState(id: string): Promise<{ running: boolean; startedAt: string | null } | null>;
  listInstances(labels: Record<string, string>): Promise<InstanceInfo[]>;
  startInstance(id: string): Promise<void>;
  restartInstance(id: string, graceMs: number): Promise<void>;
}

/** Runs `work` after the one under way for `key` (if any), and is the one under way until it ends. */
class Chains<T> {
  private readonly under = new Map<string, Promise<T>>();

  run(key: string, fallback: T, work: () => Promise<T>): Promise<T> {
    const run = (this.under.get(key) ?? Promise.resolve(fallback)).catch(() => fallback).then(work);
    this.under.set(key, run);
    const forget = () => {
      if (this.under.get(key) === run) this.under.delete(key);
    };
    run.then(forget, forget);
    return run;
  }

  /** Waits for the one under way for `key`, if any (its failure is its caller's). */
  async settled(key: string): Promise<void> {
    await (this.under.get(key) ?? Promise.resolve()).catch(() => undefined);
  }
}

const portText = (port: number | null) => (port === null ? "" : String(port));

export class SlotKeeper {
  constructor(private readonly holders: SlotHolders) {}

  /** Preparations under way, per app: a start waits for them instead of making its own. */
  private readonly preparing = new Chains<SandboxInfo[]>();

  /**
   * Holders handed to a start that has not finished yet: busy, though no instance runs in them yet. A
   * preparation running meanwhile (the previous deploy's, after its release went live) must neither hand
   * them out again nor remove them as surplus (the start would fail: "cannot join network of a non running
   * container").
   */
  private readonly claimed = new Set<string>();

  /** Build holders under way, per app. */
  private readonly building = new Chains<string>();

  /** Keeps `count` free holders of this shape ready for the app; free ones of other shapes and surplus go. */
  async prepare(appId: string, shape: SlotShape, count: number): Promise<void> {
    await this.preparing.run(appId, [], () => this.readyNow(appId, shape, count, true));
  }

  /**
   * Runs `start` with a free holder of this shape (made when none is free), claimed until `start` ends: by
   * then an instance runs in it (busy), or it is free again.
   */
  async withSlot<T>(appId: string, shape: SlotShape, start: (holder: SandboxInfo) => Promise<T>): Promise<T> {
    const [holder] = await this.preparing.run(appId, [], async () => {
      const free = await this.readyNow(appId, shape, 1, false);
      for (const s of free) this.claimed.add(s.id);
      return free;
    });
    if (!holder) throw new Error(`no slot was made for the app ${appId}`);
    try {
      return await start(holder);
    } finally {
      this.claimed.delete(holder.id);
    }
  }

  /**
   * Free holders for `count` new instances of the app with these ports and network, made when missing. A
   * holder is free when no running instance is in it and no start holds it. Those of other settings go.
   */
  private async readyNow(
    appId: string,
    shape: SlotShape,
    count: number,
    pruneSurplus: boolean,
  ): Promise<SandboxInfo[]> {
    const { holders } = this;
    const [all, instances] = await Promise.all([
      holders.listSandboxes({ [LABEL.app]: appId, [LABEL.sandboxFor]: SANDBOX_FOR.instances }),
      holders.listInstances({ [LABEL.app]: appId }),
    ]);
    const busy = new Set([
      ...instances.filter((i) => i.running || i.state === "restarting").map((i) => i.labels[LABEL.sandbox]),
      ...this.claimed,
    ]);
    const fits = (s: SandboxInfo) =>
      s.labels[LABEL.network] === shape.network.name &&
      s.labels[LABEL.httpPort] === portText(shape.httpPort) &&
      s.labels[LABEL.tcpPort] === portText(shape.tcpPort);
    // Holders of other settings, with no instance running in them, are not needed any more.
    await Promise.all(all.filter((s) => !fits(s) && !busy.has(s.id)).map((s) => holders.removeSandbox(s.id)));
    const ready = all.filter((s) => fits(s) && s.running && !busy.has(s.id));
    // After a scale-down, the holders of instance slots that are gone.
    if (pruneSurplus) await Promise.all(ready.slice(count).map((s) => holders.removeSandbox(s.id)));
    const free = ready.slice(0, count);
    const made = await Promise.all(
      Array.from({ length: Math.max(0, count - free.length) }, () =>
        holders.createSandbox({
          name: `pier-sandbox-${appId}-${randomUUID().slice(0, 8)}`,
          labels: { [LABEL.app]: appId, [LABEL.sandboxFor]: SANDBOX_FOR.instances },
          network: shape.network,
          httpPort: shape.httpPort,
          tcpPort: shape.tcpPort,
        }),
      ),
    );
    return [...free, ...made];
  }

  /**
   * The holder an app's build containers join, made once per network: one running on `slot.network` is
   * kept, others go. One build runs at a time per app. Its id.
   */
  buildHolder(slot: BuildSlot): Promise<string> {
    return this.building.run(slot.appId, "", async () => {
      const { holders } = this;
      const all = await holders.listSandboxes({
        [LABEL.app]: slot.appId,
        [LABEL.sandboxFor]: SANDBOX_FOR.build,
      });
      const ready = all.find((s) => s.running && s.labels[LABEL.network] === slot.network);
      await Promise.all(all.filter((s) => s !== ready).map((s) => holders.removeSandbox(s.id)));
      if (ready) return ready.id;
      const made = await holders.createSandbox({
        name: `pier-build-sandbox-${slot.appId}-${randomUUID().slice(0, 8)}`,
        labels: { [LABEL.app]: slot.appId, [LABEL.sandboxFor]: SANDBOX_FOR.build },
        network: { name: slot.network, ipv6Subnet: null },
        httpPort: null,
        tcpPort: null,
      });
      return made.id;
    });
  }

  /**
   * Holders started again: the instances of the serving deployment in them that stopped, or that started
   * before their holder (they joined its earlier network namespace and lost their network), start again.
   */
  async rejoin(
    serving: ReadonlyMap<string, string>,
    opts: { graceMs: number; slot?: string },
  ): Promise<Map<string, number>> {
    const listed = opts.slot
      ? [opts.slot]
      : (await this.holders.listSandboxes({ [LABEL.sandboxFor]: SANDBOX_FOR.instances }))
          .filter((s) => s.running && serving.has(s.labels[LABEL.app] ?? ""))
          .map((s) => s.id);
    const counts = new Map<string, number>();
    for (const id of listed) {
      const one = await this.rejoinOne(serving, id, opts.graceMs);
      if (one) counts.set(one.appId, (counts.get(one.appId) ?? 0) + one.n);
    }
    return counts;
  }

  private async rejoinOne(
    serving: ReadonlyMap<string, string>,
    id: string,
    graceMs: number,
  ): Promise<{ appId: string; n: number } | null> {
    const { holders } = this;
    const state = await holders.sandboxState(id);
    if (!state?.running || !state.startedAt) return null;
    const since = state.startedAt;
    const mine = (await holders.listInstances({ [LABEL.sandbox]: id })).filter(
      (i) => serving.get(i.labels[LABEL.app] ?? "") === i.labels[LABEL.deployment],
    );
    const appId = mine[0]?.labels[LABEL.app];
    if (!appId) return null;
    const stale = mine.filter((i) => !i.running || (i.startedAt !== null && i.startedAt < since));
    await Promise.all(
      stale.map((i) => (i.running ? holders.restartInstance(i.id, graceMs) : holders.startInstance(i.id))),
    );
    return { appId, n: stale.length };
  }

  /** Removes every holder of the app, once the preparations under way for it have ended. */
  async removeAll(appId: string): Promise<void> {
    await this.preparing.settled(appId);
    await this.building.settled(appId);
    const all = await this.holders.listSandboxes({ [LABEL.app]: appId });
    await Promise.all(all.map((s) => this.holders.removeSandbox(s.id)));
  }

  /** Removes the holders of apps not in `known`. */
  async removeStrays(known: ReadonlySet<string>): Promise<void> {
    const all = await this.holders.listSandboxes({});
    await Promise.all(
      all.filter((s) => !known.has(s.labels[LABEL.app] ?? "")).map((s) => this.holders.removeSandbox(s.id)),
    );
  }
}
