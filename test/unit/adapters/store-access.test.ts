// The SQLite store's keys and tokens (src/adapters/store/sqlite-access.ts), on a real database file: the
// upgrade of a database from before grants. Their contract (grants, what goes with an app, tokens) is the
// Store conformance suite's (test/conformance/store-access.ts), run on this store by store-conformance.test.ts.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { MIGRATIONS } from "../../../src/adapters/store/sqlite-migrations.js";

const dir = mkdtempSync(join(tmpdir(), "pier-store-access-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const open = (file = join(dir, `s${++n}.db`)) =>
  new SqliteStore(file, SecretBox.fromFile(join(dir, "secret.key")));
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
});
