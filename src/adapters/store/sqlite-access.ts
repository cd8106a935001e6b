import { PierError } from "../../core/errors.js";
import type { ApiToken, SshKey, SshKeyGrant } from "../../core/model.js";
import type { NewApiToken } from "../../core/ports.js";
import { now, type Row, SqliteTables, str } from "./sqlite-rows.js";

/** The SQLite store's SSH keys (with their per-app grants) and API tokens (ADR 0008). */

/** The migration that scopes keys and tokens; appended to the store's MIGRATIONS. */
export const ACCESS_MIGRATION = `ALTER TABLE ssh_keys ADD COLUMN global INTEGER NOT NULL DEFAULT 1;
   CREATE TABLE ssh_key_grants (key_id TEXT NOT NULL REFERENCES ssh_keys(id) ON DELETE CASCADE,
     app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, read_only INTEGER NOT NULL,
     created_at TEXT NOT NULL, PRIMARY KEY (key_id, app_id));
   CREATE INDEX ssh_key_grants_app ON ssh_key_grants(app_id);
   ALTER TABLE api_tokens ADD COLUMN app_id TEXT REFERENCES apps(id) ON DELETE CASCADE;
   ALTER TABLE api_tokens ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE api_tokens ADD COLUMN bootstrap INTEGER NOT NULL DEFAULT 0;
   UPDATE api_tokens SET bootstrap = 1;
   CREATE UNIQUE INDEX api_tokens_name ON api_tokens(name) WHERE bootstrap = 0;`;

export class SqliteAccess extends SqliteTables {
  private grantsOf(keyId: string, appId?: string): SshKeyGrant[] {
    return this.all(
      `SELECT a.id, a.name, g.read_only FROM ssh_key_grants g JOIN apps a ON a.id = g.app_id
       WHERE g.key_id = ? ${appId ? "AND g.app_id = ?" : ""} ORDER BY a.name`,
      ...(appId ? [keyId, appId] : [keyId]),
    ).map((r) => ({ id: str(r.id), name: str(r.name), readOnly: r.read_only === 1 }));
  }

  private keyOf(r: Row, appId?: string): SshKey {
    const id = str(r.id);
    return {
      id,
      name: str(r.name),
      fingerprint: str(r.fingerprint),
      algo: str(r.algo),
      blob: str(r.blob),
      global: r.global === 1,
      readOnly: r.read_only === 1,
      apps: this.grantsOf(id, appId),
      createdAt: str(r.created_at),
    };
  }

  addSshKey(k: Omit<SshKey, "createdAt" | "global" | "apps">): SshKey {
    try {
      this.db
        .prepare(
          "INSERT INTO ssh_keys (id, name, fingerprint, algo, blob, read_only, global, created_at) VALUES (?,?,?,?,?,?,1,?)",
        )
        .run(k.id, k.name, k.fingerprint, k.algo, k.blob, k.readOnly ? 1 : 0, now());
    } catch (e) {
      if (e instanceof Error && /UNIQUE/.test(e.message)) {
        const old = this.one("SELECT global FROM ssh_keys WHERE fingerprint = ?", k.fingerprint);
        throw new PierError(
          "SSH_KEY_EXISTS",
          `The key ${k.fingerprint} is already registered${old?.global === 1 ? "" : " on some apps"}.`,
          old?.global === 1
            ? "See `pier ssh-keys`."
            : "To make it an admin key, remove it (pier ssh-keys rm KEY) and add it again without --app.",
        );
      }
      throw e;
    }
    return this.keyOf(this.one("SELECT * FROM ssh_keys WHERE id = ?", k.id)!);
  }

  grantSshKey(
    k: Omit<SshKey, "createdAt" | "global" | "apps" | "readOnly">,
    appId: string,
    readOnly: boolean,
  ): { key: SshKey; created: boolean } {
    return this.db.transaction(() => {
      const old = this.one("SELECT * FROM ssh_keys WHERE fingerprint = ?", k.fingerprint);
      if (old?.global === 1) {
        throw new PierError(
          "CONFLICT",
          `The key ${k.fingerprint} is an admin key: it reaches every app already.`,
          "To limit it to some apps, remove it (pier ssh-keys rm KEY) and add it again with --app.",
        );
      }
      const keyId = old ? str(old.id) : k.id;
      if (!old) {
        this.db
          .prepare(
            "INSERT INTO ssh_keys (id, name, fingerprint, algo, blob, read_only, global, created_at) VALUES (?,?,?,?,?,0,0,?)",
          )
          .run(k.id, k.name, k.fingerprint, k.algo, k.blob, now());
      }
      const had = this.one("SELECT 1 FROM ssh_key_grants WHERE key_id = ? AND app_id = ?", keyId, appId);
      this.db
        .prepare(
          `INSERT INTO ssh_key_grants (key_id, app_id, read_only, created_at) VALUES (?,?,?,?)
           ON CONFLICT (key_id, app_id) DO UPDATE SET read_only = excluded.read_only`,
        )
        .run(keyId, appId, readOnly ? 1 : 0, now());
      return {
        key: this.keyOf(this.one("SELECT * FROM ssh_keys WHERE id = ?", keyId)!, appId),
        created: !had,
      };
    })();
  }

  revokeSshKeyGrant(keyId: string, appId: string): boolean {
    return this.db.transaction(() => {
      const r = this.db
        .prepare("DELETE FROM ssh_key_grants WHERE key_id = ? AND app_id = ?")
        .run(keyId, appId);
      this.db
        .prepare(
          "DELETE FROM ssh_keys WHERE id = ? AND global = 0 AND NOT EXISTS (SELECT 1 FROM ssh_key_grants WHERE key_id = ?)",
        )
        .run(keyId, keyId);
      return r.changes > 0;
    })();
  }

  /** Keys granted on apps only, whose every app is gone, reach nothing: they go too. */
  dropKeysWithoutApps(): void {
    this.db
      .prepare(
        "DELETE FROM ssh_keys WHERE global = 0 AND NOT EXISTS (SELECT 1 FROM ssh_key_grants g WHERE g.key_id = ssh_keys.id)",
      )
      .run();
  }

  listSshKeys(appId?: string): SshKey[] {
    if (!appId) return this.all("SELECT * FROM ssh_keys ORDER BY created_at").map((r) => this.keyOf(r));
    return this.all(
      `SELECT k.* FROM ssh_keys k JOIN ssh_key_grants g ON g.key_id = k.id WHERE g.app_id = ?
       ORDER BY k.created_at`,
      appId,
    ).map((r) => this.keyOf(r, appId));
  }

  findSshKey(ref: string): SshKey | null {
    const r = this.one("SELECT * FROM ssh_keys WHERE id = ? OR fingerprint = ? OR name = ?", ref, ref, ref);
    return r ? this.keyOf(r) : null;
  }

  findSshKeyByBlob(algo: string, blob: string): SshKey | null {
    const r = this.one("SELECT * FROM ssh_keys WHERE algo = ? AND blob = ?", algo, blob);
    return r ? this.keyOf(r) : null;
  }

  deleteSshKey(id: string): void {
    this.db.prepare("DELETE FROM ssh_keys WHERE id = ?").run(id);
  }

  private tokenOf(r: Row): ApiToken {
    return {
      id: str(r.id),
      name: str(r.name),
      app: r.app_id === null ? null : { id: str(r.app_id), name: str(r.app_name) },
      readOnly: r.read_only === 1,
      bootstrap: r.bootstrap === 1,
      createdAt: str(r.created_at),
    };
  }

  private static readonly TOKEN_SELECT =
    "SELECT t.id, t.name, t.app_id, a.name AS app_name, t.read_only, t.bootstrap, t.created_at FROM api_tokens t LEFT JOIN apps a ON a.id = t.app_id";

  addApiToken(t: NewApiToken): ApiToken {
    try {
      this.db
        .prepare(
          "INSERT INTO api_tokens (id, name, hash, app_id, read_only, bootstrap, created_at) VALUES (?,?,?,?,?,?,?)",
        )
        .run(t.id, t.name, t.hash, t.appId, t.readOnly ? 1 : 0, t.bootstrap ? 1 : 0, now());
    } catch (e) {
      if (e instanceof Error && /UNIQUE/.test(e.message)) {
        throw new PierError(
          "CONFLICT",
          `A token named '${t.name}' exists already.`,
          "Choose another name, or revoke it first: pier tokens revoke NAME",
        );
      }
      throw e;
    }
    return this.tokenOf(this.one(`${SqliteAccess.TOKEN_SELECT} WHERE t.id = ?`, t.id)!);
  }

  findApiTokenByHash(hash: string): ApiToken | null {
    const r = this.one(`${SqliteAccess.TOKEN_SELECT} WHERE t.hash = ?`, hash);
    return r ? this.tokenOf(r) : null;
  }

  listApiTokens(): ApiToken[] {
    return this.all(`${SqliteAccess.TOKEN_SELECT} ORDER BY t.bootstrap DESC, t.created_at, t.name`).map((r) =>
      this.tokenOf(r),
    );
  }

  deleteApiToken(name: string): boolean {
    return this.db.prepare("DELETE FROM api_tokens WHERE name = ? AND bootstrap = 0").run(name).changes > 0;
  }

  pruneBootstrapTokens(keepHash: string): number {
    return this.db.prepare("DELETE FROM api_tokens WHERE bootstrap = 1 AND hash != ?").run(keepHash).changes;
  }
}
