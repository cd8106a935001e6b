/** The Store's contract for deployments, their logs and releases (part of test/conformance/store.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Store } from "../../src/core/ports.js";
import { codeOf, newApp, type StoreFactory, withStore } from "./store.js";

export const release = (appId: string, id: string, deploymentId: string) => ({
  id,
  appId,
  deploymentId,
  image: `pier-app/${appId}:${deploymentId}`,
  commit: "c".repeat(40),
  env: { PORT: "8080", SECRET: "s3cret value" },
  httpPort: 8080,
  tcpPort: null,
  task: false,
});

export const deploy = (store: Store, appId: string, id: string) =>
  store.createDeployment({ id, appId, commit: "c".repeat(40), cause: "git push", withoutCache: false });

export function deploymentsContract(factory: StoreFactory): void {
  describe("deployments and their logs", () => {
    it(
      "a deployment is created queued, updated field by field, listed newest first with a limit",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        const d = await deploy(store, "app-web", "dep-1");
        assert.deepEqual(
          { ...d, createdAt: "" },
          {
            id: "dep-1",
            appId: "app-web",
            state: "queued",
            commit: "c".repeat(40),
            cause: "git push",
            withoutCache: false,
            reason: null,
            releaseId: null,
            createdAt: "",
            buildingAt: null,
            deployingAt: null,
            finishedAt: null,
          },
        );
        for (const id of ["dep-2", "dep-3"]) await deploy(store, "app-web", id);
        const at = new Date().toISOString();
        const u = await store.updateDeployment("dep-2", {
          state: "building",
          buildingAt: at,
          reason: undefined,
        });
        assert.deepEqual([u.state, u.buildingAt, u.reason], ["building", at, null]);
        assert.deepEqual(await store.getDeployment("dep-2"), u);
        const ids = async (limit?: number) =>
          (await store.listDeployments("app-web", limit)).map((x) => x.id);
        assert.deepEqual(await ids(), ["dep-3", "dep-2", "dep-1"]);
        assert.deepEqual(await ids(2), ["dep-3", "dep-2"]);
        assert.equal(await store.getDeployment("nope"), null);
        assert.equal(
          await codeOf(store.updateDeployment("nope", { state: "failed" })),
          "DEPLOYMENT_NOT_FOUND",
        );
      }),
    );

    it(
      "unfinished deployments: those not succeeded, failed or cancelled, oldest first",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        const states = ["succeeded", "building", "failed", "queued", "cancelled", "deploying"] as const;
        for (const [i, state] of states.entries()) {
          await deploy(store, "app-web", `dep-${i}`);
          await store.updateDeployment(`dep-${i}`, { state });
        }
        assert.deepEqual(
          (await store.unfinishedDeployments()).map((d) => d.id),
          ["dep-1", "dep-3", "dep-5"],
        );
      }),
    );

    it(
      "a deploy log keeps its lines in order across appends; pruning keeps the newest N of the app only",
      withStore(factory, async ({ store }) => {
        for (const n of ["web", "api"]) await store.createApp(newApp(n));
        for (let i = 1; i <= 4; i++)
          for (const app of ["app-web", "app-api"]) {
            await deploy(store, app, `${app}-${i}`);
            await store.appendDeployLog(`${app}-${i}`, [
              { at: "2026-11-20T12:00:00.000Z", line: `first of ${i}` },
              { at: "2026-11-20T12:00:01.000Z", line: `second of ${i}` },
            ]);
          }
        await store.appendDeployLog("app-web-4", [{ at: "2026-11-20T12:00:02.000Z", line: "third" }]);
        await store.appendDeployLog("app-web-4", []);
        assert.deepEqual(
          (await store.deployLog("app-web-4")).map((l) => l.line),
          ["first of 4", "second of 4", "third"],
        );
        assert.equal(await store.pruneDeployLogs("app-web", 2), 4, "the lines of the two oldest");
        assert.deepEqual(await store.deployLog("app-web-1"), []);
        assert.equal((await store.deployLog("app-web-3")).length, 2);
        assert.equal((await store.deployLog("app-api-1")).length, 2, "another app's logs stay");
        assert.equal((await store.listDeployments("app-web")).length, 4, "the deployments stay");
        assert.equal(await store.pruneDeployLogs("app-web", 2), 0);
        assert.deepEqual(await store.deployLog("nope"), []);
      }),
    );
  });
}

export function releasesContract(factory: StoreFactory): void {
  describe("releases", () => {
    it(
      "numbered 1, 2, 3 per app, listed newest first, their variables round-trip",
      withStore(factory, async ({ store }) => {
        for (const n of ["web", "api"]) await store.createApp(newApp(n));
        await deploy(store, "app-web", "dep-1");
        await deploy(store, "app-api", "dep-2");
        const r1 = await store.createRelease(release("app-web", "rel-1", "dep-1"));
        const r2 = await store.createRelease(release("app-web", "rel-2", "dep-1"));
        const other = await store.createRelease(release("app-api", "rel-3", "dep-2"));
        assert.deepEqual([r1.number, r2.number, other.number], [1, 2, 1]);
        assert.deepEqual(r1.env, { PORT: "8080", SECRET: "s3cret value" });
        assert.deepEqual(await store.getRelease("rel-1"), r1);
        assert.deepEqual(
          (await store.listReleases("app-web")).map((r) => r.id),
          ["rel-2", "rel-1"],
        );
        assert.equal(await store.getRelease("nope"), null);
        assert.equal(await store.currentRelease("app-web"), null, "created is not current");
        await store.setCurrentRelease("app-web", "rel-1");
        assert.deepEqual(await store.currentRelease("app-web"), r1);
        await store.setCurrentRelease("app-web", null);
        assert.equal(await store.currentRelease("app-web"), null);
      }),
    );

    it(
      "whether a release is a task is recorded with it and read back as recorded",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await deploy(store, "app-web", "dep-1");
        const task = await store.createRelease({ ...release("app-web", "rel-1", "dep-1"), task: true });
        const web = await store.createRelease(release("app-web", "rel-2", "dep-1"));
        assert.deepEqual([task.task, web.task], [true, false]);
        assert.equal((await store.getRelease("rel-1"))?.task, true);
        assert.equal((await store.getRelease("rel-2"))?.task, false);
      }),
    );

    it(
      "commitRelease records the release, the app's size, the current release and the deployment at once",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await deploy(store, "app-web", "dep-1");
        const at = "2026-11-20T12:00:00.000Z";
        const r = await store.commitRelease(release("app-web", "rel-1", "dep-1"), { instances: 2 }, at);
        assert.equal(r.number, 1);
        assert.equal((await store.findApp("web"))?.instances, 2);
        assert.deepEqual(await store.currentRelease("app-web"), r);
        const d = await store.getDeployment("dep-1");
        assert.deepEqual([d?.state, d?.releaseId, d?.finishedAt], ["succeeded", "rel-1", at]);
      }),
    );

    it(
      "commitRelease of an unknown deployment changes nothing (DEPLOYMENT_NOT_FOUND)",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await deploy(store, "app-web", "dep-1");
        const first = await store.commitRelease(
          release("app-web", "rel-1", "dep-1"),
          {},
          new Date().toISOString(),
        );
        const bad = store.commitRelease(release("app-web", "rel-2", "dep-gone"), { instances: 5 }, "x");
        assert.equal(await codeOf(bad), "DEPLOYMENT_NOT_FOUND");
        assert.equal(await store.getRelease("rel-2"), null, "no release");
        assert.equal((await store.findApp("web"))?.instances, 1, "the app's size as it was");
        assert.deepEqual(await store.currentRelease("app-web"), first, "the current release as it was");
        const next = await store.createRelease(release("app-web", "rel-3", "dep-1"));
        assert.equal(next.number, 2, "no number was taken");
      }),
    );
  });
}
