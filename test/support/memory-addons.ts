/** The in-memory store's add-ons, links, published variables, backups, domains and ACME accounts. */
import type { Addon, AddonBackup, AddonCredentials } from "../../src/core/addons.js";
import type { CertificatePair, Domain } from "../../src/core/domains.js";
import { PierError } from "../../src/core/errors.js";
import type { App } from "../../src/core/model.js";
import type { AddonStore, DomainStore } from "../../src/core/ports.js";

const now = () => new Date().toISOString();
const copy = <T>(v: T): T => structuredClone(v);
const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export class MemoryAddons implements AddonStore {
  private readonly addons = new Map<string, Addon & { credentials: AddonCredentials }>();
  private addonLinks: { appId: string; addonId: string }[] = [];
  private appLinks: { appId: string; targetId: string }[] = [];
  private readonly published = new Map<string, Map<string, string>>();
  private backups: AddonBackup[] = [];

  /** `app`: an app that exists, or null. */
  constructor(private readonly app: (id: string) => App | null) {}

  private mustApp(id: string): void {
    if (!this.app(id)) throw new PierError("APP_NOT_FOUND", `App '${id}' not found.`);
  }

  appDeleted(id: string): void {
    this.addonLinks = this.addonLinks.filter((l) => l.appId !== id);
    this.appLinks = this.appLinks.filter((l) => l.appId !== id && l.targetId !== id);
    this.published.delete(id);
  }

  private addon(id: string): Addon {
    const a = this.addons.get(id);
    if (!a) throw new PierError("NOT_FOUND", `No add-on ${id}.`);
    const { credentials: _, ...addon } = a;
    return copy(addon);
  }

  async createAddon(
    a: Omit<Addon, "createdAt" | "node"> & { node?: string | null },
    credentials: AddonCredentials,
  ): Promise<Addon> {
    if ([...this.addons.values()].some((x) => x.name === a.name))
      throw new PierError(
        "CONFLICT",
        `An add-on named '${a.name}' exists already.`,
        "See `pier addon list`.",
      );
    this.addons.set(a.id, {
      ...copy(a),
      node: a.node ?? null,
      credentials: copy(credentials),
      createdAt: now(),
    });
    return this.addon(a.id);
  }

  async findAddon(ref: string): Promise<Addon | null> {
    const a = this.addons.get(ref) ?? [...this.addons.values()].find((x) => x.name === ref);
    return a ? this.addon(a.id) : null;
  }

  async listAddons(): Promise<Addon[]> {
    return [...this.addons.keys()].map((id) => this.addon(id)).sort(byName);
  }

  async addonCredentials(id: string): Promise<AddonCredentials> {
    const a = this.addons.get(id);
    if (!a) throw new PierError("NOT_FOUND", `No add-on ${id}.`);
    return copy(a.credentials);
  }

  async deleteAddon(id: string): Promise<void> {
    this.addons.delete(id);
    this.addonLinks = this.addonLinks.filter((l) => l.addonId !== id);
    this.backups = this.backups.filter((b) => b.addonId !== id);
  }

  async linkAddon(appId: string, addonId: string): Promise<void> {
    this.mustApp(appId);
    this.addon(addonId);
    if (this.addonLinks.some((l) => l.appId === appId && l.addonId === addonId))
      throw new PierError("CONFLICT", "The add-on is linked to this app already.");
    this.addonLinks.push({ appId, addonId });
  }

  async unlinkAddon(appId: string, addonId: string): Promise<boolean> {
    const before = this.addonLinks.length;
    this.addonLinks = this.addonLinks.filter((l) => !(l.appId === appId && l.addonId === addonId));
    return this.addonLinks.length < before;
  }

  async linkedAddons(appId: string): Promise<Addon[]> {
    return this.addonLinks
      .filter((l) => l.appId === appId)
      .map((l) => this.addon(l.addonId))
      .sort(byName);
  }

  async addonApps(addonId: string): Promise<string[]> {
    return this.addonLinks
      .filter((l) => l.addonId === addonId)
      .map((l) => l.appId)
      .sort();
  }

  async linkApp(appId: string, targetAppId: string): Promise<void> {
    this.mustApp(appId);
    this.mustApp(targetAppId);
    if (this.appLinks.some((l) => l.appId === appId && l.targetId === targetAppId))
      throw new PierError("CONFLICT", "The apps are linked already.");
    this.appLinks.push({ appId, targetId: targetAppId });
  }

  async unlinkApp(appId: string, targetAppId: string): Promise<boolean> {
    const before = this.appLinks.length;
    this.appLinks = this.appLinks.filter((l) => !(l.appId === appId && l.targetId === targetAppId));
    return this.appLinks.length < before;
  }

  async linkedApps(appId: string): Promise<App[]> {
    return this.appLinks
      .filter((l) => l.appId === appId)
      .flatMap((l) => this.app(l.targetId) ?? [])
      .sort(byName);
  }

  async getPublished(appId: string): Promise<Record<string, string>> {
    return Object.fromEntries([...(this.published.get(appId) ?? new Map<string, string>())].sort());
  }

  async setPublished(appId: string, name: string, value: string | null): Promise<void> {
    const m = this.published.get(appId) ?? new Map<string, string>();
    if (value === null) m.delete(name);
    else m.set(name, value);
    if (this.app(appId)) this.published.set(appId, m);
  }

  async addBackup(b: Omit<AddonBackup, "createdAt"> & { createdAt?: string }): Promise<AddonBackup> {
    this.addon(b.addonId);
    const backup = { ...copy(b), createdAt: b.createdAt ?? now() };
    this.backups.push(backup);
    return copy(backup);
  }

  async listBackups(addonId: string): Promise<AddonBackup[]> {
    const newest = (a: AddonBackup, b: AddonBackup) =>
      a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1;
    return copy(this.backups.filter((b) => b.addonId === addonId).sort(newest));
  }

  async deleteBackup(id: string): Promise<void> {
    this.backups = this.backups.filter((b) => b.id !== id);
  }
}

type DomainPatch = Partial<Omit<Domain, "name" | "appId" | "createdAt">>;
const PATCHABLE = [
  "source",
  "state",
  "issuer",
  "serial",
  "notBefore",
  "notAfter",
  "lastError",
  "failures",
  "nextAttemptAt",
] as const;

export class MemoryDomains implements DomainStore {
  private readonly domains = new Map<string, Domain & { cert: CertificatePair | null }>();
  private readonly acme = new Map<string, string>();

  /** `appName`: the name of an app that exists, or null. */
  constructor(private readonly appName: (id: string) => string | null) {}

  appDeleted(id: string): void {
    for (const [k, d] of this.domains) if (d.appId === id) this.domains.delete(k);
  }

  private domain(name: string): Domain | null {
    const d = this.domains.get(name);
    if (!d) return null;
    const { cert: _, ...out } = d;
    return copy(out);
  }

  private mustDomain(name: string): Domain {
    const d = this.domain(name);
    if (!d) throw new PierError("DOMAIN_NOT_FOUND", `No domain ${name}.`);
    return d;
  }

  async addDomain(d: Pick<Domain, "name" | "appId" | "nextAttemptAt">): Promise<Domain> {
    const other = this.domains.get(d.name);
    if (other) {
      const owner = this.appName(other.appId) ?? other.appId;
      throw new PierError(
        "CONFLICT",
        `The domain ${d.name} belongs to the app ${owner} already.`,
        other.appId === d.appId
          ? "See `pier domain --app APP`."
          : `Remove it there first: pier domain rm ${d.name} --app ${owner}`,
      );
    }
    if (this.appName(d.appId) === null) throw new PierError("APP_NOT_FOUND", `App '${d.appId}' not found.`);
    this.domains.set(d.name, {
      ...d,
      source: "acme",
      state: "pending",
      issuer: null,
      serial: null,
      notBefore: null,
      notAfter: null,
      lastError: null,
      failures: 0,
      createdAt: now(),
      cert: null,
    });
    return this.mustDomain(d.name);
  }

  async findDomain(name: string): Promise<Domain | null> {
    return this.domain(name);
  }

  async listDomains(appId?: string): Promise<Domain[]> {
    return [...this.domains.values()]
      .filter((d) => !appId || d.appId === appId)
      .sort(byName)
      .flatMap((d) => this.domain(d.name) ?? []);
  }

  async updateDomain(name: string, patch: DomainPatch, certificate?: CertificatePair): Promise<Domain> {
    const d = this.domains.get(name);
    if (!d) throw new PierError("DOMAIN_NOT_FOUND", `No domain ${name}.`);
    for (const k of PATCHABLE) if (patch[k] !== undefined) Object.assign(d, { [k]: patch[k] });
    if (certificate) d.cert = copy(certificate);
    return this.mustDomain(name);
  }

  async domainCertificate(name: string): Promise<CertificatePair | null> {
    const cert = this.domains.get(name)?.cert;
    return cert ? copy(cert) : null;
  }

  async deleteDomain(name: string): Promise<void> {
    this.domains.delete(name);
  }

  async acmeAccountKey(directory: string): Promise<string | null> {
    return this.acme.get(directory) ?? null;
  }

  async saveAcmeAccountKey(directory: string, keyPem: string): Promise<void> {
    this.acme.set(directory, keyPem);
  }
}
