/**
 * Add-ons and links (contract 1.3, 2.6, 4.6, 8; platform-extensions "Add-on variables"): the kinds of
 * add-on, the variables a link injects, the rule for names, which backups are kept, and how an app's
 * environment is put together from its own variables and its links'. Pure.
 */
import { validateVariable } from "./env.js";
import type { Flavor } from "./model.js";
import { appNameProblem } from "./names.js";

export const ADDON_KINDS = ["kv", "postgresql", "mysql", "fs"] as const;
export type AddonKind = (typeof ADDON_KINDS)[number];

/**
 * The port each kind listens on inside Pier's networks. kv: 6378 (contract section 8). fs: NFS's 2049, which
 * a Swarm driver will serve a bucket on from its node (issue 18); on one engine nothing listens: a bucket is
 * its volume, mounted into the linked apps' instances (core/buckets.ts).
 */
export const ADDON_PORTS: Record<AddonKind, number> = { kv: 6378, postgresql: 5432, mysql: 3306, fs: 2049 };

/** Whether a kind speaks a protocol on its port today (fs does not: it is mounted). */
export const hasProtocol = (kind: AddonKind): boolean => kind !== "fs";

/**
 * The extension of each kind's backup files: an RDB snapshot, a `pg_dump -Fc` archive, a gzip'ed SQL dump,
 * a gzip'ed tar of the bucket's files.
 */
export const BACKUP_EXTENSIONS: Record<AddonKind, string> = {
  kv: "rdb",
  postgresql: "pgdump",
  mysql: "sql.gz",
  fs: "tar.gz",
};

/** The host name linked apps reach an add-on at, on every network it is on. */
export const addonHost = (id: string): string => `pier-addon-${id}`;

/** The flavor an add-on gets when none is given. */
export const DEFAULT_ADDON_FLAVOR: Flavor = "nano";

/** How many days automatic (daily) backups are kept; backups made by hand stay until deleted. */
export const AUTO_BACKUP_DAYS = 7;

/** What Pier generates for an add-on at creation; stored encrypted. */
export interface AddonCredentials {
  /** kv, fs: empty (the token is the password). postgresql, mysql: the database's user. */
  user: string;
  /** kv: the add-on token. postgresql, mysql: the user's password. fs: empty (a bucket is mounted). */
  password: string;
  /** postgresql, mysql: the database's name. kv, fs: empty. */
  database: string;
}

export interface Addon {
  id: string;
  name: string;
  kind: AddonKind;
  flavor: Flavor;
  /**
   * The swarm node its server and data are pinned to (ADR 0030), by name; null on one dockerd. Never
   * changed after its creation: moving an add-on is a backup, a new add-on elsewhere and a restore.
   */
  node: string | null;
  createdAt: string;
}

export interface AddonBackup {
  id: string;
  addonId: string;
  /** The file's name under the add-on's backup folder. */
  file: string;
  bytes: number;
  automatic: boolean;
  createdAt: string;
}

/** Why `name` cannot be an add-on's name, or null. The rule of app names (a DNS label). */
export function addonNameProblem(name: string): string | null {
  return appNameProblem(name);
}

export function isAddonKind(kind: string): kind is AddonKind {
  return (ADDON_KINDS as readonly string[]).includes(kind);
}

/**
 * The variables a link to this add-on injects (platform-extensions: exact names). `host` is the add-on's
 * name on the linked app's network.
 */
export function addonVariables(kind: AddonKind, host: string, c: AddonCredentials): Record<string, string> {
  const port = String(ADDON_PORTS[kind]);
  // The hosted platform's fs-bucket variable: the bucket's name, which CC_FS_BUCKET names (core/buckets.ts).
  if (kind === "fs") return { BUCKET_HOST: host };
  if (kind === "kv") {
    const url = `redis://:${encodeURIComponent(c.password)}@${host}:${port}`;
    return {
      KV_HOST: host,
      KV_PORT: port,
      KV_TOKEN: c.password,
      REDIS_HOST: host,
      REDIS_PORT: port,
      REDIS_PASSWORD: c.password,
      REDIS_URL: url,
      // redis-cli -u "$REDIS_CLI_URL": the same URL (database 0).
      REDIS_CLI_URL: `${url}/0`,
      REDISCLI_AUTH: c.password,
    };
  }
  // The SQL databases: the same variables under the kind's name (MYSQL_*, POSTGRESQL_*), its URL scheme.
  const prefix = kind.toUpperCase();
  const uri = `${kind}://${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}@${host}:${port}/${encodeURIComponent(c.database)}`;
  return {
    [`${prefix}_ADDON_HOST`]: host,
    [`${prefix}_ADDON_PORT`]: port,
    [`${prefix}_ADDON_DB`]: c.database,
    [`${prefix}_ADDON_USER`]: c.user,
    [`${prefix}_ADDON_PASSWORD`]: c.password,
    [`${prefix}_ADDON_URI`]: uri,
    DATABASE_URL: uri,
  };
}

/** Where a linked variable comes from. */
export interface VariableSource {
  kind: "addon" | "app";
  name: string;
}

export interface LinkedVariable {
  name: string;
  value: string;
  source: VariableSource;
}

export interface LinkedEnvironment {
  /** What the app's builds and instances get: its own variables win over its links'. */
  vars: Record<string, string>;
  /** The links' variables, each with its source, in link order (not those the app overrides). */
  linked: LinkedVariable[];
  /** Linked variables the app's own variables (or an earlier link) override, said in the deploy log. */
  shadowed: { name: string; source: VariableSource; by: "app" | VariableSource }[];
}

/**
 * The environment of an app: its own variables, then each link's, in order (add-ons by name, then apps by
 * name). A name the app sets itself is the app's; a name two links give is the first link's.
 */
export function linkedEnvironment(
  own: Readonly<Record<string, string>>,
  links: readonly { source: VariableSource; vars: Readonly<Record<string, string>> }[],
): LinkedEnvironment {
  const vars: Record<string, string> = { ...own };
  const linked: LinkedVariable[] = [];
  const shadowed: LinkedEnvironment["shadowed"] = [];
  const from = new Map<string, VariableSource>();
  for (const l of links) {
    for (const [name, value] of Object.entries(l.vars)) {
      if (Object.hasOwn(own, name)) {
        shadowed.push({ name, source: l.source, by: "app" });
        continue;
      }
      const first = from.get(name);
      if (first) {
        shadowed.push({ name, source: l.source, by: first });
        continue;
      }
      from.set(name, l.source);
      vars[name] = value;
      linked.push({ name, value, source: l.source });
    }
  }
  return { vars, linked, shadowed };
}

/**
 * null when an app may publish `name=value` to the apps linked to it, else why not. The rule of variables,
 * and no `CC_` name: those configure the linked app's build and run, not something an app hands out.
 */
export function publishedVariableProblem(name: string, value: string): string | null {
  const base = validateVariable(name, value);
  if (base) return base;
  if (/^CC_/i.test(name))
    return `${name}: a published variable may not start with CC_ (those configure the app that reads them).`;
  return null;
}

/**
 * The automatic backups to delete at `now`: those older than `days` days. Backups made by hand are kept.
 * The newest automatic backup is always kept, however old (a stopped clock must not delete the last one).
 */
export function expiredBackups(
  backups: readonly AddonBackup[],
  now: Date,
  days = AUTO_BACKUP_DAYS,
): AddonBackup[] {
  const auto = backups.filter((b) => b.automatic).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const limit = now.getTime() - days * 86_400_000;
  return auto.slice(1).filter((b) => new Date(b.createdAt).getTime() < limit);
}

/** Whether an automatic backup is due: none yet, or the newest (of any kind) is a day old. */
export function backupDue(backups: readonly AddonBackup[], now: Date): boolean {
  const newest = backups.reduce<string | null>(
    (m, b) => (m === null || b.createdAt > m ? b.createdAt : m),
    null,
  );
  return newest === null || now.getTime() - new Date(newest).getTime() >= 86_400_000;
}

const sourceText = (s: VariableSource) => `${s.kind === "addon" ? "add-on" : "app"} ${s.name}`;

/** The deploy log's lines about linked variables: which come from where, and which are overridden. */
export function linkedLines(env: LinkedEnvironment): string[] {
  const bySource = new Map<string, string[]>();
  for (const v of env.linked) {
    const k = sourceText(v.source);
    bySource.set(k, [...(bySource.get(k) ?? []), v.name]);
  }
  const lines = [...bySource].map(([src, names]) => `Linked variables from ${src}: ${names.join(", ")}.`);
  for (const s of env.shadowed)
    lines.push(
      `${s.name} of ${sourceText(s.source)} is not used: ${s.by === "app" ? "the app sets it itself" : `${sourceText(s.by)} gives it first`}.`,
    );
  return lines;
}
