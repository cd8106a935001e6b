// No failure leaves an app worse off than before: a deploy, a scale, a rollback, a stop and a delete
// that fail at any step leave the store, the routes and the running instances exactly as they were.
// The engine and the edge are fakes (they throw where the real ones could); the store is the real one.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { App } from "../../../src/core/model.js";
import type { Route, Store } from "../../../src/core/ports.js";
import type { AppService } from "../../../src/server/apps.js";
import type { Runtime } from "../../../src/server/runtimes/runtime.js";
import type { FakeEngine } from "../../support/fake-engine.js";
import {
  builtImage,
  deployEngine,
  deployServices,
  FakeEdge,
  fakeInstances,
  listen,
  oneCommitRepo,
} from "./fakes.js";

type Step = "build" | "run" | "edge" | "commit" | null;

describe("a failed step leaves every app exactly as it was", () => {
  let dir: string;
  let server: Server;
  let port: number;
  let store: SqliteStore;
  let engine: FakeEngine;
  let servers: Server[] = [];
  let edge: FakeEdge;
  let apps: AppService;
  let fail: Step;
  let failCommit = false;
  /** Store methods that throw (a locked or full database). */
  const failStore = new Set<string>();
  let app: App;

  before(async () => {
    ({ server, port } = await listen());
  });
  after(() => {
    server.close();
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "pier-tx-"));
    const real = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
    // The store's one transaction of a deploy can fail too (a full disk, a locked file).
    store = new Proxy(real, {
      get(target, prop, receiver) {
        if (failStore.has(String(prop)))
          return async () => {
            throw new Error("store: database is locked");
          };
        if (prop === "commitRelease" && failCommit)
          return async () => {
            throw new Error("store: database or disk is full");
          };
        const v = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    ({ engine, servers } = deployEngine(port));
    edge = new FakeEdge();
    fail = null;
    failCommit = false;
    failStore.clear();
    const logger = pino({ level: "silent" });
    const instances = fakeInstances({ engine, edge, store: store as Store });
    const runtime: Runtime = {
      settings: () => ({
        settings: { httpPort: port, tcpPort: null, ipv6Subnet: null, mountDockerSocket: false, cmd: null },
        errors: [],
      }),
      build: async (ctx) => {
        if (fail === "build") throw new Error("build: npm ERR! network");
        return builtImage(engine, `pier-app/${ctx.app.id}:${ctx.deployment.id}`);
      },
    };
    ({ apps } = deployServices({
      store: store as Store,
      engine,
      instances,
      runtime,
      repo: oneCommitRepo(dir),
      logger,
    }));
    app = await apps.create({ name: "web", type: "docker" });
    const first = await apps.redeploy(app, { withoutCache: false, cause: "test" });
    await waitEnd(first.id);
    app = await apps.get("web");
    // Edge failures are injected only at the switch: the first refresh after it is the switch.
    const apply = edge.apply.bind(edge);
    edge.apply = async (routes) => {
      if (fail === "edge" && routes.some((r) => r.targets.length > 0 && !sameAsServed(r))) {
        fail = null;
        throw new Error("edge: HAProxy refused a route change");
      }
      return apply(routes);
    };
    delete engine.before.runInstance;
  });

  const sameAsServed = (r: Route) =>
    JSON.stringify(edge.served.find((s) => s.appId === r.appId)?.targets) === JSON.stringify(r.targets);

  async function waitEnd(id: string) {
    for (let i = 0; i < 500; i++) {
      const d = await store.getDeployment(id);
      if (d && ["succeeded", "failed", "cancelled"].includes(d.state)) return d;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`deployment ${id} did not end`);
  }

  /** What a user could observe of the app: the store, the routes, the running instances. */
  async function snapshot() {
    const a = await store.findApp(app.id);
    return {
      app: a && { instances: a.instances, flavor: a.flavor, stopped: a.stopped },
      current: (await store.currentRelease(app.id))?.id ?? null,
      releases: (await store.listReleases(app.id)).length,
      served: edge.served.find((r) => r.appId === app.id)?.targets ?? null,
      running: engine.instances.filter((c) => c.running).map((c) => c.id),
    };
  }

  test("the first deploy went live (the baseline the others keep)", async () => {
    const s = await snapshot();
    assert.equal(s.releases, 1);
    assert.equal(s.running.length, 1);
    assert.equal(s.served?.length, 1);
  });

  // The deploy's named steps (src/server/deploy/*), each failed in turn.
  const steps: [string, () => unknown, RegExp][] = [
    [
      "variables",
      () => store.changeEnv(app.id, { CC_HEALTH_CHECK_PATH_01: "/" }, []),
      /without leading zeros/,
    ],
    [
      "build",
      () => {
        fail = "build";
      },
      /npm ERR! network/,
    ],
    [
      "start",
      () => {
        engine.before.runInstance = () => {
          throw new Error("engine: no space left on device");
        };
      },
      /no space left/,
    ],
    ["gate", () => store.changeEnv(app.id, { CC_HEALTH_CHECK_PATH: "/bad" }, []), /health check/i],
    [
      "switch",
      () => {
        fail = "edge";
      },
      /HAProxy refused/,
    ],
    [
      "record",
      () => {
        failCommit = true;
      },
      /disk is full/,
    ],
  ];
  for (const [name, inject, reason] of steps) {
    test(`a deploy that fails at the step ${name} leaves the app as it was`, async () => {
      const before = await snapshot();
      await inject();
      const d = await apps.redeploy(app, { withoutCache: false, cause: "test" });
      const end = await waitEnd(d.id);
      assert.equal(end.state, "failed");
      assert.match(end.reason ?? "", reason);
      assert.equal(end.releaseId, null);
      assert.deepEqual(await snapshot(), before);
    });
  }

  test("a scale whose deploy fails keeps the old size in the store and on the engine", async () => {
    const before = await snapshot();
    fail = "edge";
    const r = await apps.patch(app, { instances: 3, flavor: "S" });
    assert.ok(r.deployment);
    assert.equal((await waitEnd(r.deployment.id)).state, "failed");
    assert.deepEqual(await snapshot(), before);
    // And a scale that succeeds records the size with the release.
    const ok = await apps.patch(app, { instances: 2 });
    assert.equal((await waitEnd(ok.deployment!.id)).state, "succeeded");
    const after = await snapshot();
    assert.equal(after.app?.instances, 2);
    assert.equal(after.served?.length, 2);
  });

  test("a rollback that fails leaves the current release", async () => {
    const second = await apps.redeploy(app, { withoutCache: false, cause: "v2" });
    assert.equal((await waitEnd(second.id)).state, "succeeded");
    const before = await snapshot();
    failCommit = true;
    const d = await apps.rollback(app, "v1");
    assert.equal((await waitEnd(d.id)).state, "failed");
    assert.deepEqual(await snapshot(), before);
  });

  test("a stop whose edge update fails leaves the app serving and not stopped", async () => {
    const before = await snapshot();
    edge.failNext = true;
    await assert.rejects(apps.stop(app), /HAProxy refused/);
    assert.deepEqual(await snapshot(), before);
    // Then it works: no route, no instance, recorded as stopped.
    await apps.stop(app);
    const after = await snapshot();
    assert.equal(after.app?.stopped, true);
    assert.deepEqual(after.served, []);
    assert.deepEqual(after.running, []);
  });

  test("a delete whose edge update fails leaves the app in the store, serving", async () => {
    const before = await snapshot();
    edge.failNext = true;
    await assert.rejects(apps.remove(app), /HAProxy refused/);
    assert.deepEqual(await snapshot(), before);
    await apps.remove(app);
    assert.equal(await store.findApp(app.id), null);
    assert.deepEqual(engine.instances, []);
  });

  test("a second delete while the first runs waits for it and succeeds with it (a DELETE may be repeated)", async () => {
    const first = apps.remove(app);
    const again = apps.remove(app);
    await Promise.all([first, again]);
    assert.equal(await store.findApp(app.id), null);
    assert.deepEqual(engine.instances, []);
    assert.equal(
      engine.calls.filter((c) => c.startsWith("removeAppVolumes")).length,
      1,
      "the app's things are removed once",
    );
  });

  test("a stop or a delete whose store write fails leaves the app serving, as it was", async () => {
    const before = await snapshot();
    failStore.add("updateApp");
    await assert.rejects(apps.stop(app), /database is locked/);
    assert.deepEqual(await snapshot(), before, "stop: the edge serves it again, its instances run");
    failStore.clear();
    failStore.add("deleteApp");
    await assert.rejects(apps.remove(app), /database is locked/);
    assert.deepEqual(await snapshot(), before, "delete: still in the store, served, running");
  });

  test("a route refresh of another app during a deploy's switch keeps the switch", async () => {
    // The pending switch is what routes() shows for the app until the store records it.
    const other = await apps.create({ name: "other", type: "docker" });
    const d = await apps.redeploy(app, { withoutCache: false, cause: "test" });
    const od = await apps.redeploy(other, { withoutCache: false, cause: "test" });
    assert.equal((await waitEnd(d.id)).state, "succeeded");
    assert.equal((await waitEnd(od.id)).state, "succeeded");
    const release = await store.currentRelease(app.id);
    const live = engine.instances.filter(
      (c) => c.running && c.labels["pier.deployment"] === release?.deploymentId,
    );
    assert.deepEqual(
      edge.served.find((r) => r.appId === app.id)?.targets,
      live.map((c) => c.http),
    );
  });

  // Issue 15 (ADR 0022): a deploy that asks for more than the app may have fails before anything starts.
  const limitCases: [string, () => Promise<unknown>, RegExp][] = [
    [
      "the app's ceiling, lowered by an admin since its last scale",
      () => store.setAppLimits(app.id, { maxFlavor: "pico" }),
      /Flavor nano is larger than web's largest allowed flavor, pico \(limit maxFlavor\)\. \(.*pier limits set --max-flavor nano --app web/,
    ],
    [
      "the cap on an instance's environment (its variables with its links')",
      // Past the store's own caps, as variables merged from links can be: 18 x 60 KiB.
      () =>
        store.changeEnv(
          app.id,
          Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`BIG_${i}`, "x".repeat(60 * 1024)])),
          [],
        ),
      /The environment of web's instances .* would take 11\d{5} bytes: at most 1048576 \(1024 KiB, the cap on an instance's environment\)/,
    ],
  ];
  for (const [name, inject, reason] of limitCases) {
    test(`a deploy past ${name} fails before anything is built or started`, async () => {
      const before = await snapshot();
      const created = engine.created;
      await inject();
      const d = await apps.redeploy(app, { withoutCache: false, cause: "test" });
      const end = await waitEnd(d.id);
      assert.equal(end.state, "failed");
      assert.match(end.reason ?? "", reason);
      assert.deepEqual(await snapshot(), before);
      assert.equal(engine.created, created, "no instance was created");
      const log = (await store.deployLog(d.id)).map((l) => l.line).join("\n");
      assert.doesNotMatch(log, /Starting \d+ instance|Reusing|Building/);
    });
  }

  afterEach(() => {
    for (const s of servers) s.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
