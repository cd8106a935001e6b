// The store's schema: its changes in order, and their application at open (schema_migrations).
import type Database from "better-sqlite3";
import { ACCESS_MIGRATION } from "./sqlite-access.js";
import { ADDONS_MIGRATION } from "./sqlite-addons.js";
import { DOMAINS_MIGRATION } from "./sqlite-domains.js";
import { now } from "./sqlite-rows.js";

/** Schema changes, applied in order once each. Never edit a shipped entry: add one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE apps (
     id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
     flavor TEXT NOT NULL, build_flavor TEXT NOT NULL, instances INTEGER NOT NULL,
     task TEXT, allow_docker_socket INTEGER NOT NULL DEFAULT 0, stopped INTEGER NOT NULL DEFAULT 0,
     current_release_id TEXT, created_at TEXT NOT NULL);
   CREATE TABLE env (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, name TEXT NOT NULL,
     value TEXT NOT NULL, PRIMARY KEY (app_id, name));
   CREATE TABLE deployments (id TEXT PRIMARY KEY, app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
     state TEXT NOT NULL, commit_sha TEXT NOT NULL, cause TEXT NOT NULL, without_cache INTEGER NOT NULL,
     reason TEXT, release_id TEXT, created_at TEXT NOT NULL, building_at TEXT, deploying_at TEXT, finished_at TEXT);
   CREATE INDEX deployments_app ON deployments(app_id, created_at);
   CREATE TABLE deploy_logs (deployment_id TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL, at TEXT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (deployment_id, seq));
   CREATE TABLE releases (id TEXT PRIMARY KEY, app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
     number INTEGER NOT NULL, deployment_id TEXT NOT NULL, image TEXT NOT NULL, commit_sha TEXT NOT NULL,
     env_json TEXT NOT NULL, http_port INTEGER NOT NULL, tcp_port INTEGER, created_at TEXT NOT NULL,
     UNIQUE (app_id, number));
   CREATE TABLE ssh_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, fingerprint TEXT NOT NULL UNIQUE,
     algo TEXT NOT NULL, blob TEXT NOT NULL, created_at TEXT NOT NULL);
   CREATE TABLE api_tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
   CREATE TABLE instance_exits (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, container_id TEXT NOT NULL,
     instance INTEGER NOT NULL, exit_code INTEGER NOT NULL, at TEXT NOT NULL);
   CREATE INDEX instance_exits_container ON instance_exits(container_id);`,
  `CREATE TABLE app_secrets (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, name TEXT NOT NULL,
     value TEXT NOT NULL, PRIMARY KEY (app_id, name));
   ALTER TABLE ssh_keys ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0;`,
  // density: the subnet of each network Pier creates, from PIER_SUBNET_POOL (ADR 0007). No foreign key on
  // the app: a deleted app's network may outlive its row until the engine lets it go.
  `CREATE TABLE subnets (subnet TEXT PRIMARY KEY, network TEXT NOT NULL UNIQUE, app_id TEXT NOT NULL,
     created_at TEXT NOT NULL);
   CREATE INDEX subnets_app ON subnets(app_id);`,
  ACCESS_MIGRATION, // tenancy
  ADDONS_MIGRATION, // addons
  DOMAINS_MIGRATION, // https
  // limits: an app's ceiling set by an admin (ADR 0022); NULL: the server's default.
  `CREATE TABLE app_limits (app_id TEXT PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
     max_flavor TEXT, max_instances INTEGER, max_memory_mib INTEGER);`,
  // Whether a release is a task, recorded when it is made (issue 16: one rule, core/app-state.ts isTask).
  // Releases of apps created with --task are tasks; the others without a value are read from their CC_TASK.
  `ALTER TABLE releases ADD COLUMN task INTEGER;
   UPDATE releases SET task = 1 WHERE app_id IN (SELECT id FROM apps WHERE task IS NOT NULL);`,
  // Swarm add-ons: the node an add-on is pinned to with its data (ADR 0030); NULL on one dockerd.
  "ALTER TABLE addons ADD COLUMN node TEXT;",
];

/** Applies the migrations the database has not had yet, each in its own transaction. */
export function migrate(db: Database.Database): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
  );
  const row = db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as {
    v: number | null;
  };
  const applied = row.v ?? 0;
  MIGRATIONS.forEach((sql, i) => {
    const version = i + 1;
    if (version <= applied) return;
    db.transaction(() => {
      db.exec(sql);
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(version, now());
    })();
  });
}
