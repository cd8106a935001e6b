// Deployments, their logs and releases in the store's database (the DeploymentStore and ReleaseStore parts
// of src/adapters/store/sqlite.ts). A release's variables are sealed (SecretBox), like the app's.
import type Database from "better-sqlite3";
import { PierError } from "../../core/errors.js";
import type { Deployment, LogLine, Release } from "../../core/model.js";
import type { AppPatch, DeploymentPatch, DeploymentStore, ReleaseStore } from "../../core/ports.js";
import type { SecretBox } from "../secret-box.js";
import { now, type Row, SqliteTables, str, strOrNull } from "./sqlite-rows.js";

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

export function releaseOf(r: Row, box: SecretBox): Release {
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

export class SqliteDeploys
  extends SqliteTables
  implements DeploymentStore, Omit<ReleaseStore, "currentRelease" | "setCurrentRelease">
{
  constructor(
    db: Database.Database,
    private readonly box: SecretBox,
    /** The store's own change of an app row (a release committed with the app's new shape). */
    private readonly patchApp: (id: string, patch: AppPatch) => void,
  ) {
    super(db);
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
}
