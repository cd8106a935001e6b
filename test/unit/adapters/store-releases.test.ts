// The SQLite store's upgrade of releases made before a release recorded whether it is a task (issue 16):
// an app created with --task had task releases, and an app whose variables said CC_TASK=true too.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import Database from "better-sqlite3";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { MIGRATIONS } from "../../../src/adapters/store/sqlite-migrations.js";

const dir = mkdtempSync(join(tmpdir(), "pier-store-releases-"));
after(() => rmSync(dir, { recursive: true, force: true }));

it("releases from before the task column read as tasks exactly when their app or their variables made them one", async () => {
  const file = join(dir, "old.db");
  const db = new Database(file);
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
  const before = MIGRATIONS.findIndex((m) => m.includes("ALTER TABLE releases ADD COLUMN task"));
  assert.ok(before > 0, "the migration that adds the column");
  for (const [i, sql] of MIGRATIONS.slice(0, before).entries()) {
    db.exec(sql);
    db.prepare("INSERT INTO schema_migrations VALUES (?, 'then')").run(i + 1);
  }
  const app = db.prepare(
    "INSERT INTO apps (id, name, type, flavor, build_flavor, instances, task, created_at) VALUES (?,?,'node','nano','M',1,?,'then')",
  );
  app.run("app-cron", "cron", "node job.js");
  app.run("app-batch", "batch", null);
  app.run("app-web", "web", null);
  const rel = db.prepare(
    "INSERT INTO releases (id, app_id, number, deployment_id, image, commit_sha, env_json, http_port, tcp_port, created_at) VALUES (?,?,1,'d','img','c',?,8080,NULL,'then')",
  );
  rel.run("rel-cron", "app-cron", JSON.stringify({}));
  rel.run("rel-batch", "app-batch", JSON.stringify({ CC_TASK: "true" }));
  rel.run("rel-web", "app-web", JSON.stringify({ CC_TASK: "false" }));
  db.close();
  const store = new SqliteStore(file, SecretBox.fromFile(join(dir, "secret.key")));
  const task = async (id: string) => (await store.getRelease(id))?.task;
  assert.deepEqual(
    [await task("rel-cron"), await task("rel-batch"), await task("rel-web")],
    [true, true, false],
  );
  store.close();
});
