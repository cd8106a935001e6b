// Instances spread again when a node takes work again (issue 18, ADR 0030): the swarm places a lost or
// drained node's instances on the nodes left and never moves them back. When a node is activated, or comes
// back ready, the apps whose instances crowd some nodes, and then as many apps as it takes to even out the
// nodes' loads (core/rebalance.ts), are redeployed from their current image: a deploy places its new
// instances over every node that takes work (swarm-placement.ts), and its gate and switch keep the app
// serving throughout; a failure leaves it as it was. A few apps at a time (PIER_REBALANCE_AT_ONCE, 3 by
// default), so a node that just came back is not handed every app's starts at once. Between returns, a
// regular look (PIER_REBALANCE_EVERY) spreads the apps the swarm crowded itself (a failed instance started
// again on another node), each at most once a day.
import type { Logger } from "pino";
import type { App, Release } from "../core/model.js";
import type { ClusterNode } from "../core/nodes.js";
import type { Nodes, ReleaseInstances, Store } from "../core/ports.js";
import { loadPerNode, spreadPlan, takesWork } from "../core/rebalance.js";
import type { Deployer } from "./deployer.js";

export interface RebalancerDeps {
  nodes: Pick<Nodes, "listNodes">;
  engine: Pick<ReleaseInstances, "listRoutable">;
  store: Pick<Store, "listApps" | "currentRelease">;
  deployer: Pick<Deployer, "enqueue" | "isBusy">;
  /** Whether the app's instances are held on one node (an fs bucket's data there): never moved. */
  pinned: (appId: string) => Promise<boolean>;
  logger: Logger;
  /** How often the nodes are listed to see one come back (5 s). */
  pollMs?: number;
  /** How long a node that came back must stay ready before instances move to it (10 s). */
  settleMs?: number;
  /** How often the watch also looks between returns (PIER_REBALANCE_EVERY); 0 or unset: never. */
  everyMs?: number;
  /** How many apps are redeployed at once, all from one plan (PIER_REBALANCE_AT_ONCE); 1 when unset. */
  atOnce?: number;
}

/** How long an app a regular look moved is left to the next return rather than moved by a regular look again. */
const REGULAR_MOVE_RESTS_MS = 24 * 3600_000;

/** An app to move, with the release it serves (what its redeploy runs again). */
interface ToMove {
  app: App;
  release: Release;
}

export class Rebalancer {
  /** The pass under way (passes never overlap: a later one sees what the earlier moved). */
  private pass: Promise<void> = Promise.resolve();

  /** The watch's view of the nodes' returns, while it watches. */
  private back: NodesBack | null = null;
  /** The looks to come (a second look after a pass, the look at the start). */
  private readonly later: Later;
  /** Passes planned or under way (a regular look waits for none: it is skipped). */
  private passes = 0;
  /**
   * The apps a regular look moved, and when: a regular look does not move them again for a day (a move
   * that did not spread them, as when the plan and the swarm's placement disagree, would otherwise be made
   * at every look). A node's return or activation forgets them: its looks move any app.
   */
  private readonly movedRegularly = new Map<string, number>();

  constructor(private readonly deps: RebalancerDeps) {
    this.later = new Later(deps.settleMs ?? 10_000);
  }

  /**
   * The apps to redeploy now so that instances spread over the nodes that take work (core/rebalance.ts
   * `spreadPlan`), in order. Every app that serves counts as load; stopped apps, tasks, apps being deployed
   * and apps held on a node are never moved. One list of the nodes, of the apps and of the instances.
   */
  async planned(skip: ReadonlySet<string> = new Set()): Promise<ToMove[]> {
    const { store, engine, nodes, deployer, pinned } = this.deps;
    const [all, apps, instances] = await Promise.all([
      nodes.listNodes(),
      store.listApps(),
      engine.listRoutable({}),
    ]);
    const serving = new Map<string, ToMove>();
    const movable = new Set<string>();
    // Each app's release and whether it is held on a node, read side by side (a plan is made before every move).
    const read = await Promise.all(
      apps
        .filter((app) => !app.stopped && !app.task)
        .map(async (app) => {
          const [release, held] = await Promise.all([store.currentRelease(app.id), pinned(app.id)]);
          return { app, release, held };
        }),
    );
    for (const { app, release, held } of read) {
      if (!release || release.task) continue;
      serving.set(app.id, { app, release });
      if (!deployer.isBusy(app.id) && !held && !skip.has(app.id)) movable.add(app.id);
    }
    const deployments = new Map([...serving].map(([id, c]) => [id, c.release.deploymentId]));
    const plan = spreadPlan(all, instances, deployments, movable);
    if (plan.length === 0)
      this.deps.logger.info(
        { open: all.filter(takesWork).map((n) => n.name), instances: loadPerNode(instances, deployments) },
        "no app to move",
      );
    return plan.map((id) => serving.get(id) as ToMove);
  }

  /**
   * Plans which apps to move and starts moving them (`why` goes into each redeploy's cause, e.g. "node3
   * activated"); the names of the apps planned now. The moves run after any pass under way, `atOnce` apps
   * at a time, the first of a new plan each time (a deploy meanwhile may have spread the apps already, and
   * each move changes what the next should be; the moves of one plan even the nodes out together): at most
   * as many moves as this plan named, each app once; so the apps moved may differ from those named. Looked
   * at twice: once now, and once more `settleMs` after this look's moves ended (a move placed elsewhere
   * than planned, a lost node's old task still listed at the first look); no more, so an app that cannot be
   * spread is not redeployed again and again.
   */
  async rebalance(why: string): Promise<string[]> {
    this.movedRegularly.clear();
    const names = await this.look(why, "first");
    void this.pass.then(() => this.later.add(() => void this.look(why, "second")));
    return names;
  }

  /**
   * One look: the plan now, its moves started after the pass under way; the names planned. A regular look
   * leaves out the apps resting from one (`resting`) and records those it moves.
   */
  private async look(why: string, which: string, regular = false): Promise<string[]> {
    const found = await this.plannedOrNone(why, regular ? this.resting() : undefined);
    const names = found.map((c) => c.app.name);
    this.deps.logger.info({ apps: names, why, look: which }, "looked for apps to spread");
    if (found.length === 0) return [];
    this.passes++;
    this.pass = this.pass
      .then(() => this.moves(why, found.length, regular))
      .finally(() => {
        this.passes--;
      });
    return names;
  }

  /**
   * The regular look (every `everyMs`): the apps the swarm crowded since, such as a failed instance started
   * again on another node, spread as at a return; none while a pass is under way (its own second look
   * follows), and none a regular look moved in the last day.
   */
  private regularLook(why: string): void {
    if (this.passes === 0) void this.look(why, "regular", true);
  }

  /** The apps a regular look moved in the last day (those moved longer ago are forgotten here). */
  private resting(): Set<string> {
    const now = Date.now();
    for (const [id, at] of this.movedRegularly)
      if (now - at >= REGULAR_MOVE_RESTS_MS) this.movedRegularly.delete(id);
    return new Set(this.movedRegularly.keys());
  }

  /**
   * `node` was activated through Pier: spreads onto it (cause `<node> activated`). The watch is told, so it
   * does not take the node's coming back into work for a return of its own and spread a second time.
   */
  activated(node: string): Promise<string[]> {
    this.back?.handled(node);
    return this.rebalance(`${node} activated`);
  }

  /** Ends the looks to come (pier server stopping); moves under way finish. */
  stop(): void {
    this.later.stop();
  }

  /**
   * The plan, or none when the engine cannot be read now (logged): a node activated stays activated, and
   * the next return of a node, or the next activation, looks again.
   */
  private plannedOrNone(why: string, skip?: ReadonlySet<string>): Promise<ToMove[]> {
    return this.planned(skip).catch((err: Error) => {
      this.deps.logger.warn({ err: err.message, why }, "could not look for apps to spread");
      return [];
    });
  }

  /**
   * Up to `limit` moves, `atOnce` at a time: the first apps of a new plan not moved in this pass yet,
   * redeployed side by side; the next plan once they all ended.
   */
  private async moves(why: string, limit: number, regular: boolean): Promise<void> {
    const moved = new Set<string>();
    const atOnce = this.deps.atOnce ?? 1;
    while (moved.size < limit) {
      const skip = regular ? this.resting() : undefined;
      const next = (await this.plannedOrNone(why, skip))
        .filter((c) => !moved.has(c.app.id))
        .slice(0, Math.min(atOnce, limit - moved.size));
      if (next.length === 0) return;
      for (const { app } of next) {
        moved.add(app.id);
        if (regular) this.movedRegularly.set(app.id, Date.now());
      }
      await Promise.all(next.map((c) => this.move(c, why)));
    }
  }

  /** Redeploys one app from its current image; waits for that deploy. */
  private async move({ app, release }: ToMove, why: string): Promise<void> {
    const { deployer, logger } = this.deps;
    try {
      logger.info({ app: app.name, why }, "redeploying the app to spread instances over the nodes");
      const { done } = await deployer.enqueue(app, {
        commit: release.commit,
        cause: `rebalance: ${why}`,
        withoutCache: false,
        reuseCurrentImage: true,
      });
      const d = await done;
      if (d.state !== "succeeded")
        logger.warn(
          { app: app.name, state: d.state, reason: d.reason },
          "the rebalance's redeploy did not succeed: the app is as it was",
        );
    } catch (err) {
      // A newer push queued meanwhile (its deploy places the instances anew), the app deleted: nothing to do.
      logger.info({ app: app.name, err: (err as Error).message }, "no rebalance of this app");
    }
  }

  /** Waits for the moves under way (tests, shutdown). */
  settled(): Promise<void> {
    return this.pass;
  }

  /**
   * Lists the nodes every `pollMs`; a node that takes work again (it came back ready, or was activated
   * outside Pier) starts a rebalance once it stayed so for `settleMs`. A failed list (the manager's engine
   * restarting) changes nothing. Once at the start too, `settleMs` after it: a node may have come back
   * while `pier server` was stopped (one look, cause `rebalance: pier server started`). And every `everyMs`
   * if set (`regularLook`).
   */
  watch(): { stop(): void } {
    const settleMs = this.deps.settleMs ?? 10_000;
    const back = new NodesBack((names) => this.afterReturn(names), settleMs);
    this.back = back;
    this.later.add(() => void this.look("pier server started", "at the start"));
    const everyMs = this.deps.everyMs ?? 0;
    const why = `crowded nodes seen by the look every ${duration(everyMs)}`;
    const regular = everyMs > 0 ? setInterval(() => this.regularLook(why), everyMs) : null;
    const poll = new NodesPoll(this.deps.nodes, this.deps.logger, this.deps.pollMs ?? 5_000, (all) => {
      const returned = back.seen(new Set(all.filter(takesWork).map((n) => n.name)));
      if (returned.length > 0)
        this.deps.logger.info(
          { nodes: returned, settleMs },
          "nodes take work again: looking once they stay so",
        );
    });
    return {
      stop: () => {
        if (regular) clearInterval(regular);
        poll.stop();
        back.stop();
        this.back = null;
        this.stop();
      },
    };
  }

  /** Nodes that stayed open for `settleMs` after they came back: the apps crowding the others spread. */
  private async afterReturn(names: string[]): Promise<void> {
    await this.rebalance(`${names.join(", ")} ${names.length === 1 ? "takes" : "take"} work again`);
  }
}

/** "15 min", "90 s": how often, as a cause says it. */
function duration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}

/** Runs each function once `ms` after it was added, until stopped (then none added runs). */
class Later {
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly ms: number) {}

  add(run: () => void): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      run();
    }, this.ms);
    this.timers.add(t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

/**
 * Lists the nodes every `pollMs`, one list at a time, and hands each answer on. A list that never answers
 * (the manager's engine stuck) would stop the watch for good: after six polls' time it is given up (a
 * warning says so) and the next one starts; its late answer is ignored. A failed list is skipped.
 */
class NodesPoll {
  private listing: { since: number; id: number } | null = null;
  private lists = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly nodes: Pick<Nodes, "listNodes">,
    private readonly logger: Logger,
    private readonly pollMs: number,
    private readonly listed: (all: ClusterNode[]) => void,
  ) {
    this.timer = setInterval(() => this.poll(), pollMs);
  }

  private poll(): void {
    const late = this.listing && Date.now() - this.listing.since;
    if (late !== null && late < 6 * this.pollMs) return;
    if (late !== null)
      this.logger.warn({ afterMs: late }, "the swarm's nodes were not listed in time: listing them again");
    const mine = { since: Date.now(), id: ++this.lists };
    this.listing = mine;
    void this.nodes
      .listNodes()
      .then(
        (all) => {
          if (this.listing?.id === mine.id) this.listed(all);
        },
        () => undefined,
      )
      .finally(() => {
        if (this.listing?.id === mine.id) this.listing = null;
      });
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * The nodes that take work, list after list: those that came back (open now, not at the list before) are
 * handed on once `settleMs` passed with no other return, if they are open still.
 */
class NodesBack {
  private open: Set<string> | null = null;
  private back = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly settled: (names: string[]) => Promise<void>,
    private readonly settleMs: number,
  ) {}

  /** The nodes open now; those that came back since the list before. */
  seen(now: Set<string>): string[] {
    const returned = this.open ? [...now].filter((n) => !this.open?.has(n)) : [];
    this.open = now;
    if (returned.length === 0) return returned;
    for (const n of returned) this.back.add(n);
    this.stop();
    this.timer = setTimeout(() => {
      this.timer = null;
      const names = [...this.back].filter((n) => this.open?.has(n));
      this.back = new Set();
      if (names.length > 0) void this.settled(names);
    }, this.settleMs);
    return returned;
  }

  /** A node whose return is handled elsewhere (activated through Pier): open from now on, not a return. */
  handled(node: string): void {
    this.open?.add(node);
    this.back.delete(node);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
