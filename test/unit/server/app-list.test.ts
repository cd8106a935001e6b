// The app list (`GET /v1/apps`, `pier apps`, the console's home page) shows each app's state, release and
// running instances from ONE engine call for all apps: at 120 apps it asks the engine what it asks at one.
// The store is the real one; the engine the one fake (test/support), which counts its calls.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { RoutableInstance } from "../../../src/core/ports.js";
import { appListStatuses } from "../../../src/server/app-list.js";
import { newApp } from "../../conformance/store.js";
import { FakeEngine } from "../../support/fake-engine.js";

/** The one fake engine with these containers; listing with an inspect of each is an error. */
function countingEngine(containers: readonly RoutableInstance[]): FakeEngine {
  const engine = new FakeEngine();
  for (const c of containers) engine.addInstance(c);
  engine.before.listInstances = () => {
    throw new Error("the list must not inspect each container");
  };
  return engine;
}

const container = (app: string, deployment: string, n: number, running: boolean): RoutableInstance => ({
  id: `c-${app}-${deployment}-${n}`,
  labels: { "pier.app": app, "pier.deployment": deployment, "pier.instance": String(n) },
  running,
  http: { host: "127.0.0.1", port: 10_000 + n },
});

describe("the app list's statuses", () => {
  const APPS = 120;
  let dir: string;
  let store: SqliteStore;
  const containers: RoutableInstance[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "pier-applist-"));
    store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
    for (let i = 0; i < APPS; i++) {
      const id = `app-list${String(i).padStart(8, "0")}`;
      await store.createApp(newApp(`app${i}`, { id, type: "docker", instances: 2 }));
      // Every third app is never deployed; the others have a release with two instances, one of them down
      // for every fifth app, both down for every seventh; one more app is deploying its first release.
      if (i % 3 === 0) {
        if (i === 3)
          await store.createDeployment({
            id: `dep-${i}`,
            appId: id,
            commit: "c0",
            cause: "git push",
            withoutCache: false,
          });
        continue;
      }
      const dep = `dep-${i}`;
      await store.createDeployment({
        id: dep,
        appId: id,
        commit: `c${i}`,
        cause: "git push",
        withoutCache: false,
      });
      await store.commitRelease(
        {
          id: `rel-${i}`,
          appId: id,
          deploymentId: dep,
          image: `pier-app/${id}:${dep}`,
          commit: `c${i}`,
          env: {},
          httpPort: 8080,
          tcpPort: null,
          task: false,
        },
        {},
        new Date().toISOString(),
      );
      containers.push(container(id, dep, 0, i % 7 !== 0));
      containers.push(container(id, dep, 1, i % 5 !== 0 && i % 7 !== 0));
      // A container of an older deployment, retired: not counted.
      containers.push(container(id, `old-${i}`, 0, false));
    }
    await store.updateApp("app-list00000004", { stopped: true });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test(`${APPS} apps: the engine is asked once, and each app gets its own state, release and counts`, async () => {
    const engine = countingEngine(containers);
    const apps = await store.listApps();
    assert.equal(apps.length, APPS);
    const got = await appListStatuses(apps, {
      store,
      engine,
      logger: pino({ level: "silent" }),
    });
    assert.deepEqual(engine.calls, ["listRoutable {}"]);
    const of = (i: number) => {
      const s = got.get(`app-list${String(i).padStart(8, "0")}`);
      return s && { state: s.state, release: s.release?.number ?? null, running: s.running, total: s.total };
    };
    assert.deepEqual(of(0), { state: "not deployed", release: null, running: 0, total: 0 });
    assert.deepEqual(of(3), { state: "deploying", release: null, running: 0, total: 0 });
    assert.deepEqual(of(1), { state: "running", release: 1, running: 2, total: 2 });
    assert.deepEqual(of(10), { state: "running", release: 1, running: 1, total: 2 });
    assert.deepEqual(of(14), { state: "down", release: 1, running: 0, total: 2 });
    assert.deepEqual(of(4), { state: "stopped", release: 1, running: 2, total: 2 });
    assert.equal(got.get("app-list00000002")?.release?.commit, "c2");
  });

  test("no app: the engine is not asked at all", async () => {
    const engine = countingEngine(containers);
    const got = await appListStatuses([], {
      store,
      engine,
      logger: pino({ level: "silent" }),
    });
    assert.equal(got.size, 0);
    assert.deepEqual(engine.calls, []);
  });

  test("an engine that does not answer: every status is null, the list itself still answers", async () => {
    const engine = countingEngine(containers);
    engine.before.listRoutable = () => {
      throw new Error("connect ENOENT /var/run/docker.sock");
    };
    const apps = await store.listApps();
    const got = await appListStatuses(apps, {
      store,
      engine,
      logger: pino({ level: "silent" }),
    });
    assert.equal(got.size, APPS);
    assert.ok([...got.values()].every((s) => s === null));
    assert.equal(engine.calls.length, 1);
  });
});
