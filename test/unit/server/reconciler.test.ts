// The reconciler and the route table at 100 apps (src/server/reconciler.ts, src/server/instances.ts), against
// the one fake engine and the in-memory store (test/support): the engine calls they make do not grow with the number of apps.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import type { App } from "../../../src/core/model.js";
import type { Edge, Route } from "../../../src/core/ports.js";
import type { Deployer } from "../../../src/server/deployer.js";
import { type ReconcileDeps, reconcile } from "../../../src/server/reconciler.js";
import { newApp } from "../../conformance/store.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";
import { fakeInstances } from "./fakes.js";

const APPS = 100;
/** The in-memory store, counting the reads of current releases. */
class CountingStore extends MemoryStore {
  reads = 0;
  override async currentRelease(appId: string) {
    this.reads++;
    return super.currentRelease(appId);
  }
}

/** 100 apps `a<i>` (id `app-<i>`), each with its current release of deployment `dep-<i>`. */
async function storeOfApps(): Promise<CountingStore> {
  const store = new CountingStore();
  for (let i = 0; i < APPS; i++) {
    const appId = `app-${i}`;
    await store.createApp(newApp(`a${i}`, { id: appId }));
    await store.createDeployment({ id: `dep-${i}`, appId, commit: "c", cause: "push", withoutCache: false });
    const r = {
      id: `rel-${i}`,
      appId,
      deploymentId: `dep-${i}`,
      image: "img",
      commit: "c",
      env: {},
      httpPort: 8080,
      tcpPort: null,
      task: false,
    };
    await store.commitRelease(r, {}, new Date().toISOString());
  }
  store.reads = 0;
  return store;
}

async function setUp() {
  const engine = new FakeEngine();
  engine.addImage("img");
  for (let i = 0; i < APPS; i++) {
    engine.addInstance({
      id: `c-${i}`,
      labels: { "pier.app": `app-${i}`, "pier.deployment": `dep-${i}`, "pier.sandbox": `s-${i}` },
      running: i !== 7,
      http: { host: "127.0.0.1", port: 40000 + i },
    });
    engine.sandboxes.push({
      id: `s-${i}`,
      labels: { "pier.app": `app-${i}` },
      running: i !== 7,
      http: null,
      tcp: null,
      networkAddress: null,
    });
  }
  // A leftover of an earlier deployment, an instance of a deleted app, and the build container of app-5's
  // current release (a crash between its commit and its removal): never started as an instance.
  engine.addInstance({
    id: "build",
    labels: { "pier.app": "app-5", "pier.deployment": "dep-5", "pier.role": "build" },
    running: false,
    http: null,
  });
  engine.addInstance({
    id: "old",
    labels: { "pier.app": "app-3", "pier.deployment": "dep-old" },
    running: false,
    http: null,
  });
  engine.addInstance({
    id: "stray",
    labels: { "pier.app": "app-gone", "pier.deployment": "x" },
    running: true,
    http: null,
  });
  const store = await storeOfApps();
  const applied: Route[][] = [];
  /** The engine calls made before each apply. */
  const callsAtApply: string[][] = [];
  const edge: Edge = {
    start: async () => undefined,
    stop: async () => undefined,
    apply: async (r: readonly Route[]) => {
      applied.push([...r]);
      callsAtApply.push([...engine.calls]);
      return { skipped: [] };
    },
  };
  const instances = fakeInstances({ engine, edge, store, stopGraceMs: 1000 });
  return { engine, instances, store, applied, callsAtApply, storeReads: () => store.reads };
}

/** The reconciler over these fakes, with no network to remove and no app to redeploy. */
const reconcileQuietly = (s: Pick<ReconcileDeps, "store" | "engine" | "instances">) =>
  reconcile({
    ...s,
    networks: { reconcile: async () => undefined },
    deployer: {} as Deployer,
    logger: pino({ level: "silent" }),
  });

describe("at 100 apps", () => {
  test("reconcile lists the engine three times, starts what is stopped, routes every app, removes leftovers", async () => {
    const { engine, instances, store, applied, callsAtApply } = await setUp();
    const known: string[][] = [];
    await reconcile({
      store,
      engine,
      instances,
      networks: { reconcile: async (k) => void known.push([...k]) },
      deployer: {} as Deployer,
      logger: pino({ level: "silent" }),
    });
    // What runs, and again for the routes; then the started app's own: not one call per app.
    assert.deepEqual(engine.calls.filter((c) => c.startsWith("list")).sort(), [
      'listRoutable {"pier.app":"app-7"}',
      "listRoutable {}",
      "listRoutable {}",
      "listSandboxes {}",
    ]);
    assert.deepEqual(
      engine.calls.filter((c) => c.startsWith("start")),
      ["startInstance c-7"],
    );
    assert.equal(engine.sandboxes.find((s) => s.id === "s-7")?.running, true, "its slot started first");
    assert.deepEqual(engine.calls.filter((c) => c.startsWith("remove")).sort(), [
      "removeInstance build",
      "removeInstance old",
      "removeInstance stray",
      "removeStraySlots {}",
    ]);
    // Every app routed before the start (a slow one holds no other app's route), then the started app again.
    assert.equal(applied.length, 2);
    assert.ok(!callsAtApply[0]?.includes("startInstance c-7"), "the routes came before the start");
    assert.ok(callsAtApply[1]?.includes("startInstance c-7"), "the started app's route after it");
    for (const routes of applied) {
      assert.equal(routes.length, APPS);
      assert.ok(routes.every((r) => r.targets.length === 1));
    }
    assert.equal(known[0]?.length, APPS);
  });

  test("a deploy refreshes its own app's route: one engine call and one store read, whatever the number of apps", async () => {
    const { engine, instances, applied, storeReads } = await setUp();
    await instances.refreshEdge();
    const reads = storeReads();
    engine.calls = [];
    engine.addInstance({
      id: "new",
      labels: { "pier.app": "app-42", "pier.deployment": "dep-42" },
      running: true,
      http: { host: "127.0.0.1", port: 50000 },
    });
    await instances.refreshEdge("app-42");
    assert.deepEqual(engine.calls, ['listRoutable {"pier.app":"app-42"}']);
    assert.equal(storeReads() - reads, 1);
    const last = applied.at(-1) ?? [];
    assert.equal(last.length, APPS);
    assert.deepEqual(
      last
        .find((r) => r.appId === "app-42")
        ?.targets.map((t) => t.port)
        .sort(),
      [40042, 50000],
    );
    assert.deepEqual(last.find((r) => r.appId === "app-41")?.targets, [{ host: "127.0.0.1", port: 40041 }]);
  });

  test("an instance slow to start (a swarm task still coming back) holds neither the routes nor another app's start", async () => {
    const { engine, instances, store, applied, callsAtApply } = await setUp();
    engine.instances.find((c) => c.id === "c-8")!.running = false;
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    engine.before.startInstance = async (id) => {
      if (id === "c-7") await held;
    };
    const done = reconcileQuietly({ store, engine, instances });
    // app-8's start ends and its route follows while app-7's start still waits.
    for (let i = 0; i < 100 && !callsAtApply.some((c) => c.includes("startInstance c-8")); i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.equal(applied.length, 2, "every app routed, then app-8 again, with app-7's start pending");
    assert.ok(!callsAtApply[0]?.includes("startInstance c-7"));
    assert.deepEqual(applied[1]?.find((r) => r.appId === "app-8")?.targets, [
      { host: "127.0.0.1", port: 40008 },
    ]);
    release();
    await done;
    assert.equal(applied.length, 3, "app-7 routed once its start ended");
  });

  test("an app's stopped instances start together", async () => {
    const { engine, instances, store } = await setUp();
    engine.addInstance({
      id: "c-7b",
      labels: { "pier.app": "app-7", "pier.deployment": "dep-7", "pier.sandbox": "s-7" },
      running: false,
      http: { host: "127.0.0.1", port: 40107 },
    });
    let now = 0;
    let most = 0;
    engine.before.startInstance = async () => {
      most = Math.max(most, ++now);
      await new Promise((r) => setTimeout(r, 20));
      now--;
    };
    await reconcileQuietly({ store, engine, instances });
    assert.ok(engine.calls.includes("startInstance c-7") && engine.calls.includes("startInstance c-7b"));
    assert.equal(most, 2, "starts under way at once");
  });

  test("pier server's start is told once every app is routed, while a start it waits on goes on", async () => {
    const { engine, instances, store, applied } = await setUp();
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    engine.before.startInstance = async () => held;
    let routedAt = -1;
    const done = reconcile({
      store,
      engine,
      instances,
      networks: { reconcile: async () => undefined },
      deployer: {} as Deployer,
      logger: pino({ level: "silent" }),
      onRouted: () => {
        routedAt = applied.length;
      },
    });
    for (let i = 0; i < 200 && routedAt < 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(routedAt, 1, "told after the first route table, every app in it");
    assert.equal(applied[0]?.length, APPS);
    assert.ok(engine.calls.includes("startInstance c-7"), "app-7's start is under way, not ended");
    release();
    await done;
    assert.equal(applied.length, 2, "app-7 routed once its start ended");
  });

  test("a stopped app's instances still running (pier server killed between the record and their removal) go", async () => {
    const { engine, instances, store, applied } = await setUp();
    // pier stop records the app stopped once the edge no longer routes it, then removes its instances: a
    // kill (or an engine error) in between leaves them running, unrouted, holding memory until now.
    for (const i of [9, 7]) await store.updateApp(`app-${i}`, { stopped: true });
    await reconcileQuietly({ store, engine, instances });
    const removed = engine.calls.filter((c) => c.startsWith("removeInstance")).sort();
    assert.ok(removed.includes("removeInstance c-9"), removed.join(", "));
    assert.ok(removed.includes("removeInstance c-7"), "a stopped one too");
    assert.ok(!engine.calls.includes("startInstance c-7"), "a stopped app's instance is not started");
    assert.deepEqual(applied[0]?.find((r) => r.appId === "app-9")?.targets, [], "nor routed");
    assert.deepEqual(applied[0]?.find((r) => r.appId === "app-8")?.targets, [
      { host: "127.0.0.1", port: 40008 },
    ]);
  });

  test("instances that carry their image's build role (Pier before ADR 0021) are adopted: no redeploy, still routed", async () => {
    const { engine, instances, store, applied } = await setUp();
    // A Node.js or PHP release image kept its build container's pier.role=build, and its instances got it.
    for (const i of engine.instances.filter((c) => c.id === "c-4" || c.id === "c-7"))
      i.labels = { ...i.labels, "pier.role": "build", "pier.instance-id": `uuid-${i.id}` };
    const enqueued: string[] = [];
    const deployer: Pick<Deployer, "enqueue"> = {
      enqueue: async (a: App) => {
        enqueued.push(a.id);
        const deployment = await store.createDeployment({
          id: `dep-again-${a.id}`,
          appId: a.id,
          commit: "c",
          cause: "reconcile",
          withoutCache: false,
        });
        return { deployment, done: Promise.resolve(deployment) };
      },
    };
    await reconcile({
      store,
      engine,
      instances,
      networks: { reconcile: async () => undefined },
      deployer,
      logger: pino({ level: "silent" }),
    });
    assert.deepEqual(enqueued, [], "no app is redeployed");
    const removed = engine.calls.filter((c) => c.startsWith("removeInstance")).sort();
    assert.deepEqual(removed, ["removeInstance build", "removeInstance old", "removeInstance stray"]);
    assert.ok(engine.calls.includes("startInstance c-7"), "a stopped one of them is started");
    assert.deepEqual(applied[0]?.find((r) => r.appId === "app-4")?.targets, [
      { host: "127.0.0.1", port: 40004 },
    ]);
  });
});
