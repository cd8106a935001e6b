import Database from "better-sqlite3";
import { PierError } from "../../core/errors.js";
import type { CeilingOverrides } from "../../core/limits.js";
import type {
  ApiToken,
  App,
  Deployment,
  Flavor,
  LogLine,
  Release,
  Runtime,
  SshKey,
} from "../../core/model.js";
import type { AppPatch, DeploymentPatch, NewApp, Store, SubnetClaim } from "../../core/ports.js";
import type { SecretBox } from "../secret-box.js";
import { ACCESS_MIGRATION, SqliteAccess } from "./sqlite-access.js";
import { ADDONS_MIGRATION, SqliteAddons } from "./sqlite-addons.js";
import { DOMAINS_MIGRATION, SqliteDomains } from "./sqlite-domains.js";

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

type Row = Record<string, unknown>;
const now = () => new Date().toISOString();
const str = (v: unknown) => String(v);
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

function appOf(r: Row): App {
  return {
    id: str(r.id),
    name: str(r.name),
    type: str(r.type) as Runtime,
    flavor: str(r.flavor) as Flavor,
    buildFlavor: str(r.build_flavor) as Flavor,
    instances: Number(r.instances),
    task: strOrNull(r.task),
    allowDockerSocket: r.allow_docker_socket === 1,
    stopped: r.stopped === 1,
    createdAt: str(r.created_at),
  };
}

function deploymentOf(r: Row): Deployment {
  return {
    id: str(r.id),
    appId: str(r.app_id),
    state: str(r.state) as Deployment["state"],
    commit: str(r.commit_sha),
    cause: str(r.cause),
    withoutCache: r.without_cache === 1,
    reason: strOrNull(r.reason),
    releaseId: strOrNull(r.release_id),
    createdAt: str(r.created_at),
    buildingAt: strOrNull(r.building_at),
    deployingAt: strOrNull(r.deploying_at),
    finishedAt: strOrNull(r.finished_at),
  };
}

function releaseOf(r: Row, box: SecretBox): Release {
  const env = JSON.parse(box.open(str(r.env_json))) as Record<string, string>;
  return {
    id: str(r.id),
    appId: str(r.app_id),
    number: Number(r.number),
    deploymentId: str(r.deployment_id),
    image: str(r.image),
    commit: str(r.commit_sha),
    env,
    httpPort: Number(r.http_port),
    tcpPort: r.tcp_port === null ? null : Number(r.tcp_port),
    task: r.task === null ? env.CC_TASK === "true" : Number(r.task) === 1,
    createdAt: str(r.created_at),
  };
}

/**
 * The store. Secrets (variable values, the variables of each release, app secrets such as private SSH
 * keys) are sealed with the SecretBox before they reach the database file.
 */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly access: SqliteAccess;

  constructor(
    file: string,
    private readonly box: SecretBox,
  ) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    this.migrate();
    this.sealLegacySecrets();
    this.access = new SqliteAccess(this.db);
  }

  /** The add-ons, links, published variables and backups, on the same database (ADR 0015). */
  addons(): SqliteAddons {
    return new SqliteAddons(this.db, this.box, appOf);
  }

  /** Custom domains, their certificates and ACME accounts, on the same database (ADR 0018). */
  domains(): SqliteDomains {
    return new SqliteDomains(this.db, this.box);
  }

  /** Values written in clear by versions before encryption at rest are sealed in place, once. */
  private sealLegacySecrets(): void {
    this.db.transaction(() => {
      const env = this.all("SELECT app_id, name, value FROM env WHERE value NOT LIKE 'pier1:%'");
      const upEnv = this.db.prepare("UPDATE env SET value = ? WHERE app_id = ? AND name = ?");
      for (const r of env) upEnv.run(this.box.seal(str(r.value)), r.app_id, r.name);
      const rel = this.all("SELECT id, env_json FROM releases WHERE env_json NOT LIKE 'pier1:%'");
      const upRel = this.db.prepare("UPDATE releases SET env_json = ? WHERE id = ?");
      for (const r of rel) upRel.run(this.box.seal(str(r.env_json)), r.id);
    })();
  }

  private migrate(): void {
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    );
    const row = this.db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as {
      v: number | null;
    };
    const applied = row.v ?? 0;
    MIGRATIONS.forEach((sql, i) => {
      const version = i + 1;
      if (version <= applied) return;
      this.db.transaction(() => {
        this.db.exec(sql);
        this.db
          .prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)")
          .run(version, now());
      })();
    });
  }

  private one(sql: string, ...params: unknown[]): Row | undefined {
    return this.db.prepare(sql).get(...params) as Row | undefined;
  }

  private all(sql: string, ...params: unknown[]): Row[] {
    return this.db.prepare(sql).all(...params) as Row[];
  }

  async createApp(a: NewApp): Promise<App> {
    try {
      this.db
        .prepare(
          "INSERT INTO apps (id, name, type, flavor, build_flavor, instances, task, created_at) VALUES (?,?,?,?,?,?,?,?)",
        )
        .run(a.id, a.name, a.type, a.flavor, a.buildFlavor, a.instances, a.task, now());
    } catch (e) {
      if (e instanceof Error && /UNIQUE/.test(e.message)) {
        throw new PierError("APP_EXISTS", `An app named '${a.name}' already exists.`, "Choose another name.");
      }
      throw e;
    }
    return appOf(this.one("SELECT * FROM apps WHERE id = ?", a.id)!);
  }

  async findApp(ref: string): Promise<App | null> {
    const r = this.one("SELECT * FROM apps WHERE id = ? OR name = ?", ref, ref);
    return r ? appOf(r) : null;
  }

  async listApps(): Promise<App[]> {
    return this.all("SELECT * FROM apps ORDER BY name").map(appOf);
  }

  async updateApp(id: string, patch: AppPatch): Promise<App> {
    this.patchApp(id, patch);
    const r = this.one("SELECT * FROM apps WHERE id = ?", id);
    if (!r) throw new PierError("APP_NOT_FOUND", `App '${id}' not found.`);
    return appOf(r);
  }

  private patchApp(id: string, patch: AppPatch): void {
    const cols: Record<string, unknown> = {
      flavor: patch.flavor,
      build_flavor: patch.buildFlavor,
      instances: patch.instances,
      allow_docker_socket:
        patch.allowDockerSocket === undefined ? undefined : patch.allowDockerSocket ? 1 : 0,
      stopped: patch.stopped === undefined ? undefined : patch.stopped ? 1 : 0,
    };
    const set = Object.entries(cols).filter(([, v]) => v !== undefined);
    if (set.length > 0) {
      this.db
        .prepare(`UPDATE apps SET ${set.map(([k]) => `${k} = ?`).join(", ")} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
  }

  async deleteApp(id: string): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM apps WHERE id = ?").run(id); // its key grants and tokens go with it
      this.access.dropKeysWithoutApps();
    })();
  }

  async currentRelease(appId: string): Promise<Release | null> {
    const r = this.one(
      "SELECT r.* FROM releases r JOIN apps a ON a.current_release_id = r.id WHERE a.id = ?",
      appId,
    );
    return r ? releaseOf(r, this.box) : null;
  }

  async setCurrentRelease(appId: string, releaseId: string | null): Promise<void> {
    this.db.prepare("UPDATE apps SET current_release_id = ? WHERE id = ?").run(releaseId, appId);
  }

  async getEnv(appId: string): Promise<Record<string, string>> {
    // Own data properties (not `out[name] = ...`): no name can change the object's prototype.
    return Object.fromEntries(
      this.all("SELECT name, value FROM env WHERE app_id = ? ORDER BY name", appId).map((r) => [
        str(r.name),
        this.box.open(str(r.value)),
      ]),
    );
  }

  async changeEnv(
    appId: string,
    set: Record<string, string>,
    unset: readonly string[],
    accept?: (next: Record<string, string>) => void,
  ): Promise<Record<string, string>> {
    this.db.transaction(() => {
      // Checked in the transaction: two changes at once cannot pass a cap together.
      if (accept) {
        const gone = new Set(unset);
        const next = Object.fromEntries(
          [
            ...this.all("SELECT name, value FROM env WHERE app_id = ?", appId).map((r): [string, string] => [
              str(r.name),
              this.box.open(str(r.value)),
            ]),
            ...Object.entries(set),
          ].filter(([k]) => !gone.has(k)),
        );
        accept(next);
      }
      const up = this.db.prepare(
        "INSERT INTO env (app_id, name, value) VALUES (?,?,?) ON CONFLICT (app_id, name) DO UPDATE SET value = excluded.value",
      );
      for (const [k, v] of Object.entries(set)) up.run(appId, k, this.box.seal(v));
      const del = this.db.prepare("DELETE FROM env WHERE app_id = ? AND name = ?");
      for (const k of unset) del.run(appId, k);
    })();
    return this.getEnv(appId);
  }

  async appLimits(appId: string): Promise<CeilingOverrides> {
    const r = this.one("SELECT * FROM app_limits WHERE app_id = ?", appId);
    return {
      maxFlavor: r?.max_flavor == null ? null : (str(r.max_flavor) as Flavor),
      maxInstances: r?.max_instances == null ? null : Number(r.max_instances),
      maxMemoryMiB: r?.max_memory_mib == null ? null : Number(r.max_memory_mib),
    };
  }

  async setAppLimits(appId: string, patch: Partial<CeilingOverrides>): Promise<CeilingOverrides> {
    const next = { ...(await this.appLimits(appId)), ...patch };
    this.db
      .prepare(
        `INSERT INTO app_limits (app_id, max_flavor, max_instances, max_memory_mib) VALUES (?,?,?,?)
         ON CONFLICT (app_id) DO UPDATE SET max_flavor = excluded.max_flavor,
           max_instances = excluded.max_instances, max_memory_mib = excluded.max_memory_mib`,
      )
      .run(appId, next.maxFlavor, next.maxInstances, next.maxMemoryMiB);
    return next;
  }

  async getAppSecret(appId: string, name: string): Promise<string | null> {
    const r = this.one("SELECT value FROM app_secrets WHERE app_id = ? AND name = ?", appId, name);
    return r ? this.box.open(str(r.value)) : null;
  }

  async setAppSecret(appId: string, name: string, value: string | null): Promise<void> {
    if (value === null) {
      this.db.prepare("DELETE FROM app_secrets WHERE app_id = ? AND name = ?").run(appId, name);
      return;
    }
    this.db
      .prepare(
        "INSERT INTO app_secrets (app_id, name, value) VALUES (?,?,?) ON CONFLICT (app_id, name) DO UPDATE SET value = excluded.value",
      )
      .run(appId, name, this.box.seal(value));
  }

  async createDeployment(
    d: Pick<Deployment, "id" | "appId" | "commit" | "cause" | "withoutCache">,
  ): Promise<Deployment> {
    this.db
      .prepare(
        "INSERT INTO deployments (id, app_id, state, commit_sha, cause, without_cache, created_at) VALUES (?,?,'queued',?,?,?,?)",
      )
      .run(d.id, d.appId, d.commit, d.cause, d.withoutCache ? 1 : 0, now());
    return deploymentOf(this.one("SELECT * FROM deployments WHERE id = ?", d.id)!);
  }

  async getDeployment(id: string): Promise<Deployment | null> {
    const r = this.one("SELECT * FROM deployments WHERE id = ?", id);
    return r ? deploymentOf(r) : null;
  }

  async listDeployments(appId: string, limit = 50): Promise<Deployment[]> {
    return this.all(
      "SELECT * FROM deployments WHERE app_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
      appId,
      limit,
    ).map(deploymentOf);
  }

  async updateDeployment(id: string, p: DeploymentPatch): Promise<Deployment> {
    const cols: Record<string, unknown> = {
      state: p.state,
      reason: p.reason,
      release_id: p.releaseId,
      building_at: p.buildingAt,
      deploying_at: p.deployingAt,
      finished_at: p.finishedAt,
    };
    const set = Object.entries(cols).filter(([, v]) => v !== undefined);
    if (set.length > 0) {
      this.db
        .prepare(`UPDATE deployments SET ${set.map(([k]) => `${k} = ?`).join(", ")} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
    const r = this.one("SELECT * FROM deployments WHERE id = ?", id);
    if (!r) throw new PierError("DEPLOYMENT_NOT_FOUND", `Deployment '${id}' not found.`);
    return deploymentOf(r);
  }

  async unfinishedDeployments(): Promise<Deployment[]> {
    return this.all(
      "SELECT * FROM deployments WHERE state NOT IN ('succeeded','failed','cancelled') ORDER BY created_at",
    ).map(deploymentOf);
  }

  async appendDeployLog(deploymentId: string, lines: readonly LogLine[]): Promise<void> {
    if (lines.length === 0) return;
    this.db.transaction(() => {
      const r = this.one(
        "SELECT COALESCE(MAX(seq), 0) AS s FROM deploy_logs WHERE deployment_id = ?",
        deploymentId,
      );
      let seq = Number(r?.s ?? 0);
      const ins = this.db.prepare("INSERT INTO deploy_logs (deployment_id, seq, at, line) VALUES (?,?,?,?)");
      for (const l of lines) ins.run(deploymentId, ++seq, l.at, l.line);
    })();
  }

  async pruneDeployLogs(appId: string, keep: number): Promise<number> {
    const r = this.db
      .prepare(
        `DELETE FROM deploy_logs WHERE deployment_id IN (
           SELECT id FROM deployments WHERE app_id = ? ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
      )
      .run(appId, keep);
    return Number(r.changes);
  }

  async deployLog(deploymentId: string): Promise<LogLine[]> {
    return this.all(
      "SELECT at, line FROM deploy_logs WHERE deployment_id = ? ORDER BY seq",
      deploymentId,
    ).map((r) => ({
      at: str(r.at),
      line: str(r.line),
    }));
  }

  async createRelease(r: Omit<Release, "number" | "createdAt">): Promise<Release> {
    this.db.transaction(() => this.insertRelease(r))();
    return releaseOf(this.one("SELECT * FROM releases WHERE id = ?", r.id)!, this.box);
  }

  async commitRelease(
    r: Omit<Release, "number" | "createdAt">,
    app: AppPatch,
    finishedAt: string,
  ): Promise<Release> {
    this.db.transaction(() => {
      this.insertRelease(r);
      this.patchApp(r.appId, app);
      this.db.prepare("UPDATE apps SET current_release_id = ? WHERE id = ?").run(r.id, r.appId);
      const changed = this.db
        .prepare("UPDATE deployments SET release_id = ?, state = 'succeeded', finished_at = ? WHERE id = ?")
        .run(r.id, finishedAt, r.deploymentId).changes;
      if (changed !== 1)
        throw new PierError("DEPLOYMENT_NOT_FOUND", `Deployment '${r.deploymentId}' not found.`);
    })();
    return releaseOf(this.one("SELECT * FROM releases WHERE id = ?", r.id)!, this.box);
  }

  private insertRelease(r: Omit<Release, "number" | "createdAt">): void {
    const n = this.one("SELECT COALESCE(MAX(number), 0) + 1 AS n FROM releases WHERE app_id = ?", r.appId);
    this.db
      .prepare(
        "INSERT INTO releases (id, app_id, number, deployment_id, image, commit_sha, env_json, http_port, tcp_port, task, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
      )
      .run(
        r.id,
        r.appId,
        Number(n?.n ?? 1),
        r.deploymentId,
        r.image,
        r.commit,
        this.box.seal(JSON.stringify(r.env)),
        r.httpPort,
        r.tcpPort,
        r.task ? 1 : 0,
        now(),
      );
  }

  async getRelease(id: string): Promise<Release | null> {
    const r = this.one("SELECT * FROM releases WHERE id = ?", id);
    return r ? releaseOf(r, this.box) : null;
  }

  async listReleases(appId: string): Promise<Release[]> {
    return this.all("SELECT * FROM releases WHERE app_id = ? ORDER BY number DESC", appId).map((x) =>
      releaseOf(x, this.box),
    );
  }

  async addSshKey(k: Omit<SshKey, "createdAt" | "global" | "apps">): Promise<SshKey> {
    return this.access.addSshKey(k);
  }

  async grantSshKey(
    k: Omit<SshKey, "createdAt" | "global" | "apps" | "readOnly">,
    appId: string,
    readOnly: boolean,
  ): Promise<{ key: SshKey; created: boolean }> {
    return this.access.grantSshKey(k, appId, readOnly);
  }

  async revokeSshKeyGrant(keyId: string, appId: string): Promise<boolean> {
    return this.access.revokeSshKeyGrant(keyId, appId);
  }

  async listSshKeys(appId?: string): Promise<SshKey[]> {
    return this.access.listSshKeys(appId);
  }

  async findSshKey(ref: string): Promise<SshKey | null> {
    return this.access.findSshKey(ref);
  }

  async findSshKeyByBlob(algo: string, blob: string): Promise<SshKey | null> {
    return this.access.findSshKeyByBlob(algo, blob);
  }

  async deleteSshKey(id: string): Promise<void> {
    this.access.deleteSshKey(id);
  }

  async addApiToken(t: Parameters<Store["addApiToken"]>[0]): Promise<ApiToken> {
    return this.access.addApiToken(t);
  }

  async findApiTokenByHash(hash: string): Promise<ApiToken | null> {
    return this.access.findApiTokenByHash(hash);
  }

  async listApiTokens(): Promise<ApiToken[]> {
    return this.access.listApiTokens();
  }

  async deleteApiToken(name: string): Promise<boolean> {
    return this.access.deleteApiToken(name);
  }

  async pruneBootstrapTokens(keepHash: string): Promise<number> {
    return this.access.pruneBootstrapTokens(keepHash);
  }

  async recordExit(e: {
    appId: string;
    containerId: string;
    instance: number;
    exitCode: number;
    at: string;
  }): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO instance_exits (app_id, container_id, instance, exit_code, at) VALUES (?,?,?,?,?)",
      )
      .run(e.appId, e.containerId, e.instance, e.exitCode, e.at);
  }

  async lastExits(appId: string): Promise<Map<string, { code: number; at: string; count: number }>> {
    const rows = this.all(
      `SELECT container_id, COUNT(*) AS n, MAX(at) AS last,
         (SELECT exit_code FROM instance_exits x WHERE x.container_id = e.container_id ORDER BY at DESC LIMIT 1) AS code
       FROM instance_exits e WHERE app_id = ? GROUP BY container_id`,
      appId,
    );
    return new Map(
      rows.map((r) => [str(r.container_id), { code: Number(r.code), at: str(r.last), count: Number(r.n) }]),
    );
  }

  async claimSubnet(c: SubnetClaim): Promise<string | null> {
    // One transaction: two claims (even for the same network) never get the same subnet.
    return this.db.transaction(() => {
      const mine = this.one("SELECT subnet FROM subnets WHERE network = ?", c.network);
      if (mine) return str(mine.subnet);
      const r = this.db
        .prepare(
          "INSERT INTO subnets (subnet, network, app_id, created_at) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
        )
        .run(c.subnet, c.network, c.appId, now());
      return r.changes === 1 ? c.subnet : null;
    })();
  }

  async listSubnets(): Promise<SubnetClaim[]> {
    return this.all("SELECT subnet, network, app_id FROM subnets ORDER BY subnet").map((r) => ({
      subnet: str(r.subnet),
      network: str(r.network),
      appId: str(r.app_id),
    }));
  }

  async releaseSubnets(networks: readonly string[]): Promise<void> {
    const del = this.db.prepare("DELETE FROM subnets WHERE network = ?");
    this.db.transaction(() => {
      for (const n of networks) del.run(n);
    })();
  }

  close(): void {
    this.db.close();
  }
}
