// The Docker adapter's app networks (the Networks part of the engine ports): bridges with a subnet of Pier's
// pool, only Pier's own touched. DockerEngine (docker.ts) delegates to it.
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { labelFilter } from "../../core/labels.js";
import type { NetworkSubnets } from "../../core/ports.js";
import { isNotFound, networkExists, networksWithSubnets } from "./docker-common.js";

export class DockerNetworks {
  constructor(
    private readonly docker: Docker,
    /** The labels every object of this Pier carries. */
    private readonly own: Record<string, string>,
  ) {}

  networkExists(name: string): Promise<boolean> {
    return networkExists(this.docker, name);
  }

  networksWithSubnets(): Promise<NetworkSubnets[]> {
    return networksWithSubnets(this.docker);
  }

  async ensureNetwork(
    name: string,
    labels: Record<string, string>,
    subnets: { ipv4: string | null; ipv6: string | null },
  ): Promise<void> {
    try {
      await this.docker.getNetwork(name).inspect();
      return;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const config = [
      ...(subnets.ipv4 ? [{ Subnet: subnets.ipv4 }] : []),
      ...(subnets.ipv6 ? [{ Subnet: subnets.ipv6 }] : []),
    ];
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Labels: { ...labels, ...this.own },
        EnableIPv6: subnets.ipv6 !== null,
        ...(config.length > 0 ? { IPAM: { Driver: "default", Config: config } } : {}),
      });
    } catch (e) {
      const msg = (e as Error).message;
      if (/overlaps/i.test(msg)) {
        throw new PierError(
          "SUBNET_OVERLAPS",
          `A subnet of the network ${name} (${config.map((c) => c.Subnet).join(", ")}) overlaps a network that exists already.`,
        );
      }
      // Two deploys may race to create the same network.
      if ((e as { statusCode?: number }).statusCode !== 409) {
        throw new PierError("ENGINE_ERROR", `Could not create the network ${name}: ${msg}`);
      }
    }
  }

  async removeNetworks(labels: Record<string, string>, keep?: string): Promise<string[]> {
    const nets = await this.docker.listNetworks({
      filters: { label: labelFilter(this.own, labels) },
    });
    const removed: string[] = [];
    for (const n of nets) {
      if (n.Name === keep) continue;
      try {
        await this.docker.getNetwork(n.Id).remove();
        removed.push(n.Name);
      } catch (e) {
        const code = (e as { statusCode?: number }).statusCode;
        if (code === 404) removed.push(n.Name);
        else if (code !== 403 && code !== 409) throw e;
      }
    }
    return removed;
  }
}
