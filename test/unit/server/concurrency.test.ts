// Operations on one app submitted together (scale, restart, push, stop) run one after the other or are
// refused with APP_BUSY (409): never half-applied (issue 15). The engine and the edge are fakes; the store is
// the real one.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { PierError } from "../../../src/core/errors.js";
import type { App, Deployment } from "../../../src/core/model.js";
import type { AppService } from "../../../src/server/apps.js";
import type { Deployer } from "../../../src/server/deployer.js";
import type { Instances } from "../../../src/server/instances.js";
import type { Runtime } from "../../../src/server/runtimes/runtime.js";
import type { FakeEngine } from "../../support/fake-engine.js";
import { builtImage, deployEngine, deployServices, fakeInstances, listen, oneCommitRepo } from "./fakes.js";

/** A promise the test resolves when it chooses. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { wait, open };
}

describe("concurrent operations on one app", () => {
  let dir: string;
  let server: Server;
  let port: number;
  let store: SqliteStore;
  let engine: FakeEngine;
  let servers: Server[] = [];
  let instances: Instances;
  let deployer: Deployer;
  let apps: AppService;
  let app: App;
  /** While set, builds wait for it. */
  let buildGate: Promise<void> | null = null;

  before(async () => {
    ({ server, port } = await listen());
  });
  after(() => server.close());

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "pier-conc-"));
    store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
    ({ engine, servers } = deployEngine(port));
    buildGate = null;
    const logger = pino({ level: "silent" });
    instances = fakeInstances({ engine, store });
    const runtime: Runtime = {
      settings: () => ({
        settings: { httpPort: port, tcpPort: null, ipv6Subnet: null, mountDockerSocket: false, cmd: null },
        errors: [],
      }),
      build: async (ctx) => {
        await buildGate;
        return builtImage(engine, `pier-app/${ctx.app.id}:${ctx.deployment.id}`);
      },
    };
    ({ deployer, apps } = deployServices({
      store,
      engine,
      instances,
      runtime,
      repo: oneCommitRepo(dir),
      logger,
    }));
    app = await apps.create({ name: "web", type: "docker" });
    assert.equal(
      (await waitEnd(await apps.redeploy(app, { withoutCache: false, cause: "first" }))).state,
      "succeeded",
    );
    app = await apps.get("web");
  });

  afterEach(() => {
    for (const s of servers) s.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function waitEnd(d: Deployment): Promise<Deployment> {
    for (let i = 0; i < 500; i++) {
      const now = await store.getDeployment(d.id);
      if (now && ["succeeded", "failed", "cancelled"].includes(now.state)) return now;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`deployment ${d.id} did not end`);
  }

  /** The app is consistent: the store's size runs, all of the current release, nothing else. */
  async function assertConsistent(instancesWanted: number) {
    // The previous release's instances are retired after the switch (in the background).
    await new Promise((r) => setTimeout(r, 100));
    const a = await apps.get("web");
    const release = await store.currentRelease(a.id);
    const running = engine.instances.filter((c) => c.running);
    assert.equal(a.instances, instancesWanted);
    assert.equal(running.length, instancesWanted, "the recorded size runs");
    assert.ok(running.every((c) => c.labels["pier.deployment"] === release?.deploymentId));
  }

  test("a start keeps the sandboxes it was given while a preparation prunes surplus ones", async () => {
    // A scale's start (2 instances) waits on the engine between its two instances while the previous
    // deploy's preparation (1 instance, surplus pruned) runs: it once removed the second one's sandbox.
    const held = gate();
    let calls = 0;
    engine.before.runInstance = async () => {
      if (++calls === 1) await held.wait;
    };
    const want = { httpPort: port, tcpPort: null, ipv6Subnet: null };
    const starting = instances.start(
      {
        appId: app.id,
        appName: app.name,
        deploymentId: "dep-scale",
        image: builtImage(engine, "img"),
        env: {},
        httpPort: port,
        tcpPort: null,
        cmd: null,
        flavor: "nano",
        instances: 2,
        ipv6Subnet: null,
        mountDockerSocket: false,
        restart: true,
        buckets: [],
      },
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 20));
    await instances.prepare(app.id, want, 1);
    held.open();
    const started = await starting;
    assert.equal(started.length, 2);
    assert.equal(new Set(started.map((i) => i.labels["pier.sandbox"])).size, 2);
  });

  test("a scale and a restart submitted together both succeed, in order, and the app has the new size", async () => {
    for (const order of [
      ["scale", "restart"],
      ["restart", "scale"],
    ] as const) {
      const size = order[0] === "scale" ? 2 : 3;
      const submit = {
        scale: () => apps.patch(app, { instances: size }).then((r) => r.deployment),
        restart: () => apps.redeploy(app, { withoutCache: false, cause: "restart" }),
      };
      const [a, b] = await Promise.all([submit[order[0]](), submit[order[1]]()]);
      assert.ok(a && b);
      assert.equal((await waitEnd(a)).state, "succeeded", order.join(" then "));
      assert.equal((await waitEnd(b)).state, "succeeded", order.join(" then "));
      await assertConsistent(size);
      app = await apps.get("web");
    }
  });

  test("a restart that supersedes a queued scale applies its size too", async () => {
    const held = gate();
    buildGate = held.wait;
    const building = await apps.redeploy(app, { withoutCache: false, cause: "slow restart" });
    const scale = (await apps.patch(app, { instances: 2 })).deployment;
    const restart = await apps.redeploy(app, { withoutCache: false, cause: "restart" });
    held.open();
    buildGate = null;
    assert.equal((await waitEnd(building)).state, "succeeded");
    const superseded = await waitEnd(scale!);
    assert.equal(superseded.state, "cancelled");
    assert.match(superseded.reason ?? "", /applies this scale too/);
    assert.equal((await waitEnd(restart)).state, "succeeded");
    await assertConsistent(2);
  });

  test("a scale that would supersede a queued push is refused with APP_BUSY (409), naming it", async () => {
    const held = gate();
    buildGate = held.wait;
    const building = await apps.redeploy(app, { withoutCache: false, cause: "slow restart" });
    const current = await store.currentRelease(app.id);
    const push = await deployer.enqueue(app, {
      commit: current!.commit,
      cause: "push",
      withoutCache: false,
      gitEnv: {},
    });
    const refused = await apps.patch(app, { instances: 2 }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof PierError);
    assert.equal(refused.code, "APP_BUSY");
    assert.equal(refused.status, 409);
    assert.match(refused.message, new RegExp(`${push.deployment.id} \\(push\\) is queued`));
    assert.ok(refused.hint);
    held.open();
    buildGate = null;
    assert.equal((await waitEnd(building)).state, "succeeded");
    assert.equal((await waitEnd(push.deployment)).state, "succeeded");
    await assertConsistent(1);
  });

  test("a deploy submitted while the app is being stopped is refused with APP_BUSY; the app ends stopped", async () => {
    const held = gate();
    buildGate = held.wait;
    const building = await apps.redeploy(app, { withoutCache: false, cause: "slow restart" });
    const stopping = apps.stop(app);
    await new Promise((r) => setTimeout(r, 20));
    const refused = await apps.redeploy(app, { withoutCache: false, cause: "restart" }).then(
      () => null,
      (e: unknown) => e,
    );
    held.open();
    buildGate = null;
    await stopping;
    assert.ok(refused instanceof PierError);
    assert.equal(refused.code, "APP_BUSY");
    assert.match(refused.message, /web is being stopped/);
    assert.equal((await waitEnd(building)).state, "cancelled");
    assert.equal((await apps.get("web")).stopped, true);
    assert.deepEqual(
      engine.instances.filter((c) => c.running),
      [],
    );
  });

  test("a scale of an app whose first deploy runs is refused (its size would be recorded, not run)", async () => {
    const other = await apps.create({ name: "new", type: "docker" });
    const held = gate();
    buildGate = held.wait;
    const first = await apps.redeploy(other, { withoutCache: false, cause: "first" });
    await assert.rejects(
      apps.patch(other, { instances: 3 }),
      (e: PierError) => e.code === "APP_BUSY" && e.status === 409,
    );
    held.open();
    buildGate = null;
    assert.equal((await waitEnd(first)).state, "succeeded");
    assert.equal((await apps.get("new")).instances, 1);
  });
});
