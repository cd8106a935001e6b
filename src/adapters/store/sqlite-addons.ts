import type Database from "better-sqlite3";
import type { Addon, AddonBackup, AddonCredentials, AddonKind } from "../../core/addons.js";
import { PierError } from "../../core/errors.js";
import type { App, Flavor } from "../../core/model.js";
import type { AddonStore } from "../../core/ports.js";
import type { SecretBox } from "../secret-box.js";
import { now, type Row, SqliteTables, str } from "./sqlite-rows.js";

/** The SQLite store's add-ons, links, published variables and backups (ADR 0015). */

/**
 * The migration of add-ons; appended to the store's MIGRATIONS. An add-on's credentials and an app's
 * published values are sealed (SecretBox). A link goes with its app (cascade); an add-on is deleted only
 * once its links are (the service refuses, or removes them with --force).
 */
export const ADDONS_MIGRATION = `CREATE TABLE addons (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
     flavor TEXT NOT NULL, credentials TEXT NOT NULL, created_at TEXT NOT NULL);
   CREATE TABLE addon_links (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
     addon_id TEXT NOT NULL REFERENCES addons(id) ON DELETE CASCADE, created_at TEXT NOT NULL,
     PRIMARY KEY (app_id, addon_id));
   CREATE INDEX addon_links_addon ON addon_links(addon_id);
   CREATE TABLE app_links (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
     target_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, created_at TEXT NOT NULL,
     PRIMARY KEY (app_id, target_id));
   CREATE TABLE published_env (app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, name TEXT NOT NULL,
     value TEXT NOT NULL, PRIMARY KEY (app_id, name));
   CREATE TABLE addon_backups (id TEXT PRIMARY KEY, addon_id TEXT NOT NULL REFERENCES addons(id) ON DELETE CASCADE,
     file TEXT NOT NULL, bytes INTEGER NOT NULL, automatic INTEGER NOT NULL, created_at TEXT NOT NULL);
   CREATE INDEX addon_backups_addon ON addon_backups(addon_id, created_at);`;

const addonOf = (r: Row): Addon => ({
  id: str(r.id),
  name: str(r.name),
  kind: str(r.kind) as AddonKind,
  flavor: str(r.flavor) as Flavor,
  node: r.node === null || r.node === undefined ? null : str(r.node),
  createdAt: str(r.created_at),
});

const backupOf = (r: Row): AddonBackup => ({
  id: str(r.id),
  addonId: str(r.addon_id),
  file: str(r.file),
  bytes: Number(r.bytes),
  automatic: r.automatic === 1,
  createdAt: str(r.created_at),
});

export class SqliteAddons extends SqliteTables implements AddonStore {
  constructor(
    db: Database.Database,
    private readonly box: SecretBox,
    /** The store's own reading of an app row. */
    private readonly appOf: (r: Row) => App,
  ) {
    super(db);
  }

  async createAddon(
    a: Omit<Addon, "createdAt" | "node"> & { node?: string | null },
    credentials: AddonCredentials,
  ): Promise<Addon> {
    try {
      this.db
        .prepare(
          "INSERT INTO addons (id, name, kind, flavor, node, credentials, created_at) VALUES (?,?,?,?,?,?,?)",
        )
        .run(
          a.id,
          a.name,
          a.kind,
          a.flavor,
          a.node ?? null,
          this.box.seal(JSON.stringify(credentials)),
          now(),
        );
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE")
        throw new PierError(
          "CONFLICT",
          `An add-on named '${a.name}' exists already.`,
          "See `pier addon list`.",
        );
      throw e;
    }
    return (await this.findAddon(a.id)) as Addon;
  }

  async findAddon(ref: string): Promise<Addon | null> {
    const r = this.one("SELECT * FROM addons WHERE id = ? OR name = ?", ref, ref);
    return r ? addonOf(r) : null;
  }

  async listAddons(): Promise<Addon[]> {
    return this.all("SELECT * FROM addons ORDER BY name").map(addonOf);
  }

  async addonCredentials(id: string): Promise<AddonCredentials> {
    const r = this.one("SELECT credentials FROM addons WHERE id = ?", id);
    if (!r) throw new PierError("NOT_FOUND", `No add-on ${id}.`);
    return JSON.parse(this.box.open(str(r.credentials))) as AddonCredentials;
  }

  async deleteAddon(id: string): Promise<void> {
    this.db.prepare("DELETE FROM addons WHERE id = ?").run(id);
  }

  async linkAddon(appId: string, addonId: string): Promise<void> {
    const r = this.db
      .prepare("INSERT OR IGNORE INTO addon_links (app_id, addon_id, created_at) VALUES (?,?,?)")
      .run(appId, addonId, now());
    if (r.changes === 0) throw new PierError("CONFLICT", "The add-on is linked to this app already.");
  }

  async unlinkAddon(appId: string, addonId: string): Promise<boolean> {
    return (
      this.db.prepare("DELETE FROM addon_links WHERE app_id = ? AND addon_id = ?").run(appId, addonId)
        .changes > 0
    );
  }

  async linkedAddons(appId: string): Promise<Addon[]> {
    return this.all(
      "SELECT a.* FROM addons a JOIN addon_links l ON l.addon_id = a.id WHERE l.app_id = ? ORDER BY a.name",
      appId,
    ).map(addonOf);
  }

  async addonApps(addonId: string): Promise<string[]> {
    return this.all("SELECT app_id FROM addon_links WHERE addon_id = ? ORDER BY app_id", addonId).map((r) =>
      str(r.app_id),
    );
  }

  async linkApp(appId: string, targetAppId: string): Promise<void> {
    const r = this.db
      .prepare("INSERT OR IGNORE INTO app_links (app_id, target_id, created_at) VALUES (?,?,?)")
      .run(appId, targetAppId, now());
    if (r.changes === 0) throw new PierError("CONFLICT", "The apps are linked already.");
  }

  async unlinkApp(appId: string, targetAppId: string): Promise<boolean> {
    return (
      this.db.prepare("DELETE FROM app_links WHERE app_id = ? AND target_id = ?").run(appId, targetAppId)
        .changes > 0
    );
  }

  async linkedApps(appId: string): Promise<App[]> {
    return this.all(
      "SELECT a.* FROM apps a JOIN app_links l ON l.target_id = a.id WHERE l.app_id = ? ORDER BY a.name",
      appId,
    ).map((r) => this.appOf(r));
  }

  async getPublished(appId: string): Promise<Record<string, string>> {
    return Object.fromEntries(
      this.all("SELECT name, value FROM published_env WHERE app_id = ? ORDER BY name", appId).map((r) => [
        str(r.name),
        this.box.open(str(r.value)),
      ]),
    );
  }

  async setPublished(appId: string, name: string, value: string | null): Promise<void> {
    if (value === null) {
      this.db.prepare("DELETE FROM published_env WHERE app_id = ? AND name = ?").run(appId, name);
      return;
    }
    this.db
      .prepare(
        "INSERT INTO published_env (app_id, name, value) VALUES (?,?,?) ON CONFLICT (app_id, name) DO UPDATE SET value = excluded.value",
      )
      .run(appId, name, this.box.seal(value));
  }

  async addBackup(b: Omit<AddonBackup, "createdAt"> & { createdAt?: string }): Promise<AddonBackup> {
    const createdAt = b.createdAt ?? now();
    this.db
      .prepare(
        "INSERT INTO addon_backups (id, addon_id, file, bytes, automatic, created_at) VALUES (?,?,?,?,?,?)",
      )
      .run(b.id, b.addonId, b.file, b.bytes, b.automatic ? 1 : 0, createdAt);
    return { ...b, createdAt };
  }

  async listBackups(addonId: string): Promise<AddonBackup[]> {
    return this.all(
      "SELECT * FROM addon_backups WHERE addon_id = ? ORDER BY created_at DESC, id DESC",
      addonId,
    ).map(backupOf);
  }

  async deleteBackup(id: string): Promise<void> {
    this.db.prepare("DELETE FROM addon_backups WHERE id = ?").run(id);
  }
}
