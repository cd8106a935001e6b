import {
  type Addon,
  type AddonBackup,
  type AddonKind,
  addonHost,
  addonNameProblem,
  addonVariables,
  DEFAULT_ADDON_FLAVOR,
  isAddonKind,
  type LinkedEnvironment,
  linkedEnvironment,
  publishedVariableProblem,
  type VariableSource,
} from "../core/addons.js";
import {
  bucketOf,
  isBucketVariable,
  type LinkedBucket,
  parseBucketVariable,
  unlinkedProblem,
} from "../core/buckets.js";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import { type App, FLAVOR_MEMORY_MIB, type Flavor } from "../core/model.js";
import type { AddonProvider, AddonState } from "../core/ports.js";
import { AddonBackups } from "./addon-backups.js";
import { type AddonDeps, type AddonJoin, AddonJoins, addonNetwork } from "./addon-joins.js";
import { newId } from "./deployer.js";

export interface AddonView extends Addon {
  /** The apps it is linked to, by name. */
  apps: string[];
}

/** An fs add-on is refused to a Docker app: the contract's Dockerfile runtime has no file-system buckets. */
function linkable(kind: AddonKind, app: App): void {
  if (kind === "fs" && app.type === "docker")
    throw new PierError(
      "INVALID_INPUT",
      `${app.name} is a docker app, and the docker runtime has no file-system buckets (runtime contract, section 1): an fs add-on cannot be linked to it.`,
      "Link it to a node or phpserver app; a Dockerfile app keeps its files in a database or a kv add-on.",
    );
}

/** The add-on's state: the provider's, or `joining` while a running add-on is (re)joining its linked apps. */
export type AddonStatus = AddonView &
  Omit<AddonState, "state"> & {
    state: AddonState["state"] | "joining";
    joins: AddonJoin[];
    host: string;
    port: number;
    backups: number;
  };

/**
 * Add-ons, links and backups (ADR 0015, 0016). An add-on is a server in its own container, on its own
 * network; a link records that an app gets its variables, and each deploy or restart of the app connects
 * the add-ons linked to it to the app's networks (and disconnects those no longer linked): a link changes
 * no running instance, and only linked apps' instances and builds reach an add-on.
 */
export class AddonService {
  private readonly backupsOf: AddonBackups;
  private readonly joins: AddonJoins;

  constructor(
    private readonly deps: AddonDeps & {
      /** PIER_BACKUP_DIR: one folder per add-on. */
      backupDir: string;
      /** PIER_BACKUP_DAYS. */
      backupDays: number;
    },
  ) {
    this.backupsOf = new AddonBackups(deps);
    this.joins = new AddonJoins(deps);
  }

  private provider(a: Addon): AddonProvider {
    return this.deps.providers[a.kind];
  }

  static networkOf(addonId: string): string {
    return addonNetwork(addonId);
  }

  async get(ref: string): Promise<Addon> {
    const a = await this.deps.addons.findAddon(ref);
    if (!a)
      throw new PierError(
        "ADDON_NOT_FOUND",
        `No add-on named or numbered '${ref}'.`,
        "See `pier addon list`.",
      );
    return a;
  }

  /** The add-on, if the token's app (null: an admin token) may see it: it is linked to that app. */
  async visible(ref: string, onlyApp: string | null): Promise<Addon> {
    const a = await this.get(ref);
    if (onlyApp !== null && !(await this.deps.addons.addonApps(a.id)).includes(onlyApp))
      throw new PierError(
        "ADDON_NOT_FOUND",
        `No add-on named or numbered '${ref}'.`,
        "See `pier addon list`.",
      );
    return a;
  }

  async view(a: Addon): Promise<AddonView> {
    const ids = await this.deps.addons.addonApps(a.id);
    const apps = await Promise.all(ids.map((id) => this.deps.store.findApp(id)));
    return { ...a, apps: apps.flatMap((x) => (x ? [x.name] : [])).sort() };
  }

  /** The names of the add-ons pinned to a swarm node (ADR 0030). */
  async pinnedTo(node: string): Promise<string[]> {
    return (await this.deps.addons.listAddons()).filter((a) => a.node === node).map((a) => a.name);
  }

  async list(onlyApp: string | null): Promise<AddonView[]> {
    const all =
      onlyApp === null ? await this.deps.addons.listAddons() : await this.deps.addons.linkedAddons(onlyApp);
    return Promise.all(all.map((a) => this.view(a)));
  }

  async create(input: {
    kind: string;
    name: string;
    flavor?: Flavor;
    link?: string[];
    /** The swarm node to pin it to (ADR 0030); absent: the manager (one dockerd: refused). */
    node?: string;
  }): Promise<AddonView> {
    if (!isAddonKind(input.kind)) {
      throw new PierError(
        "INVALID_INPUT",
        `kind: unknown add-on kind '${input.kind}'.`,
        "The kinds are kv (a Redis-protocol key-value store), postgresql, mysql (MariaDB) and fs (a file-system bucket).",
      );
    }
    const problem = addonNameProblem(input.name);
    if (problem) throw new PierError("INVALID_INPUT", problem, "Use a DNS label like my-db.");
    if (await this.deps.addons.findAddon(input.name))
      throw new PierError(
        "CONFLICT",
        `An add-on named '${input.name}' exists already.`,
        "See `pier addon list`.",
      );
    // The apps to link must all exist before anything is made.
    const apps: App[] = [];
    for (const ref of input.link ?? []) {
      const app = await this.deps.store.findApp(ref);
      if (!app)
        throw new PierError(
          "APP_NOT_FOUND",
          `No app named or numbered '${ref}' to link.`,
          "See `pier apps`.",
        );
      if (!apps.some((x) => x.id === app.id)) apps.push(app);
      linkable(input.kind, app);
    }
    // Where it goes, checked before anything is made: it stays there (never moved silently).
    const node = await this.deps.engine.addonNode(input.node ?? null);
    const provider = this.deps.providers[input.kind];
    const flavor = input.flavor ?? DEFAULT_ADDON_FLAVOR;
    const id = newId("adn");
    const credentials = provider.credentials(input.name);
    const addon = await this.deps.addons.createAddon(
      { id, name: input.name, kind: input.kind, flavor, node },
      credentials,
    );
    const network = AddonService.networkOf(id);
    try {
      await this.deps.networks.ensure(network, id, null, { [LABEL.addon]: id });
      await provider.provision({
        id,
        name: input.name,
        flavor,
        memoryBytes: FLAVOR_MEMORY_MIB[flavor] * 2 ** 20,
        credentials,
        network,
        node,
      });
    } catch (e) {
      this.deps.logger.warn({ addonId: id, err: (e as Error).message }, "add-on not provisioned: undoing");
      await this.destroy(addon).catch(() => undefined);
      throw e;
    }
    for (const app of apps) await this.deps.addons.linkAddon(app.id, id);
    this.deps.logger.info({ addonId: id, name: addon.name, kind: addon.kind, node }, "add-on created");
    return this.view(addon);
  }

  async status(a: Addon): Promise<AddonStatus> {
    const p = this.provider(a);
    const s = await p.status(a.id);
    const { joins, joining } = await this.joins.of(a.id, s.networks);
    return {
      ...(await this.view(a)),
      ...s,
      state: s.state === "running" && joining ? "joining" : s.state,
      joins,
      host: p.host(a.id),
      port: p.port,
      backups: (await this.deps.addons.listBackups(a.id)).length,
    };
  }

  /** The variables a link to this add-on injects. */
  async variables(a: Addon): Promise<Record<string, string>> {
    const p = this.provider(a);
    return addonVariables(a.kind, p.host(a.id), await this.deps.addons.addonCredentials(a.id));
  }

  /** Deletes an add-on and its data. Refused while linked, unless `force` (the links go first). */
  async remove(a: Addon, force: boolean): Promise<void> {
    const linked = await this.deps.addons.addonApps(a.id);
    if (linked.length > 0 && !force) {
      const names = (await this.view(a)).apps;
      throw new PierError(
        "CONFLICT",
        `The add-on '${a.name}' is linked to ${names.join(", ")}; deleting it would break them.`,
        `Unlink it first (pier service unlink-addon ${a.name} --app APP), or delete it with --force.`,
      );
    }
    await this.destroy(a);
    this.deps.logger.info({ addonId: a.id, name: a.name }, "add-on deleted");
  }

  private async destroy(a: Addon): Promise<void> {
    await this.provider(a).remove(a.id);
    const gone = await this.deps.engine.removeNetworks({ [LABEL.addon]: a.id });
    await this.deps.networks.released(gone.length > 0 ? gone : [AddonService.networkOf(a.id)]);
    // Its backups stay on disk (nothing is lost by a delete): <backup dir>/<add-on id>/.
    await this.deps.addons.deleteAddon(a.id);
  }

  // Links.

  async links(app: App) {
    const addons = await this.deps.addons.linkedAddons(app.id);
    const apps = await this.deps.addons.linkedApps(app.id);
    return {
      addons: addons.map((a) => ({
        id: a.id,
        name: a.name,
        kind: a.kind,
        ...(a.node ? { node: a.node } : {}),
      })),
      apps: apps.map((x) => ({ id: x.id, name: x.name })),
    };
  }

  async linkAddon(app: App, ref: string): Promise<void> {
    const a = await this.get(ref);
    linkable(a.kind, app);
    if ((await this.deps.addons.linkedAddons(app.id)).some((x) => x.id === a.id))
      throw new PierError("CONFLICT", `The add-on '${a.name}' is linked to ${app.name} already.`);
    await this.deps.addons.linkAddon(app.id, a.id);
  }

  async unlinkAddon(app: App, ref: string): Promise<void> {
    const a = await this.get(ref);
    if (!(await this.deps.addons.unlinkAddon(app.id, a.id)))
      throw new PierError(
        "NOT_FOUND",
        `The add-on '${a.name}' is not linked to ${app.name}.`,
        `See \`pier service --app ${app.name}\`.`,
      );
  }

  async linkApp(app: App, target: App): Promise<void> {
    if (app.id === target.id) throw new PierError("INVALID_INPUT", "An app cannot be linked to itself.");
    if ((await this.deps.addons.linkedApps(app.id)).some((x) => x.id === target.id))
      throw new PierError("CONFLICT", `${app.name} is linked to ${target.name} already.`);
    await this.deps.addons.linkApp(app.id, target.id);
  }

  async unlinkApp(app: App, target: App): Promise<void> {
    if (!(await this.deps.addons.unlinkApp(app.id, target.id)))
      throw new PierError(
        "NOT_FOUND",
        `${app.name} is not linked to ${target.name}.`,
        `See \`pier service --app ${app.name}\`.`,
      );
  }

  // Published variables (what an app exposes to the apps linked to it).

  published(app: App): Promise<Record<string, string>> {
    return this.deps.addons.getPublished(app.id);
  }

  async publish(app: App, name: string, value: string): Promise<void> {
    const problem = publishedVariableProblem(name, value);
    if (problem) throw new PierError("INVALID_VARIABLE", problem, "Nothing was changed.");
    await this.deps.addons.setPublished(app.id, name, value);
  }

  async unpublish(app: App, name: string): Promise<void> {
    if (!Object.hasOwn(await this.deps.addons.getPublished(app.id), name))
      throw new PierError("NOT_FOUND", `${app.name} publishes no variable ${name}.`);
    await this.deps.addons.setPublished(app.id, name, null);
  }

  /** An app's whole environment: its own variables and those of its links, each with its source. */
  async environment(appId: string, own?: Record<string, string>): Promise<LinkedEnvironment> {
    const vars = own ?? (await this.deps.store.getEnv(appId));
    const links: { source: VariableSource; vars: Record<string, string> }[] = [];
    for (const a of await this.deps.addons.linkedAddons(appId))
      links.push({ source: { kind: "addon", name: a.name }, vars: await this.variables(a) });
    for (const x of await this.deps.addons.linkedApps(appId))
      links.push({ source: { kind: "app", name: x.name }, vars: await this.deps.addons.getPublished(x.id) });
    return linkedEnvironment(vars, links);
  }

  /** The fs add-ons linked to an app: the buckets its CC_FS_BUCKET may name (core/buckets.ts). */
  async buckets(appId: string): Promise<LinkedBucket[]> {
    const linked = await this.deps.addons.linkedAddons(appId);
    return linked
      .filter((a) => a.kind === "fs")
      .map((a) => ({ id: a.id, name: a.name, host: addonHost(a.id), ...(a.node ? { node: a.node } : {}) }));
  }

  /**
   * Why the variables `set` on an app cannot name buckets, at `pier env set` time (the deploy checks again:
   * a link may go meanwhile): a malformed CC_FS_BUCKET*, a Docker app, a bucket not linked to the app.
   */
  async bucketProblems(app: App, set: Readonly<Record<string, string>>): Promise<string[]> {
    const names = Object.keys(set).filter(isBucketVariable);
    if (names.length === 0) return [];
    if (app.type === "docker")
      return [
        `${names.join(", ")}: the docker runtime has no file-system buckets (runtime contract, section 1).`,
      ];
    const linked = await this.buckets(app.id);
    const problems: string[] = [];
    for (const name of names) {
      const r = parseBucketVariable(name, set[name] ?? "");
      if (typeof r === "string") problems.push(r);
      else if (!bucketOf(r, linked)) problems.push(unlinkedProblem(r, app.name));
    }
    return problems;
  }

  /** The linked variables alone (for the deploy log's masker). */
  async linkedVariables(appId: string): Promise<Record<string, string>> {
    const env = await this.environment(appId, {});
    return env.vars;
  }

  // Networks: which apps' networks each add-on is on (src/server/addon-joins.ts).

  attach(appId: string, appNetwork: { name: string; ipv6Subnet: string | null }): Promise<string[]> {
    return this.joins.attach(appId, appNetwork);
  }

  reconcile(): Promise<string[]> {
    return this.joins.reconcile();
  }

  detach(appId: string): Promise<void> {
    return this.joins.detach(appId);
  }

  // Backups (src/server/addon-backups.ts).

  backups(a: Addon): Promise<AddonBackup[]> {
    return this.backupsOf.list(a);
  }

  backup(a: Addon): Promise<AddonBackup> {
    return this.backupsOf.create(a);
  }

  /** `from`: the add-on whose backup it is, when not `a` (same kind: to move an add-on between nodes). */
  restore(a: Addon, backupId: string, from?: Addon): Promise<AddonBackup> {
    return this.backupsOf.restore(a, backupId, from);
  }

  runDailyBackups(now = new Date()): Promise<{ made: number; deleted: number }> {
    return this.backupsOf.runDaily(now);
  }

  startDailyBackups(): void {
    this.backupsOf.start();
  }

  stop(): void {
    this.backupsOf.stop();
  }
}
