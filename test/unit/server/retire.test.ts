// What a successful deploy does off the pusher's path (src/server/deploy/cleanup.ts retirePrevious): the
// previous release's instances stop, those an earlier deploy retired go. The engine is the one fake (its
// `before` hooks hold a call), the store the memory one.
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { retirePrevious } from "../../../src/server/deploy/cleanup.js";
import type { Instances } from "../../../src/server/instances.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";
import { fakeInstances } from "./fakes.js";

const quiet = { info: () => undefined, warn: () => undefined };

describe("retiring the previous release", () => {
  let store: MemoryStore;
  let engine: FakeEngine;
  let instances: Instances;

  beforeEach(() => {
    store = new MemoryStore();
    engine = new FakeEngine();
    instances = fakeInstances({ engine, store });
  });

  const labels = (deployment: string) => ({ "pier.app": "app-1", "pier.deployment": deployment });

  test("the serving release's instances stop while an earlier one's are still being removed", async () => {
    const kept = engine.addInstance({ id: "d1-0", labels: labels("d1"), running: false, state: "exited" });
    const serving = engine.addInstance({ id: "d2-0", labels: labels("d2") });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let stoppedWhileHeld = false;
    engine.before.removeInstance = () => held;
    engine.before.stopInstance = () => {
      stoppedWhileHeld = engine.instances.some((i) => i.id === kept.id);
    };
    const done = retirePrevious(
      { store, engine, instances, logger: quiet },
      "app-1",
      [kept, serving],
      null,
      () => null,
    );
    // The stop ran (SIGTERM sent) though the removal of d1's instance has not ended.
    const stopped = () => engine.instances.find((i) => i.id === serving.id)?.running === false;
    for (let i = 0; i < 50 && !stopped(); i++) await new Promise((r) => setImmediate(r));
    assert.ok(stopped(), "the running instance is stopped without waiting for the removal");
    assert.ok(stoppedWhileHeld, "d1's instance was still there when d2's stopped");
    release();
    await done;
    assert.deepEqual(
      engine.instances.map((i) => i.id),
      ["d2-0"],
      "d1's instance is gone, d2's stays (stopped) for its logs",
    );
  });

  test("a removal that fails still leaves the previous release stopped", async () => {
    const kept = engine.addInstance({ id: "d1-0", labels: labels("d1"), running: false, state: "exited" });
    const serving = engine.addInstance({ id: "d2-0", labels: labels("d2") });
    engine.before.removeInstance = () => {
      throw new Error("the engine refused the removal");
    };
    await assert.rejects(
      retirePrevious({ store, engine, instances, logger: quiet }, "app-1", [kept, serving], null, () => null),
      /refused the removal/,
    );
    assert.equal(engine.instances.find((i) => i.id === serving.id)?.running, false, "d2's instance stopped");
  });
});
