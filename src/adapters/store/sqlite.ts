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
import { SqliteAccess } from "./sqlite-access.js";
import { SqliteAddons } from "./sqlite-addons.js";
import { releaseOf, SqliteDeploys } from "./sqlite-deploys.js";
import { SqliteDomains } from "./sqlite-domains.js";
import { migrate } from "./sqlite-migrations.js";
import { now, type Row, SqliteTables, str, strOrNull } from "./sqlite-rows.js";

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

/**
 * The store. Secrets (variable values, the variables of each release, app secrets such as private SSH
 * keys) are sealed with the SecretBox before they reach the database file.
 */
export class SqliteStore extends SqliteTables implements Store {
  private readonly access: SqliteAccess;
  private readonly deploys: SqliteDeploys;

  constructor(
    file: string,
    private readonly box: SecretBox,
  ) {
    super(new Database(file));
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    migrate(this.db);
    this.sealLegacySecrets();
    this.access = new SqliteAccess(this.db);
    this.deploys = new SqliteDeploys(this.db, box, (id, patch) => this.patchApp(id, patch));
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

  // Deployments, their logs and releases: src/adapters/store/sqlite-deploys.ts.

  createDeployment(
    d: Pick<Deployment, "id" | "appId" | "commit" | "cause" | "withoutCache">,
  ): Promise<Deployment> {
    return this.deploys.createDeployment(d);
  }

  getDeployment(id: string): Promise<Deployment | null> {
    return this.deploys.getDeployment(id);
  }

  listDeployments(appId: string, limit?: number): Promise<Deployment[]> {
    return this.deploys.listDeployments(appId, limit);
  }

  updateDeployment(id: string, p: DeploymentPatch): Promise<Deployment> {
    return this.deploys.updateDeployment(id, p);
  }

  unfinishedDeployments(): Promise<Deployment[]> {
    return this.deploys.unfinishedDeployments();
  }

  appendDeployLog(deploymentId: string, lines: readonly LogLine[]): Promise<void> {
    return this.deploys.appendDeployLog(deploymentId, lines);
  }

  pruneDeployLogs(appId: string, keep: number): Promise<number> {
    return this.deploys.pruneDeployLogs(appId, keep);
  }

  deployLog(deploymentId: string): Promise<LogLine[]> {
    return this.deploys.deployLog(deploymentId);
  }

  createRelease(r: Omit<Release, "number" | "createdAt">): Promise<Release> {
    return this.deploys.createRelease(r);
  }

  commitRelease(
    r: Omit<Release, "number" | "createdAt">,
    app: AppPatch,
    finishedAt: string,
  ): Promise<Release> {
    return this.deploys.commitRelease(r, app, finishedAt);
  }

  getRelease(id: string): Promise<Release | null> {
    return this.deploys.getRelease(id);
  }

  listReleases(appId: string): Promise<Release[]> {
    return this.deploys.listReleases(appId);
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
