import { PierError } from "../core/errors.js";
import { cidrsOverlap, type IsolatedNetwork } from "../core/isolation.js";
import { LABEL } from "../core/labels.js";
import type { AppNetworks, Store } from "../core/ports.js";
import { type Cidr, formatCidr, overlaps, parseCidr, pickSubnet } from "../core/subnets.js";
import type { Isolation } from "./isolation.js";

const asCidr = (text: string): Cidr | null => {
  const c = parseCidr(text);
  return typeof c === "string" ? null : c;
};

/**
 * The networks Pier creates (one per app, and one per IPv6 subnet an app asks for), each with an explicit
 * IPv4 subnet from Pier's pool (PIER_SUBNET_POOL, PIER_SUBNET_SIZE; ADR 0007), recorded in the store so
 * two creates never get the same one, and freed when the network goes. Networks that exist on the engine
 * without a record in this store (another Pier's, a user's) are skipped. Each network's isolation rule
 * (ADR 0019) is in place before the engine creates it and goes after the engine removed it.
 */
export class Networks {
  constructor(
    private readonly deps: {
      engine: AppNetworks;
      store: Store;
      pool: Cidr;
      prefix: number;
      isolation: Pick<Isolation, "add" | "remove">;
    },
  ) {}

  /**
   * At start: every network this store recorded, with its subnets (the IPv6 one, which only the engine
   * knows, for those that exist), for the isolation rules to be in place before anything starts.
   */
  async recorded(): Promise<IsolatedNetwork[]> {
    const claims = await this.deps.store.listSubnets();
    const onEngine = new Map((await this.deps.engine.networksWithSubnets()).map((n) => [n.name, n.subnets]));
    return claims.map((c) => ({
      name: c.network,
      subnets: [...new Set([c.subnet, ...(onEngine.get(c.network) ?? [])])],
    }));
  }

  /** Networks gone from the engine (or never made): their subnets are freed and their rules dropped. */
  async released(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    await this.deps.store.releaseSubnets(names);
    await this.deps.isolation.remove(names);
  }

  /** Creations under way, per network: a second caller waits for the first. */
  private readonly creating = new Map<string, Promise<void>>();

  /**
   * At start: the pool must not overlap a network that no Pier made (a user's network, the engine's
   * default bridge). Other Piers' networks in the pool are fine: their subnets are skipped.
   */
  async checkPool(): Promise<void> {
    const { pool } = this.deps;
    for (const n of await this.deps.engine.networksWithSubnets()) {
      if (n.labels[LABEL.managed] === "true") continue;
      const clash = n.subnets.find((s) => {
        const c = asCidr(s);
        return c !== null && overlaps(c, pool);
      });
      if (clash) {
        throw new PierError(
          "CONFIG_INVALID",
          `PIER_SUBNET_POOL: ${formatCidr(pool)} overlaps the Docker network '${n.name}' (${clash}), which Pier did not create.`,
          "Set PIER_SUBNET_POOL to a private range no network on this engine or host uses (docker network inspect shows theirs), e.g. 10.211.0.0/16.",
        );
      }
    }
  }

  /**
   * Makes the network unless it exists: one engine call when it does. `labels` (default `pier.app`) are
   * the network's: an add-on's network carries `pier.addon` instead, and its subnet is claimed for its id.
   */
  ensure(
    name: string,
    appId: string,
    ipv6Subnet: string | null,
    labels: Record<string, string> = { [LABEL.app]: appId },
  ): Promise<void> {
    const under = this.creating.get(name);
    if (under) return under;
    const run = this.create(name, appId, ipv6Subnet, labels);
    this.creating.set(name, run);
    const forget = () => {
      if (this.creating.get(name) === run) this.creating.delete(name);
    };
    run.then(forget, forget);
    return run;
  }

  private async create(
    name: string,
    appId: string,
    ipv6: string | null,
    labels: Record<string, string>,
  ): Promise<void> {
    const { engine, store } = this.deps;
    if (await engine.networkExists(name)) return;
    const skip: Cidr[] = [];
    // Another Pier on this engine may take the same subnet between our look and our create: then the
    // engine refuses it, and the next free one is tried.
    for (let attempt = 0; attempt < 8; attempt++) {
      const subnet = await this.claim(name, appId, skip);
      // The rule first: the network's instances never run unisolated, whatever the engine's own rules do.
      await this.deps.isolation.add(name, ipv6 ? [subnet, ipv6] : [subnet]);
      try {
        await engine.ensureNetwork(name, labels, { ipv4: subnet, ipv6 });
        return;
      } catch (e) {
        if (!(e instanceof PierError) || e.code !== "SUBNET_OVERLAPS") throw e;
        const mine = asCidr(subnet) as Cidr;
        const others = (await engine.networksWithSubnets()).filter((n) => n.name !== name);
        if (ipv6 && others.some((n) => n.subnets.some((s) => cidrsOverlap(s, ipv6)))) {
          await this.released([name]);
          throw new PierError(
            "INVALID_VARIABLE",
            `The IPv6 subnet ${ipv6} (CC_DOCKER_FIXED-CIDR-V6) overlaps a network that exists already.`,
            "Choose another subnet: each app needs its own.",
          );
        }
        // The IPv4 subnet is another's, or, not listed yet refused, a network on its way out still holds it
        // in the engine (seen with many Piers on one engine, and with apps deleted while another app's IPv6
        // network is made). Either way the next free subnet is tried.
        await store.releaseSubnets([name]);
        skip.push(mine);
      }
    }
    throw new PierError("ENGINE_ERROR", `Could not find a free subnet for the network ${name}.`);
  }

  /** The network's recorded subnet, or a free one of the pool, recorded for it. */
  private async claim(name: string, appId: string, skip: readonly Cidr[]): Promise<string> {
    const { engine, store, pool, prefix } = this.deps;
    const claims = await store.listSubnets();
    const own = claims.find((c) => c.network === name);
    if (own) return own.subnet;
    const claimed = claims.map((c) => c.subnet);
    const recorded = new Set(claimed);
    // One engine call per new network: the subnets of networks this store does not know.
    const foreign = (await engine.networksWithSubnets())
      .flatMap((n) => n.subnets)
      .filter((s) => !recorded.has(s))
      .flatMap((s) => asCidr(s) ?? [])
      .concat(skip);
    for (;;) {
      const pick = pickSubnet(pool, prefix, claimed, foreign);
      if (!pick) {
        throw new PierError(
          "SUBNET_POOL_FULL",
          `Pier's subnet pool ${formatCidr(pool)} has no free /${prefix} left for the network ${name}.`,
          "Delete apps you no longer need, or set a larger PIER_SUBNET_POOL (or a longer PIER_SUBNET_SIZE) and restart pier server.",
        );
      }
      const got = await store.claimSubnet({ network: name, appId, subnet: pick });
      if (got) return got;
      claimed.push(pick); // another network's since our look
    }
  }

  /** Removes the app's networks (but `keep`, and those still in use) and frees their subnets. */
  async remove(appId: string, keep?: string): Promise<void> {
    await this.released(await this.deps.engine.removeNetworks({ [LABEL.app]: appId }, keep));
  }

  /**
   * After a restart: the networks of apps that are gone are removed, and subnets recorded for networks the
   * engine no longer has are freed (a crash between the two steps of a delete).
   */
  async reconcile(known: ReadonlySet<string>): Promise<void> {
    const { engine, store } = this.deps;
    const claims = await store.listSubnets();
    for (const appId of new Set(claims.map((c) => c.appId))) {
      if (!known.has(appId)) await this.remove(appId);
    }
    const exist = new Set((await engine.networksWithSubnets()).map((n) => n.name));
    const lost = (await store.listSubnets())
      .filter((c) => !exist.has(c.network) && !this.creating.has(c.network))
      .map((c) => c.network);
    await this.released(lost);
  }
}
