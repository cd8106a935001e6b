import { existsSync } from "node:fs";
import type { IsolationPlan } from "../core/isolation.js";
import type { Firewall } from "../core/ports.js";
import { type ExecResult, exec } from "./exec.js";

/** Before the engine's own filter chains (iptables-nft's, priority 0): a drop here is final. */
const PRIORITY = "filter - 10";

const elements = (xs: readonly string[]) => (xs.length > 0 ? ` elements = { ${xs.join(", ")} };` : "");
const set = (name: string, type: "ipv4_addr" | "ipv6_addr", xs: readonly string[]) =>
  `  set ${name} { type ${type}; flags interval; auto-merge;${elements(xs)} }`;
const vmap = (name: string, type: "ipv4_addr" | "ipv6_addr", pairs: string[]) =>
  `  map ${name} { type ${type} : verdict; flags interval;${elements(pairs)} }`;

/** One chain per network: its own subnets, then the common rule (`egress` or `ingress`). */
function networkChains(plan: IsolationPlan): string[] {
  const out: string[] = [];
  for (const n of plan.networks) {
    const own = (dir: "daddr" | "saddr") => [
      ...(n.v4.length > 0 ? [`    ip ${dir} { ${n.v4.join(", ")} } return`] : []),
      ...(n.v6.length > 0 ? [`    ip6 ${dir} { ${n.v6.join(", ")} } return`] : []),
    ];
    out.push(`  chain ${n.chain}-out {`, ...own("daddr"), "    jump egress", "  }");
    out.push(`  chain ${n.chain}-in {`, ...own("saddr"), "    jump ingress", "  }");
  }
  return out;
}

/**
 * The plan as an nftables script (`nft -f -`): the table is created if missing, deleted and made again in
 * one transaction, so packets see the old rules or the new ones, never none. A plan with no network deletes
 * the table. Pure, for the unit tests.
 */
export function renderNft(plan: IsolationPlan): string {
  const t = `inet ${plan.table}`;
  const head = [`table ${t} {}`, `delete table ${t}`];
  if (plan.networks.length === 0) return `${head.join("\n")}\n`;
  const pairs = (fam: "v4" | "v6", dir: "out" | "in") =>
    plan.networks.flatMap((n) => n[fam].map((s) => `${s} : jump ${n.chain}-${dir}`));
  const src4 = plan.networks.flatMap((n) => n.v4);
  const src6 = plan.networks.flatMap((n) => n.v6);
  const ports = plan.hostPorts.length > 0 ? [`    tcp dport { ${plan.hostPorts.join(", ")} } return`] : [];
  return [
    ...head,
    `table ${t} {`,
    set("tenants4", "ipv4_addr", plan.tenants4),
    set("tenants6", "ipv6_addr", plan.tenants6),
    set("internal4", "ipv4_addr", plan.internal4),
    set("internal6", "ipv6_addr", plan.internal6),
    set("allow4", "ipv4_addr", plan.allow4),
    set("allow6", "ipv6_addr", plan.allow6),
    set("sources4", "ipv4_addr", src4),
    set("sources6", "ipv6_addr", src6),
    "  chain egress {",
    "    ip daddr @tenants4 drop",
    "    ip6 daddr @tenants6 drop",
    "    ip daddr @allow4 return",
    "    ip6 daddr @allow6 return",
    // The engine's DNS server forwards queries from inside the instance's network namespace.
    "    meta l4proto { tcp, udp } th dport 53 return",
    "    ip daddr @internal4 drop",
    "    ip6 daddr @internal6 drop",
    "  }",
    "  chain ingress {",
    // A published port (the engine's DNAT) is reached from anywhere; a direct connection is not.
    "    ct status dnat return",
    "    ip saddr @tenants4 drop",
    "    ip6 saddr @tenants6 drop",
    "    ip saddr @internal4 drop",
    "    ip6 saddr @internal6 drop",
    "  }",
    ...networkChains(plan),
    vmap("out4", "ipv4_addr", pairs("v4", "out")),
    vmap("out6", "ipv6_addr", pairs("v6", "out")),
    vmap("in4", "ipv4_addr", pairs("v4", "in")),
    vmap("in6", "ipv6_addr", pairs("v6", "in")),
    "  chain forward {",
    `    type filter hook forward priority ${PRIORITY}; policy accept;`,
    "    ct state established,related accept",
    "    ip saddr vmap @out4",
    "    ip6 saddr vmap @out6",
    "    ip daddr vmap @in4",
    "    ip6 daddr vmap @in6",
    "  }",
    "  chain host {",
    "    ct state established,related return",
    "    meta l4proto { icmp, ipv6-icmp } return",
    ...ports,
    "    meta l4proto { tcp, udp } th dport 53 return",
    "    drop",
    "  }",
    "  chain input {",
    `    type filter hook input priority ${PRIORITY}; policy accept;`,
    "    ip saddr @sources4 jump host",
    "    ip6 saddr @sources6 jump host",
    "  }",
    "}",
    "",
  ].join("\n");
}

/**
 * The firewall as one nftables table of Pier's own (`inet pier-<scope>`). dockerd's iptables-nft only
 * rewrites the tables it made, so its reshuffles (each network it creates re-inserts its FORWARD rules)
 * never open a window in this one; a drop in any base chain of a hook is final.
 */
export class NftFirewall implements Firewall {
  constructor(
    private readonly run: (argv: readonly string[], input: string) => Promise<ExecResult> = (argv, input) =>
      exec(argv, { input }),
    private readonly nft = existsSync("/usr/sbin/nft") ? "/usr/sbin/nft" : "nft",
  ) {}

  async apply(plan: IsolationPlan): Promise<void> {
    await this.run([this.nft, "-f", "-"], renderNft(plan));
  }
}

/** PIER_ISOLATION=off: no rules. */
export const noFirewall: Firewall = { apply: async () => undefined };
