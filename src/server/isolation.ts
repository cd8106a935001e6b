import type { Logger } from "pino";
import { noFirewall } from "../adapters/nft-isolation.js";
import { PierError } from "../core/errors.js";
import { type IsolatedNetwork, planIsolation } from "../core/isolation.js";
import type { Firewall } from "../core/ports.js";

/**
 * Tenant isolation kept by Pier itself (ADR 0019): the networks Pier made or is making, and the firewall
 * that holds their rules. A network's rule is in place before the network is created (its subnets are
 * picked first) and goes after the network is gone, so no instance ever runs without it, whatever the
 * engine does to its own rules meanwhile. Each change applies the whole plan, one change at a time.
 */
export class Isolation {
  constructor(
    private readonly deps: {
      firewall: Firewall;
      scope: string;
      pool: string;
      allow: readonly string[];
      hostPorts: readonly number[];
      logger: Logger;
    },
  ) {}

  private readonly nets = new Map<string, readonly string[]>();
  private queue: Promise<void> = Promise.resolve();

  /** The networks whose rules are in place (or being put in place), by name. */
  networks(): IsolatedNetwork[] {
    return [...this.nets].map(([name, subnets]) => ({ name, subnets }));
  }

  /** At start, before anything runs: the rules of every network Pier recorded. Throws when refused. */
  async restore(networks: readonly IsolatedNetwork[]): Promise<void> {
    this.nets.clear();
    for (const n of networks) this.nets.set(n.name, n.subnets);
    await this.apply();
  }

  /** Before a network is created: its rule. Throws (and the network must not be made) when refused. */
  async add(name: string, subnets: readonly string[]): Promise<void> {
    this.nets.set(name, subnets);
    await this.apply();
  }

  /** After networks are gone: their rules. A refusal is logged (a rule for a gone subnet harms nothing). */
  async remove(names: readonly string[]): Promise<void> {
    if (!names.some((n) => this.nets.has(n))) return;
    for (const n of names) this.nets.delete(n);
    await this.apply().catch((err) =>
      this.deps.logger.warn(
        { err: (err as Error).message, networks: names },
        "could not remove isolation rules",
      ),
    );
  }

  private apply(): Promise<void> {
    const run = this.queue.then(async () => {
      const plan = planIsolation({
        scope: this.deps.scope,
        pool: this.deps.pool,
        networks: this.networks(),
        allow: this.deps.allow,
        hostPorts: this.deps.hostPorts,
      });
      try {
        await this.deps.firewall.apply(plan);
      } catch (e) {
        throw new PierError(
          "ISOLATION_FAILED",
          `The host refused Pier's isolation rules (nftables table inet ${plan.table}): ${(e as Error).message}`,
          "pier server needs root and the nft command (Debian's nftables package; scripts/setup.sh installs it). PIER_ISOLATION=off runs without isolation between apps.",
        );
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** Why no table is applied on this host, said in the log at every start. */
const NO_TABLE = {
  off: "PIER_ISOLATION=off: Pier adds no firewall rules between apps; only the engine's own rules separate them, and those open for a moment each time the engine creates a network",
  swarm:
    "on a swarm, apps are kept apart by the node guard on every node (ADR 0019); this host gets no one-machine table, whose rules would judge only the host's own bridges by the overlays' subnets",
} as const;

/**
 * The isolation service pier server starts with, applying its rules through `firewall`. Without a table on
 * this host (`noTable`: PIER_ISOLATION=off, or a swarm) it applies nothing, and the rules an earlier start
 * left are removed (best effort, through `firewall`); the log says why at every start.
 */
export async function startIsolation(opts: {
  firewall: Firewall;
  noTable: keyof typeof NO_TABLE | null;
  scope: string;
  pool: string;
  allow: readonly string[];
  hostPorts: readonly number[];
  logger: Logger;
}): Promise<Isolation> {
  const { noTable, ...deps } = opts;
  if (!noTable) return new Isolation(deps);
  const empty = planIsolation({ scope: opts.scope, pool: opts.pool, networks: [], allow: [], hostPorts: [] });
  await opts.firewall.apply(empty).catch(() => undefined);
  if (noTable === "off") opts.logger.warn(NO_TABLE.off);
  else opts.logger.info(NO_TABLE[noTable]);
  return new Isolation({ ...deps, firewall: noFirewall });
}
