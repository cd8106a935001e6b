// AppNetworks on a Docker Swarm (ADR 0030): one attachable overlay per app or add-on, with a subnet of
// Pier's pool, made on the manager. Overlays are separate VXLAN segments: a task reaches only the overlays
// it is attached to.

import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { labelFilter } from "../../core/labels.js";
import type { AppNetworks, NetworkSubnets } from "../../core/ports.js";
import { overlaps, parseCidr } from "../../core/subnets.js";
import { networkExists, networksWithSubnets } from "./docker-common.js";

/** The subnets of `wanted` that overlap one of `taken` (IPv4 CIDRs; others are not compared). */
export function overlapping(wanted: readonly string[], taken: readonly NetworkSubnets[]): string[] {
  const hits: string[] = [];
  for (const w of wanted) {
    const a = parseCidr(w);
    if (typeof a === "string") continue;
    for (const n of taken) {
      for (const s of n.subnets) {
        const b = parseCidr(s);
        if (typeof b !== "string" && overlaps(a, b)) hits.push(`${w} overlaps ${n.name} (${s})`);
      }
    }
  }
  return hits;
}

const ALLOCATION_WAIT_MS = 5_000;

export class SwarmNetworks implements AppNetworks {
  constructor(
    private readonly docker: Docker,
    private readonly own: Record<string, string>,
  ) {}

  private filters(labels: Record<string, string>): string[] {
    return labelFilter(this.own, labels);
  }

  networkExists(name: string): Promise<boolean> {
    return networkExists(this.docker, name);
  }

  /** The manager's view: the swarm's overlays and the manager's own local networks. */
  networksWithSubnets(): Promise<NetworkSubnets[]> {
    return networksWithSubnets(this.docker);
  }

  /**
   * The swarm accepts an overlay whose subnet overlaps another's, then never allocates it (it stays without
   * a driver, unusable): the overlap is checked here first, and a network left unallocated by a race is
   * removed and refused the same way.
   */
  async ensureNetwork(
    name: string,
    labels: Record<string, string>,
    subnets: { ipv4: string | null; ipv6: string | null },
  ): Promise<void> {
    if (await this.networkExists(name)) return;
    const wanted = [subnets.ipv4, subnets.ipv6].filter((s): s is string => s !== null);
    const refuse = (why: string[]) =>
      new PierError(
        "SUBNET_OVERLAPS",
        `A subnet of the network ${name} (${wanted.join(", ")}) overlaps a network that exists already: ${why.join("; ")}.`,
      );
    const hits = overlapping(wanted, await this.networksWithSubnets());
    if (hits.length > 0) throw refuse(hits);
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: "overlay",
        Attachable: true,
        CheckDuplicate: true,
        Labels: { ...labels, ...this.own },
        EnableIPv6: subnets.ipv6 !== null,
        ...(wanted.length > 0
          ? { IPAM: { Driver: "default", Config: wanted.map((s) => ({ Subnet: s })) } }
          : {}),
      });
    } catch (e) {
      // Two deploys may race to create the same network.
      if ((e as { statusCode?: number }).statusCode === 409) return;
      throw new PierError("ENGINE_ERROR", `Could not create the network ${name}: ${(e as Error).message}`);
    }
    if (!(await this.allocated(name))) {
      await this.docker
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
      throw refuse(["the swarm did not allocate it"]);
    }
  }

  /** Whether the swarm gave the network its driver and subnets (it does within moments, or never). */
  private async allocated(name: string): Promise<boolean> {
    const end = Date.now() + ALLOCATION_WAIT_MS;
    for (;;) {
      const n = (await this.docker.getNetwork(name).inspect()) as { Driver?: string };
      if (n.Driver) return true;
      if (Date.now() > end) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Removes Pier's networks with these labels but `keep`; one a service or a container uses stays. */
  async removeNetworks(labels: Record<string, string>, keep?: string): Promise<string[]> {
    const nets = await this.docker.listNetworks({ filters: { label: this.filters(labels) } });
    const removed: string[] = [];
    for (const n of nets) {
      if (n.Name === keep) continue;
      try {
        await this.docker.getNetwork(n.Id).remove();
        removed.push(n.Name);
      } catch (e) {
        const err = e as { statusCode?: number; message?: string };
        if (err.statusCode === 404) removed.push(n.Name);
        // A swarm network in use answers 400 ("is in use by service/task"), a local one 403 or 409.
        else if (!(err.statusCode === 403 || err.statusCode === 409 || /in use/i.test(err.message ?? "")))
          throw e;
      }
    }
    return removed;
  }

  /** The apps that own one of Pier's networks (a swarm's volumes are per node: not counted yet). */
  async ownerAppIds(appLabel: string): Promise<Set<string>> {
    const nets = await this.docker.listNetworks({ filters: { label: this.filters({}) } });
    return new Set(nets.flatMap((n) => (n.Labels?.[appLabel] ? [n.Labels[appLabel]] : [])));
  }
}
