// Instances spread again when a node takes work again (src/server/rebalancer.ts, ADR 0030), over the fake
// nodes, the fake engine and the in-memory store: which apps move (crowded, serving, not pinned, not busy),
// a few at a time (one unless told), each batch checked again before its redeploys, and a node back after a loss seen by the watch.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import type { App, Deployment } from "../../../src/core/model.js";
import type { DeployRequest } from "../../../src/server/deploy/context.js";
import { Rebalancer } from "../../../src/server/rebalancer.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { FakeNodes } from "../../support/fake-nodes.js";
import { MemoryStore } from "../../support/memory-store.js";
import { servingApp } from "../../support/serving-app.js";

/** The deployer as the rebalancer uses it: each enqueue recorded; its deploy ends when the test says. */
class Deploys {
  readonly asked: { app: string; req: DeployRequest }[] = [];
  readonly busy = new Set<string>();
  private ends: (() => void)[] = [];
  hold = false;
  /** What a deploy does to the instances (by default nothing: they stay where they are). */
  onDeploy: (app: App) => void = () => undefined;

  async enqueue(app: App, req: DeployRequest) {
    this.asked.push({ app: app.name, req });
    this.onDeploy(app);
    this.busy.add(app.id);
    const deployment = { id: `dep-${this.asked.length}`, appId: app.id, state: "succeeded" } as Deployment;
    const done = new Promise<Deployment>((resolve) => {
      const end = () => {
        this.busy.delete(app.id);
        resolve(deployment);
      };
      if (this.hold) this.ends.push(end);
      else end();
    });
    return { deployment, done };
  }
  isBusy(appId: string) {
    return this.busy.has(appId);
  }
  release() {
    for (const end of this.ends.splice(0)) end();
  }
}

async function setUp(more: { everyMs?: number; atOnce?: number } = {}) {
  const store = new MemoryStore();
  const engine = new FakeEngine();
  const nodes = new FakeNodes();
  const deploys = new Deploys();
  const pinnedApps = new Set<string>();
  const rebalancer = new Rebalancer({
    nodes,
    engine,
    store,
    deployer: deploys,
    pinned: async (id) => pinnedApps.has(id),
    logger: pino({ level: "silent" }),
    pollMs: 10,
    settleMs: 40,
    ...more,
  });
  return { store, engine, nodes, deploys, pinnedApps, rebalancer };
}

const names = (d: Deploys) => d.asked.map((a) => a.app);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The node, made down (it comes back when the test sets it ready). */
function down(nodes: FakeNodes, name: string) {
  const node = nodes.nodes.find((n) => n.name === name);
  assert.ok(node, name);
  node.state = "down";
  return node;
}

/** Runs `body` while the rebalancer watches the nodes. */
async function watching(rebalancer: Rebalancer, body: () => Promise<void>) {
  const watch = rebalancer.watch();
  try {
    await body();
  } finally {
    watch.stop();
  }
}

/** Waits (up to 2 s) for the first redeploy asked (or the `n`th). */
async function firstDeploy(deploys: Deploys, n = 1) {
  const deadline = Date.now() + 2000;
  while (deploys.asked.length < n && Date.now() < deadline) await sleep(10);
}

describe("the rebalancer", () => {
  test("moves the apps that crowd some nodes, from their current image, and says which", async () => {
    const { store, engine, deploys, pinnedApps, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    await servingApp(store, engine, "even", ["node1", "node2", "node3"]);
    pinnedApps.add(await servingApp(store, engine, "bucket", ["node2", "node2", "node2"]));
    await servingApp(store, engine, "stopped", ["node1", "node1"], { stopped: true });
    await servingApp(store, engine, "job", ["node1", "node1"], { task: "node job.js" });
    const busy = await servingApp(store, engine, "busy", ["node1", "node1"]);
    deploys.busy.add(busy);
    assert.deepEqual(await rebalancer.rebalance("node3 activated"), ["web"]);
    await rebalancer.settled();
    assert.deepEqual(names(deploys), ["web"]);
    assert.deepEqual(deploys.asked[0]?.req, {
      commit: "c1",
      cause: "rebalance: node3 activated",
      withoutCache: false,
      reuseCurrentImage: true,
    });
  });

  test("one app after the other, each looked at again before its redeploy", async () => {
    const { store, engine, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "a", ["node1", "node1", "node1"]);
    await servingApp(store, engine, "b", ["node2", "node2", "node1"]);
    deploys.hold = true;
    assert.deepEqual(await rebalancer.rebalance("node3 activated"), ["a", "b"]);
    await sleep(20);
    assert.deepEqual(names(deploys), ["a"], "b waits for a's deploy");
    // Meanwhile a push placed b's instances one per node: there is nothing left to move.
    for (const i of engine.instances) if (i.id === "b-0") i.node = "node3";
    deploys.release();
    await rebalancer.settled();
    assert.deepEqual(names(deploys), ["a"]);
  });

  test("one-instance apps: a node back gets its share of them, one move after the other on a new plan", async () => {
    const { store, engine, deploys, rebalancer } = await setUp();
    for (const [n, node] of ["node1", "node1", "node1", "node2", "node2", "node2"].entries())
      await servingApp(store, engine, `a${n}`, [node]);
    // Each redeploy places the app's instance on node3, as the spread would (the emptiest node).
    deploys.onDeploy = (app) => {
      for (const i of engine.instances) if (i.labels["pier.app"] === app.id) i.node = "node3";
    };
    assert.deepEqual(await rebalancer.rebalance("node3 activated"), ["a0", "a3"]);
    await rebalancer.settled();
    assert.deepEqual(names(deploys), ["a0", "a3"], "the nodes run 2, 2 and 2");
  });

  test("at once: the first apps of one plan redeploy side by side, the next plan once they all ended", async () => {
    const { store, engine, deploys, rebalancer } = await setUp({ atOnce: 2 });
    const on = ["node1", "node1", "node1", "node1", "node1", "node2", "node2", "node2", "node2"];
    for (const [n, node] of on.entries()) await servingApp(store, engine, `a${n}`, [node]);
    deploys.onDeploy = (app) => {
      for (const i of engine.instances) if (i.labels["pier.app"] === app.id) i.node = "node3";
    };
    deploys.hold = true;
    // 5, 4 and 0: three moves even the nodes out (3, 3, 3).
    assert.equal((await rebalancer.rebalance("node3 activated")).length, 3);
    await firstDeploy(deploys, 2);
    await sleep(30);
    assert.equal(deploys.asked.length, 2, "two at once, the third waits for both");
    assert.equal(deploys.busy.size, 2, "both under way together");
    deploys.release();
    await firstDeploy(deploys, 3);
    await sleep(30);
    assert.equal(deploys.asked.length, 3, "the new plan's one move");
    deploys.release();
    await rebalancer.settled();
    const load = new Map<string, number>();
    for (const i of engine.instances) load.set(i.node ?? "", (load.get(i.node ?? "") ?? 0) + 1);
    assert.deepEqual([...load.values()].sort(), [3, 3, 3], JSON.stringify([...load]));
    assert.equal(new Set(names(deploys)).size, 3, "each app once");
    rebalancer.stop();
  });

  test("an activation looks twice: a move the spread placed elsewhere than planned is made up for after the pass", async () => {
    const { store, engine, deploys, rebalancer } = await setUp();
    for (const [n, node] of ["node1", "node1", "node1", "node2", "node2", "node2"].entries())
      await servingApp(store, engine, `a${n}`, [node]);
    // The first redeploy lands on node2 (not where the plan thought), the others on node3.
    let deployed = 0;
    deploys.onDeploy = (app) => {
      const to = ++deployed === 1 ? "node2" : "node3";
      for (const i of engine.instances) if (i.labels["pier.app"] === app.id) i.node = to;
    };
    try {
      assert.equal((await rebalancer.rebalance("node3 activated")).length, 2);
      await rebalancer.settled();
      // The pass's two moves: node1 2, node2 3, node3 1. The second look moves one more.
      await firstDeploy(deploys, 3);
      await rebalancer.settled();
      const load = new Map<string, number>();
      for (const i of engine.instances) load.set(i.node ?? "", (load.get(i.node ?? "") ?? 0) + 1);
      assert.deepEqual([...load.values()].sort(), [2, 2, 2], JSON.stringify([...load]));
      assert.equal(deploys.asked.length, 3);
    } finally {
      rebalancer.stop();
    }
  });

  test("nothing crowded, or one node that takes work: nothing moves", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node1"]);
    for (const n of nodes.nodes) if (n.name !== "node1") n.state = "down";
    assert.deepEqual(await rebalancer.rebalance("node2 activated"), []);
    await rebalancer.settled();
    assert.deepEqual(names(deploys), []);
  });

  test("an engine that cannot be read: no app named, nothing moved, and no error for the activation", async () => {
    const { store, engine, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    engine.before.listRoutable = async () => {
      throw new Error("engine gone");
    };
    assert.deepEqual(await rebalancer.rebalance("node3 activated"), []);
    await rebalancer.settled();
    assert.deepEqual(names(deploys), []);
  });

  test("the watch: a node back after a loss, once it stayed ready, spreads the crowded apps onto it", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    const node3 = down(nodes, "node3");
    await watching(rebalancer, async () => {
      await sleep(50);
      assert.deepEqual(names(deploys), [], "a node down: nothing to spread onto");
      node3.state = "ready";
      await firstDeploy(deploys);
      await rebalancer.settled();
      assert.deepEqual(names(deploys), ["web"]);
      assert.equal(deploys.asked[0]?.req.cause, "rebalance: node3 takes work again");
    });
  });

  test("the watch: a list of the nodes that never answers is given up, and the next one sees the node back", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    const node3 = down(nodes, "node3");
    const list = nodes.listNodes.bind(nodes);
    let calls = 0;
    // The first list hangs for good (the manager's engine stuck).
    nodes.listNodes = () => (++calls === 1 ? new Promise(() => undefined) : list());
    await watching(rebalancer, async () => {
      await sleep(150);
      assert.ok(calls >= 2, `listed ${calls} times`);
      node3.state = "ready";
      await firstDeploy(deploys);
      await rebalancer.settled();
      assert.deepEqual(names(deploys), ["web"]);
    });
  });

  test("a node activated through Pier is spread onto by the activation only, not a second time as a return", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    const node3 = nodes.nodes.find((n) => n.name === "node3");
    assert.ok(node3);
    node3.availability = "drain";
    await watching(rebalancer, async () => {
      await sleep(100);
      node3.availability = "active";
      await rebalancer.activated("node3");
      // Past the settle time of a return and its second look.
      await sleep(300);
      await rebalancer.settled();
      assert.ok(deploys.asked.length > 0);
      assert.deepEqual([...new Set(deploys.asked.map((a) => a.req.cause))], ["rebalance: node3 activated"]);
    });
  });

  test("the watch looks twice after a return: the swarm still listing the lost node's old task at the first look", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    // At the first look the instance moved off node3 is still listed there (its agent has not reported
    // the old task ended): one instance per node, even.
    await servingApp(store, engine, "web", ["node1", "node2", "node3"]);
    const node3 = down(nodes, "node3");
    let looks = 0;
    await watching(rebalancer, async () => {
      // Past the look at the start (40 ms): nothing crowded then.
      await sleep(100);
      assert.deepEqual(names(deploys), []);
      engine.before.listRoutable = () => {
        looks++;
        // After the return's first look the swarm lists the instance where it runs: node1.
        if (looks === 1)
          setTimeout(() => {
            for (const i of engine.instances) if (i.id === "web-2") i.node = "node1";
          }, 0);
      };
      node3.state = "ready";
      await firstDeploy(deploys);
      await rebalancer.settled();
      assert.ok(looks >= 2, `looked ${looks} times`);
      assert.deepEqual(names(deploys), ["web"], "moved at the second look");
      assert.equal(deploys.asked[0]?.req.cause, "rebalance: node3 takes work again");
    });
  });

  test("the watch looks twice per return, no more: an app its moves cannot spread is not redeployed again and again", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp();
    // The fake deploy moves nothing: the app stays crowded whatever is done.
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    const node3 = down(nodes, "node3");
    await watching(rebalancer, async () => {
      await sleep(50);
      node3.state = "ready";
      // Settle 40 ms, the first look and its move, 40 ms, the second: then ten times that with nothing more.
      await sleep(600);
      await rebalancer.settled();
      assert.deepEqual(names(deploys), ["web", "web"]);
    });
  });

  test("the watch looks once at the start: apps crowding some nodes while pier server was stopped spread", async () => {
    const { store, engine, deploys, rebalancer } = await setUp();
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    await watching(rebalancer, async () => {
      await sleep(20);
      assert.deepEqual(names(deploys), [], "not before the settle period");
      await firstDeploy(deploys);
      await sleep(200);
      await rebalancer.settled();
      assert.deepEqual(names(deploys), ["web"], "one look, one move");
      assert.equal(deploys.asked[0]?.req.cause, "rebalance: pier server started");
    });
  });
  test("the regular look: an app the swarm crowded since (an instance started again elsewhere) spreads", async () => {
    const { store, engine, deploys, rebalancer } = await setUp({ everyMs: 60 });
    await servingApp(store, engine, "web", ["node1", "node2", "node3"]);
    deploys.onDeploy = (app) => {
      const on = ["node1", "node2", "node3"];
      for (const i of engine.instances) if (i.labels["pier.app"] === app.id) i.node = on.shift();
    };
    await watching(rebalancer, async () => {
      await sleep(150);
      assert.deepEqual(names(deploys), [], "even: the looks at the start and every 60 ms move nothing");
      // The swarm started web's failed instance again on node1.
      for (const i of engine.instances) if (i.id === "web-2") i.node = "node1";
      await firstDeploy(deploys);
      await sleep(200);
      await rebalancer.settled();
      assert.deepEqual(names(deploys), ["web"], "moved once, then even");
      assert.match(deploys.asked[0]?.req.cause ?? "", /^rebalance: crowded nodes seen by the look every /);
    });
  });

  test("the regular look moves an app at most once a day; a node's return may move it again", async () => {
    const { store, engine, nodes, deploys, rebalancer } = await setUp({ everyMs: 60 });
    // The fake deploy moves nothing: the app stays crowded whatever is done (the plan and the placement disagree).
    await servingApp(store, engine, "web", ["node1", "node1", "node2"]);
    const node3 = nodes.nodes.find((n) => n.name === "node3");
    assert.ok(node3);
    await watching(rebalancer, async () => {
      // The look at the start (40 ms, one look), then about ten regular looks (every 60 ms).
      await sleep(700);
      await rebalancer.settled();
      const causes = deploys.asked.map((a) => a.req.cause);
      assert.equal(causes.filter((c) => c === "rebalance: pier server started").length, 1, causes.join("; "));
      assert.equal(causes.filter((c) => c.includes("look every")).length, 1, causes.join("; "));
      const before = deploys.asked.length;
      node3.state = "down";
      await sleep(50);
      node3.state = "ready";
      await firstDeploy(deploys, before + 1);
      await rebalancer.settled();
      assert.equal(deploys.asked[before]?.req.cause, "rebalance: node3 takes work again");
    });
  });
});
