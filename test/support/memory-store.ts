/**
 * The one in-memory Store of the unit tests: it implements every store port (compiled against them, no
 * cast) and passes the same conformance suite as the SQLite store (test/conformance/store.ts, ADR 0027).
 * Values are copied in and out, so a caller cannot change what is stored by changing what it got.
 */
import { PierError } from "../../src/core/errors.js";
import type { CeilingOverrides } from "../../src/core/limits.js";
import type { ApiToken, App, Deployment, LogLine, Release, SshKey } from "../../src/core/model.js";
import type {
  AppPatch,
  DeploymentPatch,
  NewApiToken,
  NewApp,
  Store,
  SubnetClaim,
} from "../../src/core/ports.js";
import { MemoryAccess } from "./memory-access.js";
import { MemoryAddons, MemoryDomains } from "./memory-addons.js";

const now = () => new Date().toISOString();
const copy = <T>(v: T): T => structuredClone(v);
const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
type NewRelease = Omit<Release, "number" | "createdAt">;
type Exit = { appId: string; containerId: string; instance: number; exitCode: number; at: string };

const DONE = new Set(["succeeded", "failed", "cancelled"]);
const NO_LIMITS: CeilingOverrides = { maxFlavor: null, maxInstances: null, maxMemoryMiB: null };

export class MemoryStore implements Store {
  private readonly apps = new Map<string, App & { currentReleaseId: string | null }>();
  private readonly env = new Map<string, Map<string, string>>();
  private readonly secrets = new Map<string, Map<string, string>>();
  private readonly limits = new Map<string, CeilingOverrides>();
  private readonly deployments = new Map<string, Deployment & { seq: number }>();
  private readonly logs = new Map<string, LogLine[]>();
  private readonly releases = new Map<string, Release>();
  private readonly exits: Exit[] = [];
  private readonly subnets = new Map<string, SubnetClaim>();
  private readonly access = new MemoryAccess((id) => this.apps.get(id)?.name ?? null);
  private readonly addonPart = new MemoryAddons((id) => (this.apps.has(id) ? this.app(id) : null));
  private readonly domainPart = new MemoryDomains((id) => this.apps.get(id)?.name ?? null);
  private seq = 0;

  /** The add-ons, links, published variables and backups (as SqliteStore.addons()). */
  addons(): MemoryAddons {
    return this.addonPart;
  }

  /** Custom domains and ACME accounts (as SqliteStore.domains()). */
  domains(): MemoryDomains {
    return this.domainPart;
  }

  private app(id: string): App {
    const a = this.apps.get(id);
    if (!a) throw new PierError("APP_NOT_FOUND", `App '${id}' not found.`);
    const { currentReleaseId: _, ...app } = a;
    return copy(app);
  }

  async createApp(a: NewApp): Promise<App> {
    if ([...this.apps.values()].some((x) => x.name === a.name || x.id === a.id))
      throw new PierError("APP_EXISTS", `An app named '${a.name}' already exists.`, "Choose another name.");
    const row = {
      ...copy(a),
      allowDockerSocket: false,
      stopped: false,
      createdAt: now(),
      currentReleaseId: null,
    };
    this.apps.set(a.id, row);
    return this.app(a.id);
  }

  async findApp(ref: string): Promise<App | null> {
    const a = this.apps.get(ref) ?? [...this.apps.values()].find((x) => x.name === ref);
    return a ? this.app(a.id) : null;
  }

  async listApps(): Promise<App[]> {
    return [...this.apps.keys()].map((id) => this.app(id)).sort(byName);
  }

  async updateApp(id: string, patch: AppPatch): Promise<App> {
    this.patchApp(id, patch);
    return this.app(id);
  }

  private patchApp(id: string, patch: AppPatch): void {
    const a = this.apps.get(id);
    if (!a) return;
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) Object.assign(a, { [k]: v });
  }

  async deleteApp(id: string): Promise<void> {
    if (!this.apps.delete(id)) return;
    for (const m of [this.env, this.secrets, this.limits]) m.delete(id);
    for (const [k, d] of this.deployments)
      if (d.appId === id) {
        this.deployments.delete(k);
        this.logs.delete(k);
      }
    for (const [k, r] of this.releases) if (r.appId === id) this.releases.delete(k);
    this.exits.splice(0, this.exits.length, ...this.exits.filter((e) => e.appId !== id));
    this.access.appDeleted(id);
    this.addonPart.appDeleted(id);
    this.domainPart.appDeleted(id);
  }

  async currentRelease(appId: string): Promise<Release | null> {
    const id = this.apps.get(appId)?.currentReleaseId;
    const r = id ? this.releases.get(id) : undefined;
    return r ? copy(r) : null;
  }

  async setCurrentRelease(appId: string, releaseId: string | null): Promise<void> {
    const a = this.apps.get(appId);
    if (a) a.currentReleaseId = releaseId;
  }

  async getEnv(appId: string): Promise<Record<string, string>> {
    return Object.fromEntries([...(this.env.get(appId) ?? new Map<string, string>())].sort());
  }

  async getAppSecret(appId: string, name: string): Promise<string | null> {
    return this.secrets.get(appId)?.get(name) ?? null;
  }

  async setAppSecret(appId: string, name: string, value: string | null): Promise<void> {
    const m = this.secrets.get(appId) ?? new Map<string, string>();
    if (value === null) m.delete(name);
    else m.set(name, value);
    if (this.apps.has(appId)) this.secrets.set(appId, m);
  }

  async changeEnv(
    appId: string,
    set: Record<string, string>,
    unset: readonly string[],
    accept?: (next: Record<string, string>) => void,
  ): Promise<Record<string, string>> {
    const next = new Map(this.env.get(appId) ?? []);
    for (const [k, v] of Object.entries(set)) next.set(k, v);
    for (const k of unset) next.delete(k);
    accept?.(Object.fromEntries(next)); // throws to refuse: nothing changed
    if (this.apps.has(appId)) this.env.set(appId, next);
    return this.getEnv(appId);
  }

  async appLimits(appId: string): Promise<CeilingOverrides> {
    return { ...(this.limits.get(appId) ?? NO_LIMITS) };
  }

  async setAppLimits(appId: string, patch: Partial<CeilingOverrides>): Promise<CeilingOverrides> {
    const next = { ...(await this.appLimits(appId)), ...patch };
    if (this.apps.has(appId)) this.limits.set(appId, next);
    return { ...next };
  }

  async createDeployment(
    d: Pick<Deployment, "id" | "appId" | "commit" | "cause" | "withoutCache">,
  ): Promise<Deployment> {
    this.app(d.appId);
    const row = {
      ...copy(d),
      state: "queued" as const,
      reason: null,
      releaseId: null,
      createdAt: now(),
      buildingAt: null,
      deployingAt: null,
      finishedAt: null,
      seq: ++this.seq,
    };
    this.deployments.set(d.id, row);
    return this.deployment(d.id);
  }

  private deployment(id: string): Deployment {
    const d = this.deployments.get(id);
    if (!d) throw new PierError("DEPLOYMENT_NOT_FOUND", `Deployment '${id}' not found.`);
    const { seq: _, ...out } = d;
    return copy(out);
  }

  async getDeployment(id: string): Promise<Deployment | null> {
    return this.deployments.has(id) ? this.deployment(id) : null;
  }

  /** Newest first (by creation time, then by order of creation). */
  private newest(appId: string): (Deployment & { seq: number })[] {
    return [...this.deployments.values()]
      .filter((d) => d.appId === appId)
      .sort((a, b) => (a.createdAt === b.createdAt ? b.seq - a.seq : a.createdAt < b.createdAt ? 1 : -1));
  }

  async listDeployments(appId: string, limit = 50): Promise<Deployment[]> {
    return this.newest(appId)
      .slice(0, limit)
      .map((d) => this.deployment(d.id));
  }

  async updateDeployment(id: string, p: DeploymentPatch): Promise<Deployment> {
    const d = this.deployments.get(id);
    if (d) for (const [k, v] of Object.entries(p)) if (v !== undefined) Object.assign(d, { [k]: v });
    return this.deployment(id);
  }

  async unfinishedDeployments(): Promise<Deployment[]> {
    return [...this.deployments.values()]
      .filter((d) => !DONE.has(d.state))
      .sort((a, b) => (a.createdAt === b.createdAt ? a.seq - b.seq : a.createdAt < b.createdAt ? -1 : 1))
      .map((d) => this.deployment(d.id));
  }

  async appendDeployLog(deploymentId: string, lines: readonly LogLine[]): Promise<void> {
    if (lines.length === 0) return;
    this.deployment(deploymentId);
    this.logs.set(deploymentId, [...(this.logs.get(deploymentId) ?? []), ...copy(lines)]);
  }

  async deployLog(deploymentId: string): Promise<LogLine[]> {
    return copy(this.logs.get(deploymentId) ?? []);
  }

  async pruneDeployLogs(appId: string, keep: number): Promise<number> {
    let lines = 0;
    for (const d of this.newest(appId).slice(keep)) {
      lines += this.logs.get(d.id)?.length ?? 0;
      this.logs.delete(d.id);
    }
    return lines;
  }

  async createRelease(r: NewRelease): Promise<Release> {
    return copy(this.insertRelease(r));
  }

  private insertRelease(r: NewRelease): Release {
    this.app(r.appId);
    if (this.releases.has(r.id)) throw new PierError("CONFLICT", `Release '${r.id}' exists already.`);
    const numbers = [...this.releases.values()].filter((x) => x.appId === r.appId).map((x) => x.number);
    const release = { ...copy(r), number: Math.max(0, ...numbers) + 1, createdAt: now() };
    this.releases.set(r.id, release);
    return release;
  }

  async commitRelease(r: NewRelease, app: AppPatch, finishedAt: string): Promise<Release> {
    const d = this.deployments.get(r.deploymentId);
    // Checked before anything changes: all or nothing.
    if (!d) throw new PierError("DEPLOYMENT_NOT_FOUND", `Deployment '${r.deploymentId}' not found.`);
    const release = this.insertRelease(r);
    this.patchApp(r.appId, app);
    await this.setCurrentRelease(r.appId, r.id);
    Object.assign(d, { releaseId: r.id, state: "succeeded", finishedAt });
    return copy(release);
  }

  async getRelease(id: string): Promise<Release | null> {
    const r = this.releases.get(id);
    return r ? copy(r) : null;
  }

  async listReleases(appId: string): Promise<Release[]> {
    return copy(
      [...this.releases.values()].filter((r) => r.appId === appId).sort((a, b) => b.number - a.number),
    );
  }

  addSshKey = async (k: Omit<SshKey, "createdAt" | "global" | "apps">) => this.access.addSshKey(k);
  grantSshKey = async (
    k: Omit<SshKey, "createdAt" | "global" | "apps" | "readOnly">,
    appId: string,
    ro: boolean,
  ) => this.access.grantSshKey(k, appId, ro);
  revokeSshKeyGrant = async (keyId: string, appId: string) => this.access.revokeSshKeyGrant(keyId, appId);
  listSshKeys = async (appId?: string) => this.access.listSshKeys(appId);
  findSshKey = async (ref: string) => this.access.findSshKey(ref);
  findSshKeyByBlob = async (algo: string, blob: string) => this.access.findSshKeyByBlob(algo, blob);
  deleteSshKey = async (id: string) => this.access.deleteSshKey(id);
  addApiToken = async (t: NewApiToken): Promise<ApiToken> => this.access.addApiToken(t);
  findApiTokenByHash = async (hash: string) => this.access.findApiTokenByHash(hash);
  listApiTokens = async () => this.access.listApiTokens();
  deleteApiToken = async (name: string) => this.access.deleteApiToken(name);
  pruneBootstrapTokens = async (keepHash: string) => this.access.pruneBootstrapTokens(keepHash);

  async recordExit(e: Exit): Promise<void> {
    this.app(e.appId);
    this.exits.push(copy(e));
  }

  async lastExits(appId: string): Promise<Map<string, { code: number; at: string; count: number }>> {
    const out = new Map<string, { code: number; at: string; count: number }>();
    for (const e of this.exits.filter((x) => x.appId === appId)) {
      const seen = out.get(e.containerId);
      const latest = !seen || e.at > seen.at;
      out.set(e.containerId, {
        code: latest ? e.exitCode : (seen?.code ?? e.exitCode),
        at: latest ? e.at : (seen?.at ?? e.at),
        count: (seen?.count ?? 0) + 1,
      });
    }
    return out;
  }

  async claimSubnet(c: SubnetClaim): Promise<string | null> {
    const mine = [...this.subnets.values()].find((s) => s.network === c.network);
    if (mine) return mine.subnet;
    if (this.subnets.has(c.subnet)) return null;
    this.subnets.set(c.subnet, { ...c });
    return c.subnet;
  }

  async listSubnets(): Promise<SubnetClaim[]> {
    return [...this.subnets.values()].sort((a, b) => (a.subnet < b.subnet ? -1 : 1)).map((s) => ({ ...s }));
  }

  async releaseSubnets(networks: readonly string[]): Promise<void> {
    for (const [k, s] of this.subnets) if (networks.includes(s.network)) this.subnets.delete(k);
  }

  close(): void {}
}
