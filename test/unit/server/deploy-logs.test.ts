// The deploy log: every line and reason masked in one place, capped per deployment, pruned per app.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { Store } from "../../../src/core/ports.js";
import { DeployLogs } from "../../../src/server/deploy-logs.js";
import { newApp } from "../../conformance/store.js";
import { MemoryStore } from "../../support/memory-store.js";

/** The in-memory store with app-1 and its deployments; it records the prunes DeployLogs asks for. */
class LogStore extends MemoryStore {
  pruned: [string, number][] = [];
  override async pruneDeployLogs(appId: string, keep: number): Promise<number> {
    this.pruned.push([appId, keep]);
    return super.pruneDeployLogs(appId, keep);
  }
  /** Replaces app-1's variables. */
  async setEnv(env: Record<string, string>): Promise<void> {
    await this.changeEnv("app-1", env, Object.keys(await this.getEnv("app-1")));
  }
}

async function logStore(): Promise<LogStore> {
  const store = new LogStore();
  await store.createApp(newApp("web", { id: "app-1" }));
  for (const id of ["dep-1", "dep-x", "dep-9"])
    await store.createDeployment({ id, appId: "app-1", commit: "c", cause: "push", withoutCache: false });
  return store;
}

const text = async (s: Store, id: string) => (await s.deployLog(id)).map((l) => l.line);

describe("DeployLogs", () => {
  it("masks every line it stores and streams, and the reason given to mask()", async () => {
    const store = await logStore();
    await store.setEnv({ DB_PASS: "hunter2hunter2", CC_NPM_REGISTRY: "https://user:pass@npm.example.com" });
    await store.setAppSecret(
      "app-1",
      "ssh_private_key",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAsecretkeyline\n-----END OPENSSH PRIVATE KEY-----",
    );
    const logs = new DeployLogs(store);
    await logs.open("dep-1", "app-1");
    const streamed: string[] = [];
    await logs.follow(
      "dep-1",
      (l) => streamed.push(l.line),
      () => undefined,
    );
    logs.write("dep-1", "connecting with hunter2hunter2");
    logs.write("dep-1", 'CC_NPM_REGISTRY="https://user:pass@npm.example.com" is not a registry host');
    logs.write("dep-1", "key AAAAsecretkeyline");
    const reason = logs.mask("dep-1", "Invalid settings: https://user:pass@npm.example.com");
    assert.equal(reason, "Invalid settings: https://user:****@npm.example.com");
    const want = [
      "connecting with ****",
      'CC_NPM_REGISTRY="https://user:****@npm.example.com" is not a registry host',
      "key ****",
    ];
    assert.deepEqual(await text(store, "dep-1"), want);
    assert.deepEqual(streamed, want);
  });

  it("a variable set after the deployment was queued is masked once refreshed; the old ones still are", async () => {
    const store = await logStore();
    await store.setEnv({ OLD_TOKEN: "oldtoken" });
    const logs = new DeployLogs(store);
    await logs.open("dep-1", "app-1");
    await store.setEnv({ NEW_TOKEN: "newtoken" });
    await logs.refreshMasker("dep-1");
    logs.write("dep-1", "oldtoken newtoken");
    assert.deepEqual(await text(store, "dep-1"), ["**** ****"]);
  });

  it("masks the secrets its links give the app (an add-on's token and URL password), as its own", async () => {
    const store = await logStore();
    const linked = async (appId: string): Promise<Record<string, string>> =>
      appId === "app-1"
        ? { KV_TOKEN: "kvtoken-0123456789", POSTGRESQL_ADDON_URI: "postgresql://pier:pgpw-4242@db:5432/x" }
        : {};
    const logs = new DeployLogs(store, undefined, linked);
    await logs.open("dep-1", "app-1");
    logs.write("dep-1", "redis-cli -a kvtoken-0123456789; psql password pgpw-4242");
    assert.deepEqual(await text(store, "dep-1"), ["redis-cli -a ****; psql password ****"]);
  });

  it("masks URL credentials in a line of a deployment that is not open", async () => {
    const store = await logStore();
    const logs = new DeployLogs(store);
    logs.write("dep-x", "https://a:b@h");
    assert.deepEqual(await text(store, "dep-x"), ["https://a:****@h"]);
  });

  it("keeps at most N lines, says where the log was cut, and keeps the outcome", async () => {
    const store = await logStore();
    const logs = new DeployLogs(store, { lines: 3, bytes: 1e6, keptLogs: 50 });
    await logs.open("dep-1", "app-1");
    for (let i = 1; i <= 10; i++) logs.write("dep-1", `line ${i}`);
    logs.write("dep-1", "The build failed.", { final: true });
    logs.write("dep-1", "Deployment failed.", { final: true });
    logs.close("dep-1");
    const lines = await text(store, "dep-1");
    assert.deepEqual(lines.slice(0, 3), ["line 1", "line 2", "line 3"]);
    assert.match(lines[3] ?? "", /^\.\.\. log cut here: 7 more line\(s\) not kept/);
    assert.deepEqual(lines.slice(4), ["The build failed.", "Deployment failed."]);
  });

  it("keeps at most N bytes", async () => {
    const store = await logStore();
    const logs = new DeployLogs(store, { lines: 1000, bytes: 100, keptLogs: 50 });
    await logs.open("dep-1", "app-1");
    for (let i = 0; i < 10; i++) logs.write("dep-1", "x".repeat(30));
    logs.close("dep-1");
    const lines = await text(store, "dep-1");
    assert.equal(lines.length, 4);
    assert.match(lines[3] ?? "", /log cut here: 7 more line\(s\) not kept/);
  });

  it("prunes the app's old deployment logs when a deployment ends", async () => {
    const store = await logStore();
    const logs = new DeployLogs(store);
    await logs.open("dep-1", "app-1");
    logs.close("dep-1");
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(store.pruned, [["app-1", 50]]);
  });

  it("a follower that reads too slowly gets the lines it kept, a marker for those it lost, then the end", async () => {
    const store = await logStore();
    const logs = new DeployLogs(store);
    await logs.open("dep-1", "app-1");
    logs.write("dep-1", "before");
    const slow = await logs.follower("dep-1", { items: 3, bytes: 1e6 });
    const fast = await logs.follower("dep-1", { items: 3, bytes: 1e6 });
    const fastLines: string[] = [];
    const fastDone = (async () => {
      for await (const l of fast.lines) fastLines.push("line" in l ? l.line : `dropped ${l.dropped}`);
    })();
    for (let i = 0; i < 10; i++) {
      logs.write("dep-1", `line ${i}`);
      await new Promise((r) => setImmediate(r)); // the fast follower reads between lines
    }
    logs.write("dep-1", "Deployment succeeded.", { final: true });
    logs.close("dep-1");
    const slowLines: string[] = [];
    for await (const l of slow.lines) slowLines.push("line" in l ? l.line : `dropped ${l.dropped}`);
    await fastDone;
    // The lines so far are never dropped (they are the log's own); 3 new ones waited, 8 were lost.
    assert.deepEqual(slowLines, ["before", "line 0", "line 1", "line 2", "dropped 8"]);
    assert.equal(fastLines.length, 12, "the other follower lost nothing");
    assert.equal(fastLines.at(-1), "Deployment succeeded.");
    assert.equal((await store.deployLog("dep-1")).length, 12, "the log itself keeps every line");
  });

  it("a follower of a finished deployment reads its stored log", async () => {
    const store = await logStore();
    await store.appendDeployLog("dep-9", [{ at: "t", line: "old" }]);
    const logs = new DeployLogs(store);
    const f = await logs.follower("dep-9");
    const got: unknown[] = [];
    for await (const l of f.lines) got.push(l);
    assert.deepEqual(got, [{ at: "t", line: "old" }]);
  });

  it("a line that arrives after its deployment's app was deleted is dropped, and pier server lives on", async () => {
    // A killed build container's last output can come after the deployment ended and the app went with
    // its deployments: the store refuses the line (foreign key), and that rejection, unhandled, ended the
    // process.
    const dir = mkdtempSync(join(tmpdir(), "pier-logs-"));
    const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      await store.createApp(newApp("gone", { type: "phpserver", flavor: "XS" }));
      await store.createDeployment({
        id: "dep-gone",
        appId: "app-gone",
        commit: "abc",
        cause: "push",
        withoutCache: false,
      });
      const logs = new DeployLogs(store);
      await logs.open("dep-gone", "app-gone");
      logs.write("dep-gone", "building");
      logs.close("dep-gone");
      await store.deleteApp("app-gone");
      logs.write("dep-gone", "a late line of the killed build");
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
