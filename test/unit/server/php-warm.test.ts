import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { describe, it } from "node:test";
import type { App } from "../../../src/core/model.js";
import { RELEASE_VOLUME_ROLE, VOLUME_LABEL } from "../../../src/core/release-volumes.js";
import { WARM_SCRIPT, WarmBuilds } from "../../../src/server/runtimes/php-warm.js";
import { appRecord } from "../../conformance/store.js";
import { FakeEngine } from "../../support/fake-engine.js";

const app = (over: Partial<App> = {}): App =>
  appRecord("one", { id: "app-1", type: "phpserver", flavor: "XS", createdAt: "", ...over });

function setup(o: { app?: App | null; current?: string | null; idleMs?: number } = {}) {
  const engine = new FakeEngine();
  engine.addImage("pier/php:8.4");
  const warm = new WarmBuilds({
    engine,
    buildNetwork: null,
    buildSlot: async (appId) => ({ appId, network: "pier-app-1" }),
    findApp: async () => (o.app === undefined ? app() : o.app),
    currentImage: async () => o.current ?? null,
    ...(o.idleMs !== undefined ? { idleMs: o.idleMs } : {}),
  });
  return { engine, warm };
}

/** Waits (in event-loop turns, not a wall-clock bound) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !done(); i++) await new Promise((r) => setTimeout(r, 1));
  assert.ok(done(), "the condition never held");
}

describe("WarmBuilds: PHP build containers started while a push is received", () => {
  it("starts one per app with a new vendor/ volume, the app's sandbox and build flavor; take hands it over once", async () => {
    const { engine, warm } = setup();
    warm.prepare("app-1");
    warm.prepare("app-1");
    const w = await warm.take("app-1");
    assert.ok(w);
    assert.equal(engine.startedBuilds.length, 1, "one container per app");
    const spec = engine.startedBuilds[0]!;
    assert.equal(spec.scriptPath, WARM_SCRIPT);
    assert.equal(spec.from, "pier/php:8.4");
    assert.deepEqual(spec.slot, { appId: "app-1", network: "pier-app-1" });
    assert.equal(spec.memoryBytes, 4096 * 2 ** 20, "the M build flavor");
    assert.deepEqual(
      spec.volumes.map((v) => v.target),
      ["/cache", "/app/vendor"],
    );
    assert.equal(spec.volumes[1]!.name, w.volume);
    assert.equal(spec.volumes[1]!.labels?.["pier.role"], "release-volume");
    assert.equal(w.slot.network, "pier-app-1");
    assert.ok(existsSync(w.dir), "its folder for build.env and the script");
    assert.equal(await warm.take("app-1"), null, "taken once");
    await warm.discard(w);
    assert.equal(engine.buildContainers.length, 0);
    assert.equal(engine.volumes.has(w.volume), false);
    assert.equal(existsSync(w.dir), false);
  });

  it("none for other runtimes or unknown apps", async () => {
    for (const o of [{ app: app({ type: "node" }) }, { app: null }]) {
      const { engine, warm } = setup(o);
      warm.prepare("app-1");
      assert.equal(await warm.take("app-1"), null);
      assert.equal(engine.startedBuilds.length, 0);
    }
  });

  it("none on an engine whose instances may run away from its volumes (a swarm: vendor/ goes into the image)", async () => {
    const { engine, warm } = setup();
    engine.instancesShareVolumes = false;
    warm.prepare("app-1");
    assert.equal(await warm.take("app-1"), null);
    assert.equal(engine.startedBuilds.length, 0);
    assert.equal(engine.volumes.size, 0);
  });

  it("a redeploy's guess: the current release's vendor/ volume, kept when it is discarded", async () => {
    const vendor = "pier-vendor-app-1-dep-1";
    const { engine, warm } = setup({ current: "pier-app/app-1:dep-1" });
    engine.addImage("pier-app/app-1:dep-1", { [VOLUME_LABEL]: `${vendor}:/app/vendor` });
    engine.volumes.set(vendor, { "pier.app": "app-1", "pier.role": RELEASE_VOLUME_ROLE });
    warm.prepare("app-1");
    const w = await warm.take("app-1");
    assert.ok(w);
    assert.equal(w.volume, vendor);
    assert.equal(w.own, false);
    assert.equal(engine.startedBuilds[0]!.volumes[1]!.name, vendor);
    await warm.discard(w);
    assert.ok(engine.volumes.has(vendor), "the serving release's volume stays");

    const gone = setup({ current: "pier-app/app-1:dep-1" });
    gone.engine.addImage("pier-app/app-1:dep-1", { [VOLUME_LABEL]: `${vendor}:/app/vendor` });
    gone.warm.prepare("app-1");
    assert.equal(await gone.warm.take("app-1"), null, "its volume is gone: none");

    const inImage = setup({ current: "pier-app/app-1:dep-0" });
    inImage.engine.addImage("pier-app/app-1:dep-0");
    inImage.warm.prepare("app-1");
    const fresh = await inImage.warm.take("app-1");
    assert.ok(fresh?.own, "the current release holds vendor/ in its image: a new volume");
  });

  it("close removes those waiting (pier server stops)", async () => {
    const { engine, warm } = setup();
    warm.prepare("app-1");
    await warm.close();
    assert.equal(engine.startedBuilds.length, 1);
    assert.equal(engine.buildContainers.length, 0);
    assert.deepEqual([...engine.volumes.keys()], ["pier-cache-app-1"]);
    assert.equal(await warm.take("app-1"), null);
  });

  it("one left unused goes after idleMs; one the engine lost is not handed over", async () => {
    const { engine, warm } = setup({ idleMs: 20 });
    warm.prepare("app-1");
    await until(() => engine.startedBuilds.length === 1 && engine.buildContainers.length === 0);
    assert.equal(engine.buildContainers.length, 0, "removed after idleMs");
    assert.deepEqual(
      [...engine.volumes.keys()],
      ["pier-cache-app-1"],
      "its vendor/ volume too (not the cache)",
    );
    assert.equal(await warm.take("app-1"), null);

    const lost = setup();
    lost.warm.prepare("app-1");
    await until(() => lost.engine.buildContainers.length === 1);
    lost.engine.buildContainers = [];
    assert.equal(await lost.warm.take("app-1"), null, "stopped (an engine restart): discarded");
    assert.deepEqual([...lost.engine.volumes.keys()], ["pier-cache-app-1"]);
  });
});
