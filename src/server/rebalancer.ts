// Instances spread again when a node takes work again (issue 18, ADR 0030): the swarm places a lost or
// drained node's instances on the nodes left and never moves them back. When a node is activated, or comes
// back ready, each app whose instances crowd some nodes (core/rebalance.ts) is redeployed from its current
// image: the deploy places its new instances over every node that takes work (swarm-placement.ts), and its
// gate and switch keep the app serving throughout; a failure leaves it as it was. One app at a time, so a
// node that just came back is not handed every app's starts at once.
import type { Logger } from "pino";
import { LABEL } from "../core/labels.js";
import type { App, Release } from "../core/model.js";
import type { Nodes, ReleaseInstances, Store } from "../core/ports.js";
import { crowdedApps, takesWork } from "../core/rebalance.js";
import type { Deployer } from "./deployer.js";

export interface RebalancerDeps {
  nodes: Pick<Nodes, "listNodes">;
  engine: Pick<ReleaseInstances, "listRoutable">;
  store: Pick<Store, "listApps" | "findApp" | "currentRelease">;
  deployer: Pick<Deployer, "enqueue" | "isBusy">;
  /** Whether the app's instances are held on one node (an fs bucket's data there): never moved. */
  pinned: (appId: string) => Promise<boolean>;
  logger: Logger;
  /** How often the nodes are listed to see one come back (5 s). */
  pollMs?: number;
  /** How long a node that came back must stay ready before instances move to it (10 s). */
  settleMs?: number;
}

/** An app that crowds some nodes, with the release it serves (what its redeploy runs again). */
interface Crowded {
  app: App;
  release: Release;
}

export class Rebalancer {
  /** The pass under way (passes never overlap: a later one sees what the earlier moved). */
  private pass: Promise<void> = Promise.resolve();

  constructor(private readonly deps: RebalancerDeps) {}

  /**
   * The apps (the one app `only`, or every app) whose serving instances crowd some nodes now: not stopped,
   * not a task, not pinned, not deploying. One list of the nodes and one of the instances (of the one app
   * when there is one).
   */
  async crowded(only?: string): Promise<Crowded[]> {
    const { store, engine, nodes, deployer, pinned } = this.deps;
    const [all, listed, instances] = await Promise.all([
      nodes.listNodes(),
      only ? store.findApp(only).then((a) => (a ? [a] : [])) : store.listApps(),
      engine.listRoutable(only ? { [LABEL.app]: only } : {}),
    ]);
    const serving = new Map<string, Crowded>();
    for (const app of listed) {
      if (app.stopped || app.task || deployer.isBusy(app.id)) continue;
      const release = await store.currentRelease(app.id);
      if (release && !release.task) serving.set(app.id, { app, release });
    }
    const ids = crowdedApps(
      all,
      instances,
      new Map([...serving].map(([id, c]) => [id, c.release.deploymentId])),
    );
    const out: Crowded[] = [];
    for (const id of ids) if (!(await pinned(id))) out.push(serving.get(id) as Crowded);
    return out;
  }

  /**
   * Finds the apps that crowd some nodes and starts moving them (`why` goes into each redeploy's cause, e.g.
   * "node3 activated"); their names. The moves run after any pass under way, one app at a time, each
   * checked again just before (a deploy meanwhile may have spread it already).
   */
  async rebalance(why: string): Promise<string[]> {
    // A node activated stays activated when the engine cannot be read now: the next return of a node, or
    // the next activation, looks again.
    const found = await this.crowded().catch((err: Error) => {
      this.deps.logger.warn({ err: err.message, why }, "could not look for apps to spread");
      return [];
    });
    if (found.length === 0) return [];
    const previous = this.pass;
    this.pass = (async () => {
      await previous;
      for (const c of found) await this.move(c.app, why);
    })();
    return found.map((c) => c.app.name);
  }

  /** Redeploys one app from its current image if it still crowds some nodes; waits for that deploy. */
  private async move(app: App, why: string): Promise<void> {
    const { deployer, logger } = this.deps;
    try {
      const [still] = await this.crowded(app.id);
      if (!still) return;
      logger.info({ app: app.name, why }, "instances crowd some nodes: redeploying the app to spread them");
      const { done } = await deployer.enqueue(still.app, {
        commit: still.release.commit,
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
   * while `pier server` was stopped (one look, cause `rebalance: pier server started`).
   */
  watch(): { stop(): void } {
    const settleMs = this.deps.settleMs ?? 10_000;
    const later = new Set<NodeJS.Timeout>();
    let stopped = false;
    const schedule = (run: () => void) => {
      if (stopped) return;
      const t = setTimeout(() => {
        later.delete(t);
        run();
      }, settleMs);
      later.add(t);
    };
    const back = new NodesBack((names) => this.afterReturn(names, schedule), settleMs);
    schedule(() => void this.lookAtStart());
    let listing = false;
    const poll = setInterval(() => {
      if (listing) return;
      listing = true;
      void this.deps.nodes
        .listNodes()
        .then(
          (all) => back.seen(new Set(all.filter(takesWork).map((n) => n.name))),
          () => undefined,
        )
        .finally(() => {
          listing = false;
        });
    }, this.deps.pollMs ?? 5_000);
    return {
      stop: () => {
        stopped = true;
        clearInterval(poll);
        back.stop();
        for (const t of later) clearTimeout(t);
        later.clear();
      },
    };
  }

  private async lookAtStart(): Promise<void> {
    const why = "pier server started";
    const apps = await this.rebalance(why);
    if (apps.length > 0) this.deps.logger.info({ apps, why }, "spreading apps that crowd some nodes");
  }

  /**
   * Nodes that stayed open for `settleMs` after they came back: the apps crowding the others spread. Looked
   * at twice: once now, and once more `settleMs` after this look's moves ended. The swarm may still list a
   * lost node's old task as the instance's for a while after the node is back (its agent reports it ended
   * later), and a move's deploy may meet a node not yet taking work: the second look sees what the first
   * could not. Two looks per return, whatever happens: an app that cannot be spread is not redeployed again
   * and again.
   */
  private async afterReturn(names: string[], schedule: (run: () => void) => void): Promise<void> {
    const why = `${names.join(", ")} ${names.length === 1 ? "takes" : "take"} work again`;
    const look = async (which: string) => {
      const apps = await this.rebalance(why);
      this.deps.logger.info({ apps, why, look: which }, "looked for apps to spread onto a node back");
    };
    await look("first");
    await this.pass;
    schedule(() => void look("second"));
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

  seen(now: Set<string>): void {
    const returned = this.open ? [...now].filter((n) => !this.open?.has(n)) : [];
    this.open = now;
    if (returned.length === 0) return;
    for (const n of returned) this.back.add(n);
    this.stop();
    this.timer = setTimeout(() => {
      this.timer = null;
      const names = [...this.back].filter((n) => this.open?.has(n));
      this.back = new Set();
      if (names.length > 0) void this.settled(names);
    }, this.settleMs);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
