// The in-memory Firewall (src/core/ports.ts) for unit tests: it keeps the plan it was given last, and can
// be told to refuse (as a host without nftables or root does).
import type { IsolationPlan } from "../../../src/core/isolation.js";
import type { Firewall } from "../../../src/core/ports.js";

export class MemoryFirewall implements Firewall {
  plan: IsolationPlan | null = null;
  applied = 0;
  refuse: string | null = null;

  async apply(plan: IsolationPlan): Promise<void> {
    await new Promise((r) => setImmediate(r));
    if (this.refuse) throw new Error(this.refuse);
    this.plan = plan;
    this.applied++;
  }

  /** The networks whose sources are isolated now, with their subnets. */
  isolated(): Map<string, string[]> {
    return new Map((this.plan?.networks ?? []).map((n) => [n.network, [...n.v4, ...n.v6]]));
  }
}
