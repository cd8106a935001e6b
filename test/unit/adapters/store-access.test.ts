// The SQLite store's keys, grants and tokens (src/adapters/store/sqlite-access.ts), on a real database file:
// the upgrade of a database from before grants, grants and their removal, what goes with an app, tokens.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { MIGRATIONS, SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { PierError } from "../../../src/core/errors.js";

const dir = mkdtempSync(join(tmpdir(), "pier-store-access-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const open = (file = join(dir, `s${++n}.db`)) =>
  new SqliteStore(file, SecretBox.fromFile(join(dir, "secret.key")));
const key = (i: number) => ({
  id: `key-${i}`,
  name: `k${i}`,
  fingerprint: `SHA256:fp${i}`,
  algo: "ssh-ed25519",
  blob: `blob${i}`,
});
const app = (name: string) => ({
  id: `app-${name}`,
  name,
  type: "docker" as const,
  flavor: "nano" as const,
  buildFlavor: "M" as const,
  instances: 1,
  task: null,
});
const token = (name: string, o: { appId?: string | null; bootstrap?: boolean; hash?: string } = {}) => ({
  id: `tok-${name}-${++n}`,
  name,
  hash: o.hash ?? `hash-${name}`,
  appId: o.appId ?? null,
  readOnly: false,
  bootstrap: o.bootstrap ?? false,
});

describe("SQLite store: keys and tokens", () => {
  it("a database from before grants: its keys stay admin keys, its tokens bootstrap tokens", async () => {
    const file = join(dir, "old.db");
    const db = new Database(file);
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
    for (const [i, sql] of MIGRATIONS.slice(0, 2).entries()) {
      db.exec(sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, 'then')").run(i + 1);
    }
    db.prepare(
      "INSERT INTO ssh_keys (id, name, fingerprint, algo, blob, read_only, created_at) VALUES ('key-old','old','SHA256:old','ssh-ed25519','b',1,'then')",
    ).run();
    db.prepare(
      "INSERT INTO api_tokens (id, name, hash, created_at) VALUES ('tok-old','admin','h-old','then')",
    ).run();
    db.close();
    const store = open(file);
    const k = await store.findSshKeyByBlob("ssh-ed25519", "b");
    assert.deepEqual(
      { global: k?.global, readOnly: k?.readOnly, apps: k?.apps },
      { global: true, readOnly: true, apps: [] },
    );
    const t = await store.findApiTokenByHash("h-old");
    assert.deepEqual(
      { app: t?.app, bootstrap: t?.bootstrap, readOnly: t?.readOnly },
      { app: null, bootstrap: true, readOnly: false },
    );
    store.close();
  });

  it("grants: one key on several apps, each push or fetch; a second add changes it; removal", async () => {
    const store = open();
    await store.createApp(app("web"));
    await store.createApp(app("lib"));
    const first = await store.grantSshKey(key(1), "app-web", false);
    assert.equal(first.created, true);
    assert.deepEqual(first.key.apps, [{ id: "app-web", name: "web", readOnly: false }]);
    assert.equal(first.key.global, false);
    await store.grantSshKey({ ...key(1), id: "key-ignored" }, "app-lib", true);
    const again = await store.grantSshKey(key(1), "app-web", true);
    assert.equal(again.created, false);
    const all = await store.listSshKeys();
    assert.equal(all.length, 1, "one key, two grants");
    assert.deepEqual(all[0]?.apps, [
      { id: "app-lib", name: "lib", readOnly: true },
      { id: "app-web", name: "web", readOnly: true },
    ]);
    assert.deepEqual((await store.listSshKeys("app-lib"))[0]?.apps, [
      { id: "app-lib", name: "lib", readOnly: true },
    ]);
    assert.equal(await store.revokeSshKeyGrant("key-1", "app-lib"), true);
    assert.equal(await store.revokeSshKeyGrant("key-1", "app-lib"), false);
    assert.ok(await store.findSshKey("key-1"), "still granted on web");
    await store.grantSshKey(key(4), "app-web", false);
    await store.grantSshKey(key(4), "app-lib", false);
    await store.deleteApp("app-web");
    assert.equal(await store.findSshKey("key-1"), null, "a key whose only app is gone goes too");
    assert.deepEqual((await store.findSshKey("key-4"))?.apps, [
      { id: "app-lib", name: "lib", readOnly: false },
    ]);
    store.close();
  });

  it("an admin key cannot be granted on an app, nor a granted key added as admin", async () => {
    const store = open();
    await store.createApp(app("web"));
    await store.addSshKey({ ...key(2), readOnly: false });
    await assert.rejects(
      store.grantSshKey(key(2), "app-web", false),
      (e: PierError) => e.code === "CONFLICT",
    );
    await store.grantSshKey(key(3), "app-web", false);
    await assert.rejects(
      store.addSshKey({ ...key(3), readOnly: false }),
      (e: PierError) => e.code === "SSH_KEY_EXISTS",
    );
    store.close();
  });

  it("tokens: unique names, scoped to an app and gone with it, revoked by name, one bootstrap kept", async () => {
    const store = open();
    await store.createApp(app("web"));
    await store.addApiToken(token("admin", { bootstrap: true, hash: "boot-1" }));
    await store.addApiToken(token("admin", { bootstrap: true, hash: "boot-2" }));
    const ci = await store.addApiToken(token("ci", { appId: "app-web" }));
    assert.deepEqual(ci.app, { id: "app-web", name: "web" });
    await assert.rejects(store.addApiToken(token("ci")), (e: PierError) => e.code === "CONFLICT");
    await store.addApiToken(token("ops"));
    assert.equal(await store.pruneBootstrapTokens("boot-2"), 1);
    assert.equal(await store.findApiTokenByHash("boot-1"), null);
    assert.ok(await store.findApiTokenByHash("boot-2"));
    assert.equal(await store.deleteApiToken("admin"), false, "the bootstrap token is not revoked by name");
    assert.equal(await store.deleteApiToken("ops"), true);
    assert.equal(await store.findApiTokenByHash("hash-ops"), null);
    await store.deleteApp("app-web");
    assert.equal(await store.findApiTokenByHash("hash-ci"), null, "an app's tokens go with it");
    assert.deepEqual(
      (await store.listApiTokens()).map((t) => t.name),
      ["admin"],
    );
    store.close();
  });
});
