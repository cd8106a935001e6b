// `pier logs` reads the log of each instance it lists: one removed in between (a deploy retired it) has no
// log any more, and the engine says NOT_FOUND; the others' lines still come back, read or followed.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import { LABEL } from "../../../src/core/labels.js";
import { AppService } from "../../../src/server/apps.js";
import type { Deployer } from "../../../src/server/deployer.js";
import { AppLimits } from "../../../src/server/limits.js";
import { InstanceStarts } from "../../../src/server/log-follow.js";
import { newApp } from "../../conformance/store.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";
import { fakeInstances } from "./fakes.js";

async function setUp() {
  const store = new MemoryStore();
  const engine = new FakeEngine();
  const instances = fakeInstances({ engine, store });
  const apps = new AppService({
    store,
    engine,
    limits: new AppLimits({ store, defaults: { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 2 ** 20 } }),
    deployer: {} as Deployer,
    instances,
    starts: new InstanceStarts(),
    logger: pino({ level: "silent" }),
    repoDir: (id) => `/nonexistent/${id}.git`,
    gitUrl: (id) => `git+ssh://git@localhost/${id}.git`,
    appUrl: (name) => `http://${name}.localhost`,
    stopGraceMs: 10,
    domain: "localhost",
    buildNetwork: null,
  });
  const app = await store.createApp(newApp("web"));
  for (const n of [0, 1]) {
    engine.addInstance({ id: `i-${n}`, labels: { [LABEL.app]: app.id, [LABEL.instance]: String(n) } });
    engine.print(`i-${n}`, `hello from ${n}`);
  }
  // Instance 0 goes between the listing and the reading of its log.
  engine.before.logs = (id) => {
    if (id === "i-0") engine.instances = engine.instances.filter((i) => i.id !== id);
  };
  return { app, apps };
}

describe("runtime logs of an instance removed meanwhile", () => {
  test("read: the other instances' lines come back", async () => {
    const { app, apps } = await setUp();
    const lines = await apps.runtimeLogs(app, {});
    assert.deepEqual(
      lines.map((l) => [l.instance, l.line]),
      [[1, "hello from 1"]],
    );
  });

  test("followed: the other instances' lines come back", async () => {
    const { app, apps } = await setUp();
    const got: string[] = [];
    const stop = new AbortController();
    const following = apps.followRuntimeLogs(
      app,
      {},
      (l) => {
        got.push(l.line);
        stop.abort();
      },
      stop.signal,
    );
    await following;
    assert.deepEqual(got, ["hello from 1"]);
  });
});
