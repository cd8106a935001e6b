import type { Logger } from "pino";
import { type Addon, type AddonKind, hasProtocol } from "../core/addons.js";
import { LABEL } from "../core/labels.js";
import { FLAVOR_MEMORY_MIB } from "../core/model.js";
import type { AddonProvider, AddonServers, AddonStore, AppNetworks, Store } from "../core/ports.js";
import type { Networks } from "./networks.js";

/** An add-on's own network (a subnet of Pier's pool). */
export const addonNetwork = (addonId: string) => `pier-addon-${addonId}-net`;

/**
 * Whether a linked app's instances and builds reach the add-on: `joined` (it is on all the app's
 * networks), `joining` (Pier is connecting it now), `pending` (the app's next deploy or restart connects
 * it: a link changes nothing on the engine until then, ADR 0016).
 */
export interface AddonJoin {
  app: string;
  state: "joined" | "joining" | "pending";
  networks: string[];
}

/** What the add-on services work with (the service itself, its joins and its backups). */
export interface AddonDeps {
  store: Store;
  addons: AddonStore;
  engine: AppNetworks & Pick<AddonServers, "addonNode">;
  networks: Pick<Networks, "ensure" | "released">;
  providers: Record<AddonKind, AddonProvider>;
  logger: Logger;
}

/**
 * Which apps' networks each add-on is on (ADR 0015, 0016): a deploy connects the add-ons linked to the app
 * to its networks and disconnects the others; at start, an add-on made again joins its linked apps'
 * networks before its server starts; a deleted app's networks are left. What is under way is known, so
 * that the status says `joining` until the linked apps reach the add-on.
 */
export class AddonJoins {
  constructor(private readonly deps: AddonDeps) {}

  private provider(a: Addon): AddonProvider {
    return this.deps.providers[a.kind];
  }

  /** Add-ons Pier is connecting to their linked apps' networks right now (start, deploys). */
  private readonly joining = new Map<string, Set<string>>();

  private async withJoining<T>(addonId: string, appIds: string[], work: () => Promise<T>): Promise<T> {
    if (appIds.length === 0) return work();
    const set = this.joining.get(addonId) ?? new Set<string>();
    const added = appIds.filter((x) => !set.has(x));
    for (const x of added) set.add(x);
    this.joining.set(addonId, set);
    try {
      return await work();
    } finally {
      for (const x of added) set.delete(x);
      if (set.size === 0) this.joining.delete(addonId);
    }
  }

  /**
   * Per linked app, whether the add-on (on `onNetworks`) reaches it; `joining` when Pier is connecting it
   * to an app's network now.
   */
  async of(addonId: string, onNetworks: string[]): Promise<{ joins: AddonJoin[]; joining: boolean }> {
    const nets = await this.deps.engine.networksWithSubnets();
    const under = this.joining.get(addonId);
    const joins: AddonJoin[] = [];
    for (const appId of await this.deps.addons.addonApps(addonId)) {
      const app = await this.deps.store.findApp(appId);
      if (!app) continue;
      const networks = nets
        .filter((n) => n.labels[LABEL.app] === appId)
        .map((n) => n.name)
        .sort();
      const state = under?.has(appId)
        ? "joining"
        : networks.length > 0 && networks.every((n) => onNetworks.includes(n))
          ? "joined"
          : "pending";
      joins.push({ app: app.name, state, networks });
    }
    joins.sort((x, y) => x.app.localeCompare(y.app));
    return { joins, joining: under !== undefined };
  }

  /**
   * Before a deploy's build and instances: the add-ons linked to the app join the app's networks, and
   * add-ons no longer linked leave them. Returns lines for the deploy log.
   */
  async attach(appId: string, appNetwork: { name: string; ipv6Subnet: string | null }): Promise<string[]> {
    const lines: string[] = [];
    const all = await this.deps.addons.listAddons();
    if (all.length === 0) return lines;
    const linked = await this.deps.addons.linkedAddons(appId);
    if (linked.length === 0 && !(await this.deps.engine.networkExists(appNetwork.name))) return lines;
    await this.deps.networks.ensure(appNetwork.name, appId, appNetwork.ipv6Subnet);
    const nets = (await this.deps.engine.networksWithSubnets())
      .filter((n) => n.labels[LABEL.app] === appId)
      .map((n) => n.name);
    if (!nets.includes(appNetwork.name)) nets.push(appNetwork.name);
    for (const a of all) {
      const p = this.provider(a);
      const want = linked.some((x) => x.id === a.id);
      // A broken add-on does not fail the app's deploy: the log says so (the app's own checks will).
      try {
        await this.withJoining(a.id, want ? [appId] : [], async () => {
          for (const net of nets) {
            if (want) await p.connect(a.id, net);
            else await p.disconnect(a.id, net);
          }
        });
        if (want && hasProtocol(a.kind))
          lines.push(`Add-on ${a.name} (${a.kind}) is reachable at ${p.host(a.id)}:${p.port}.`);
      } catch (e) {
        if (want)
          lines.push(
            `WARNING: add-on ${a.name} could not join the app's network (${(e as Error).message}); see \`pier addon status ${a.name}\`.`,
          );
        this.deps.logger.warn(
          { appId, addonId: a.id, err: (e as Error).message },
          "add-on network change failed",
        );
      }
    }
    return lines;
  }

  /**
   * At start: every add-on the store knows runs. One whose container is gone (removed by hand, a crash in
   * the middle of a change) is made again on its volume, with its credentials, and joins its linked apps'
   * networks again: its data and its links are kept. Returns the names of the add-ons brought back.
   */
  async reconcile(): Promise<string[]> {
    const back: string[] = [];
    const nets = await this.deps.engine.networksWithSubnets();
    for (const a of await this.deps.addons.listAddons()) {
      const p = this.provider(a);
      try {
        const s = await p.status(a.id);
        if (s.state === "running" || s.state === "starting") continue;
        const network = addonNetwork(a.id);
        await this.deps.networks.ensure(network, a.id, null, { [LABEL.addon]: a.id });
        const appIds = await this.deps.addons.addonApps(a.id);
        // The linked apps' networks are joined before the server starts: once it is `running`, they reach it.
        const joins = nets.filter((x) => appIds.includes(x.labels[LABEL.app] ?? "")).map((x) => x.name);
        const credentials = await this.deps.addons.addonCredentials(a.id);
        await this.withJoining(a.id, appIds, () =>
          p.provision({
            id: a.id,
            name: a.name,
            flavor: a.flavor,
            memoryBytes: FLAVOR_MEMORY_MIB[a.flavor] * 2 ** 20,
            credentials,
            network,
            joins,
            node: a.node,
          }),
        );
        back.push(a.name);
        this.deps.logger.info({ addonId: a.id, name: a.name, was: s.state }, "add-on brought back");
      } catch (err) {
        this.deps.logger.warn(
          { addonId: a.id, err: (err as Error).message },
          "could not bring an add-on back",
        );
      }
    }
    return back;
  }

  /** After an app is deleted: the add-ons leave its networks (so that they can go). */
  async detach(appId: string): Promise<void> {
    const nets = (await this.deps.engine.networksWithSubnets())
      .filter((n) => n.labels[LABEL.app] === appId)
      .map((n) => n.name);
    for (const a of await this.deps.addons.listAddons())
      for (const net of nets) await this.provider(a).disconnect(a.id, net);
  }
}
