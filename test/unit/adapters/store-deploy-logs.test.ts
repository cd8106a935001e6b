// The store prunes old deployments' logs (the deployments stay) and keeps variables as own properties.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";

async function storeWithApps(): Promise<SqliteStore> {
  const dir = mkdtempSync(join(tmpdir(), "pier-store-"));
  const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromKey(randomBytes(32)));
  for (const id of ["app-1", "app-2"]) {
    await store.createApp({
      id,
      name: id.replace("app-", "n"),
      type: "docker",
      flavor: "nano",
      buildFlavor: "M",
      instances: 1,
      task: null,
    });
  }
  return store;
}

test("pruneDeployLogs keeps the logs of the newest N deployments of the app, and only of that app", async () => {
  const store = await storeWithApps();
  for (let i = 1; i <= 5; i++) {
    for (const app of ["app-1", "app-2"]) {
      const id = `dep-${app}-${i}`;
      await store.createDeployment({
        id,
        appId: app,
        commit: "c".repeat(40),
        cause: "t",
        withoutCache: false,
      });
      await store.appendDeployLog(id, [{ at: new Date().toISOString(), line: `line of ${id}` }]);
    }
  }
  assert.equal(await store.pruneDeployLogs("app-1", 2), 3);
  for (let i = 1; i <= 5; i++) {
    const kept = (await store.deployLog(`dep-app-1-${i}`)).length;
    assert.equal(kept, i >= 4 ? 1 : 0, `dep-app-1-${i}`);
    assert.equal((await store.deployLog(`dep-app-2-${i}`)).length, 1);
  }
  assert.equal((await store.listDeployments("app-1")).length, 5, "the deployments themselves stay");
  assert.equal(await store.pruneDeployLogs("app-1", 2), 0);
  store.close();
});

test("a variable stored under an Object.prototype name comes back as a variable", async () => {
  const store = await storeWithApps();
  await store.changeEnv("app-1", Object.fromEntries([["__proto__", "x"]]) as Record<string, string>, []);
  const vars = await store.getEnv("app-1");
  assert.equal(Object.getPrototypeOf(vars), Object.prototype);
  assert.deepEqual(Object.entries(vars), [["__proto__", "x"]]);
  store.close();
});
