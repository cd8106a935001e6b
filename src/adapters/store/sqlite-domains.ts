import type Database from "better-sqlite3";
import type { CertificatePair, Domain } from "../../core/domains.js";
import { PierError } from "../../core/errors.js";
import type { DomainStore } from "../../core/ports.js";
import type { SecretBox } from "../secret-box.js";
import { now, type Row, SqliteTables, strOrNull } from "./sqlite-rows.js";

/**
 * The migration of custom domains (ADR 0018); appended to the store's MIGRATIONS. A domain goes with its
 * app (cascade). A private key (a domain's, an ACME account's) is sealed (SecretBox), like app variables.
 */
export const DOMAINS_MIGRATION = `CREATE TABLE domains (name TEXT PRIMARY KEY,
     app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, source TEXT NOT NULL, state TEXT NOT NULL,
     cert_pem TEXT, key_sealed TEXT, issuer TEXT, serial TEXT, not_before TEXT, not_after TEXT,
     last_error TEXT, failures INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT, created_at TEXT NOT NULL);
   CREATE INDEX domains_app ON domains(app_id);
   CREATE TABLE acme_accounts (directory TEXT PRIMARY KEY, key_sealed TEXT NOT NULL, created_at TEXT NOT NULL);`;

const domainOf = (r: Row): Domain => ({
  name: String(r.name),
  appId: String(r.app_id),
  source: String(r.source) as Domain["source"],
  state: String(r.state) as Domain["state"],
  issuer: strOrNull(r.issuer),
  serial: strOrNull(r.serial),
  notBefore: strOrNull(r.not_before),
  notAfter: strOrNull(r.not_after),
  lastError: strOrNull(r.last_error),
  failures: Number(r.failures),
  nextAttemptAt: strOrNull(r.next_attempt_at),
  createdAt: String(r.created_at),
});

const COLUMNS: Record<string, string> = {
  source: "source",
  state: "state",
  issuer: "issuer",
  serial: "serial",
  notBefore: "not_before",
  notAfter: "not_after",
  lastError: "last_error",
  failures: "failures",
  nextAttemptAt: "next_attempt_at",
};

export class SqliteDomains extends SqliteTables implements DomainStore {
  constructor(
    db: Database.Database,
    private readonly box: SecretBox,
  ) {
    super(db);
  }

  async addDomain(d: Pick<Domain, "name" | "appId" | "nextAttemptAt">): Promise<Domain> {
    const insert = this.db.transaction(() => {
      const other = this.one(
        "SELECT d.app_id, a.name FROM domains d JOIN apps a ON a.id = d.app_id WHERE d.name = ?",
        d.name,
      );
      if (other)
        throw new PierError(
          "CONFLICT",
          `The domain ${d.name} belongs to the app ${String(other.name)} already.`,
          other.app_id === d.appId
            ? "See `pier domain --app APP`."
            : `Remove it there first: pier domain rm ${d.name} --app ${String(other.name)}`,
        );
      this.db
        .prepare(
          "INSERT INTO domains (name, app_id, source, state, next_attempt_at, created_at) VALUES (?,?,?,?,?,?)",
        )
        .run(d.name, d.appId, "acme", "pending", d.nextAttemptAt, now());
    });
    insert();
    return (await this.findDomain(d.name))!;
  }

  async findDomain(name: string): Promise<Domain | null> {
    const r = this.one("SELECT * FROM domains WHERE name = ?", name);
    return r ? domainOf(r) : null;
  }

  async listDomains(appId?: string): Promise<Domain[]> {
    const rows = (
      appId
        ? this.db.prepare("SELECT * FROM domains WHERE app_id = ? ORDER BY name").all(appId)
        : this.db.prepare("SELECT * FROM domains ORDER BY name").all()
    ) as Row[];
    return rows.map(domainOf);
  }

  async updateDomain(
    name: string,
    patch: Partial<Omit<Domain, "name" | "appId" | "createdAt">>,
    certificate?: CertificatePair,
  ): Promise<Domain> {
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = COLUMNS[k];
      if (!col || v === undefined) continue;
      sets.push(`${col} = ?`);
      values.push(v);
    }
    if (certificate) {
      sets.push("cert_pem = ?", "key_sealed = ?");
      values.push(certificate.certPem, this.box.seal(certificate.keyPem));
    }
    if (sets.length > 0)
      this.db.prepare(`UPDATE domains SET ${sets.join(", ")} WHERE name = ?`).run(...values, name);
    const d = await this.findDomain(name);
    if (!d) throw new PierError("DOMAIN_NOT_FOUND", `No domain ${name}.`);
    return d;
  }

  async domainCertificate(name: string): Promise<CertificatePair | null> {
    const r = this.one("SELECT cert_pem, key_sealed FROM domains WHERE name = ?", name);
    if (!r || r.cert_pem === null || r.key_sealed === null) return null;
    return { certPem: String(r.cert_pem), keyPem: this.box.open(String(r.key_sealed)) };
  }

  async deleteDomain(name: string): Promise<void> {
    this.db.prepare("DELETE FROM domains WHERE name = ?").run(name);
  }

  async acmeAccountKey(directory: string): Promise<string | null> {
    const r = this.one("SELECT key_sealed FROM acme_accounts WHERE directory = ?", directory);
    return r ? this.box.open(String(r.key_sealed)) : null;
  }

  async saveAcmeAccountKey(directory: string, keyPem: string): Promise<void> {
    this.db
      .prepare("INSERT OR REPLACE INTO acme_accounts (directory, key_sealed, created_at) VALUES (?,?,?)")
      .run(directory, this.box.seal(keyPem), now());
  }
}
