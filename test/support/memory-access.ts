/** The in-memory store's SSH keys with their grants, and API tokens (the SQLite store's SqliteAccess). */
import { PierError } from "../../src/core/errors.js";
import type { ApiToken, SshKey } from "../../src/core/model.js";
import type { NewApiToken } from "../../src/core/ports.js";

type KeyRow = Omit<SshKey, "apps"> & { seq: number };
type TokenRow = NewApiToken & { createdAt: string };
const now = () => new Date().toISOString();

export class MemoryAccess {
  private readonly keys = new Map<string, KeyRow>();
  /** Grants by key id, then app id: read-only or not. */
  private readonly grants = new Map<string, Map<string, boolean>>();
  private tokens: TokenRow[] = [];
  private seq = 0;

  /** `appName`: the name of an app that exists, or null. */
  constructor(private readonly appName: (id: string) => string | null) {}

  private keyOf(k: KeyRow, appId?: string): SshKey {
    const { seq: _, ...key } = k;
    const apps = [...(this.grants.get(k.id) ?? new Map<string, boolean>())]
      .filter(([a]) => !appId || a === appId)
      .map(([id, readOnly]) => ({ id, name: this.appName(id) ?? id, readOnly }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return { ...key, apps };
  }

  private byFingerprint(fp: string): KeyRow | undefined {
    return [...this.keys.values()].find((k) => k.fingerprint === fp);
  }

  addSshKey(k: Omit<SshKey, "createdAt" | "global" | "apps">): SshKey {
    const old = this.byFingerprint(k.fingerprint);
    if (old)
      throw new PierError(
        "SSH_KEY_EXISTS",
        `The key ${k.fingerprint} is already registered${old.global ? "" : " on some apps"}.`,
        old.global
          ? "See `pier ssh-keys`."
          : "To make it an admin key, remove it (pier ssh-keys rm KEY) and add it again without --app.",
      );
    const row = { ...k, global: true, createdAt: now(), seq: ++this.seq };
    this.keys.set(k.id, row);
    return this.keyOf(row);
  }

  grantSshKey(
    k: Omit<SshKey, "createdAt" | "global" | "apps" | "readOnly">,
    appId: string,
    readOnly: boolean,
  ): { key: SshKey; created: boolean } {
    const old = this.byFingerprint(k.fingerprint);
    if (old?.global)
      throw new PierError(
        "CONFLICT",
        `The key ${k.fingerprint} is an admin key: it reaches every app already.`,
        "To limit it to some apps, remove it (pier ssh-keys rm KEY) and add it again with --app.",
      );
    if (this.appName(appId) === null) throw new PierError("APP_NOT_FOUND", `App '${appId}' not found.`);
    const row = old ?? { ...k, global: false, readOnly: false, createdAt: now(), seq: ++this.seq };
    this.keys.set(row.id, row);
    const grants = this.grants.get(row.id) ?? new Map<string, boolean>();
    const created = !grants.has(appId);
    grants.set(appId, readOnly);
    this.grants.set(row.id, grants);
    return { key: this.keyOf(row, appId), created };
  }

  revokeSshKeyGrant(keyId: string, appId: string): boolean {
    const had = this.grants.get(keyId)?.delete(appId) ?? false;
    this.dropKeysWithoutApps();
    return had;
  }

  private dropKeysWithoutApps(): void {
    for (const [id, k] of this.keys)
      if (!k.global && (this.grants.get(id)?.size ?? 0) === 0) {
        this.keys.delete(id);
        this.grants.delete(id);
      }
  }

  appDeleted(appId: string): void {
    for (const g of this.grants.values()) g.delete(appId);
    this.dropKeysWithoutApps();
    this.tokens = this.tokens.filter((t) => t.appId !== appId);
  }

  listSshKeys(appId?: string): SshKey[] {
    return [...this.keys.values()]
      .filter((k) => !appId || this.grants.get(k.id)?.has(appId))
      .sort((a, b) => (a.createdAt === b.createdAt ? a.seq - b.seq : a.createdAt < b.createdAt ? -1 : 1))
      .map((k) => this.keyOf(k, appId));
  }

  findSshKey(ref: string): SshKey | null {
    const k = [...this.keys.values()].find((x) => x.id === ref || x.fingerprint === ref || x.name === ref);
    return k ? this.keyOf(k) : null;
  }

  findSshKeyByBlob(algo: string, blob: string): SshKey | null {
    const k = [...this.keys.values()].find((x) => x.algo === algo && x.blob === blob);
    return k ? this.keyOf(k) : null;
  }

  deleteSshKey(id: string): void {
    this.keys.delete(id);
    this.grants.delete(id);
  }

  private tokenOf(t: TokenRow): ApiToken {
    const app = t.appId === null ? null : { id: t.appId, name: this.appName(t.appId) ?? t.appId };
    return {
      id: t.id,
      name: t.name,
      app,
      readOnly: t.readOnly,
      bootstrap: t.bootstrap,
      createdAt: t.createdAt,
    };
  }

  addApiToken(t: NewApiToken): ApiToken {
    const clash = this.tokens.some(
      (x) => x.hash === t.hash || (!t.bootstrap && !x.bootstrap && x.name === t.name),
    );
    if (clash)
      throw new PierError(
        "CONFLICT",
        `A token named '${t.name}' exists already.`,
        "Choose another name, or revoke it first: pier tokens revoke NAME",
      );
    const row = { ...t, createdAt: now() };
    this.tokens.push(row);
    return this.tokenOf(row);
  }

  findApiTokenByHash(hash: string): ApiToken | null {
    const t = this.tokens.find((x) => x.hash === hash);
    return t ? this.tokenOf(t) : null;
  }

  listApiTokens(): ApiToken[] {
    const order = (a: TokenRow, b: TokenRow) =>
      Number(b.bootstrap) - Number(a.bootstrap) ||
      (a.createdAt === b.createdAt
        ? a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : 0
        : a.createdAt < b.createdAt
          ? -1
          : 1);
    return [...this.tokens].sort(order).map((t) => this.tokenOf(t));
  }

  deleteApiToken(name: string): boolean {
    const before = this.tokens.length;
    this.tokens = this.tokens.filter((t) => t.bootstrap || t.name !== name);
    return this.tokens.length < before;
  }

  pruneBootstrapTokens(keepHash: string): number {
    const before = this.tokens.length;
    this.tokens = this.tokens.filter((t) => !t.bootstrap || t.hash === keepHash);
    return before - this.tokens.length;
  }
}
