import { existsSync } from "node:fs";
import type { IsolationPlan, NetworkRule } from "../core/isolation.js";
import type { Firewall } from "../core/ports.js";
import { type ExecResult, exec } from "./exec.js";

/** Before the engine's own filter chains (iptables-nft's, priority 0): a drop here is final. */
const PRIORITY = "filter - 10";

const elements = (xs: readonly string[]) => (xs.length > 0 ? ` elements = { ${xs.join(", ")} };` : "");
/** Sets whose elements change one network at a time never overlap, so each can be deleted alone. */
const DIFFED = new Set(["tenants4", "tenants6", "sources4", "sources6"]);
const set = (name: string, type: "ipv4_addr" | "ipv6_addr", xs: readonly string[]) =>
  `  set ${name} { type ${type}; flags interval;${DIFFED.has(name) ? "" : " auto-merge;"}${elements(xs)} }`;
const vmap = (name: string, type: "ipv4_addr" | "ipv6_addr", pairs: string[]) =>
  `  map ${name} { type ${type} : verdict; flags interval;${elements(pairs)} }`;

/** A network's two chains' rules: its own subnets, then the common rule (`egress` or `ingress`). */
function chainRules(n: NetworkRule): { out: string[]; in: string[] } {
  const own = (dir: "daddr" | "saddr") => [
    ...(n.v4.length > 0 ? [`ip ${dir} { ${n.v4.join(", ")} } return`] : []),
    ...(n.v6.length > 0 ? [`ip6 ${dir} { ${n.v6.join(", ")} } return`] : []),
  ];
  return { out: [...own("daddr"), "jump egress"], in: [...own("saddr"), "jump ingress"] };
}

function networkChains(plan: IsolationPlan): string[] {
  return plan.networks.flatMap((n) => {
    const r = chainRules(n);
    const body = (xs: string[]) => xs.map((x) => `    ${x}`);
    return [
      `  chain ${n.chain}-out {`,
      ...body(r.out),
      "  }",
      `  chain ${n.chain}-in {`,
      ...body(r.in),
      "  }",
    ];
  });
}

/** The elements of each map and diffed set, per network, as `add element` / `delete element` take them. */
function elementsOf(n: NetworkRule): [string, string][] {
  return [
    ...n.v4.flatMap((s): [string, string][] => [
      ["out4", `${s} : jump ${n.chain}-out`],
      ["in4", `${s} : jump ${n.chain}-in`],
      ["sources4", s],
    ]),
    ...n.v6.flatMap((s): [string, string][] => [
      ["out6", `${s} : jump ${n.chain}-out`],
      ["in6", `${s} : jump ${n.chain}-in`],
      ["sources6", s],
    ]),
  ];
}

const same = (a: readonly unknown[], b: readonly unknown[]) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The change from `prev` (applied) to `next` as one transaction that touches only the networks that came,
 * went or changed (a few lines instead of the whole table: a network change costs the same with a thousand
 * networks as with one), or null when the whole table must be made again (the first plan, another table,
 * other allowed ranges or ports, or no table since the last had no network).
 */
export function renderNftChange(prev: IsolationPlan, next: IsolationPlan): string | null {
  const fixed = (p: IsolationPlan) => [p.table, p.internal4, p.internal6, p.allow4, p.allow6, p.hostPorts];
  if (prev.networks.length === 0 || next.networks.length === 0 || !same(fixed(prev), fixed(next)))
    return null;
  const t = `inet ${next.table}`;
  const before = new Map(prev.networks.map((n) => [n.network, n]));
  const after = new Map(next.networks.map((n) => [n.network, n]));
  const changed = (n: NetworkRule) => {
    const o = before.get(n.network);
    return o !== undefined && (o.chain !== n.chain || !same(o.v4, n.v4) || !same(o.v6, n.v6));
  };
  const gone = prev.networks.filter((n) => !after.has(n.network));
  const edited = next.networks.filter(changed);
  const added = next.networks.filter((n) => !before.has(n.network));
  const out: string[] = [];
  const element = (verb: "add" | "delete", n: NetworkRule) =>
    elementsOf(n).map(([m, e]) => `${verb} element ${t} ${m} { ${verb === "add" ? e : e.split(" : ")[0]} }`);
  const tenants = (verb: "add" | "delete", from: IsolationPlan, other: IsolationPlan) =>
    (["tenants4", "tenants6"] as const).flatMap((k) =>
      from[k].filter((x) => !other[k].includes(x)).map((x) => `${verb} element ${t} ${k} { ${x} }`),
    );
  for (const n of [...gone, ...edited.map((e) => before.get(e.network) as NetworkRule)])
    out.push(...element("delete", n));
  out.push(...tenants("delete", prev, next));
  for (const n of gone) out.push(`delete chain ${t} ${n.chain}-out`, `delete chain ${t} ${n.chain}-in`);
  for (const n of [...edited, ...added]) {
    const r = chainRules(n);
    for (const dir of ["out", "in"] as const) {
      const chain = `${t} ${n.chain}-${dir}`;
      out.push(before.has(n.network) ? `flush chain ${chain}` : `add chain ${chain}`);
      out.push(...r[dir].map((rule) => `add rule ${chain} ${rule}`));
    }
    out.push(...element("add", n));
  }
  out.push(...tenants("add", next, prev));
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

type SetRender = (name: string, type: "ipv4_addr" | "ipv6_addr", xs: readonly string[]) => string;

/** The policy's address sets (others' networks, private ranges, allowed ones), each drawn by `render`. */
export function policySets(
  plan: Pick<IsolationPlan, "tenants4" | "tenants6" | "internal4" | "internal6" | "allow4" | "allow6">,
  render: SetRender,
): string[] {
  return [
    render("tenants4", "ipv4_addr", plan.tenants4),
    render("tenants6", "ipv6_addr", plan.tenants6),
    render("internal4", "ipv4_addr", plan.internal4),
    render("internal6", "ipv6_addr", plan.internal6),
    render("allow4", "ipv4_addr", plan.allow4),
    render("allow6", "ipv6_addr", plan.allow6),
  ];
}

/**
 * The chain every packet from a Pier network to elsewhere goes through (here and in the swarm's node guard,
 * src/adapters/swarm-guard.ts): no other tenant, allowed ranges and DNS, no private range. `before` comes
 * right after the tenants' drops (the node guard's edge ports).
 */
export function egressChain(before: readonly string[]): string[] {
  return [
    "  chain egress {",
    "    ip daddr @tenants4 drop",
    "    ip6 daddr @tenants6 drop",
    ...before,
    "    ip daddr @allow4 return",
    "    ip6 daddr @allow6 return",
    // The engine's DNS server forwards queries from inside the instance's network namespace.
    "    meta l4proto { tcp, udp } th dport 53 return",
    "    ip daddr @internal4 drop",
    "    ip6 daddr @internal6 drop",
    "  }",
  ];
}

/**
 * What the host takes from Pier's networks: replies, ICMP (`icmp`: its protocols as nft reads them, names or
 * numbers), the edge's ports and DNS.
 */
export function hostChain(hostPorts: readonly number[], icmp: string): string[] {
  const ports = hostPorts.length > 0 ? [`    tcp dport { ${hostPorts.join(", ")} } return`] : [];
  return [
    "  chain host {",
    "    ct state established,related return",
    `    meta l4proto { ${icmp} } return`,
    ...ports,
    "    meta l4proto { tcp, udp } th dport 53 return",
    "    drop",
    "  }",
  ];
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
  return [
    ...head,
    `table ${t} {`,
    ...policySets(plan, set),
    set("sources4", "ipv4_addr", src4),
    set("sources6", "ipv6_addr", src6),
    ...egressChain([]),
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
    ...hostChain(plan.hostPorts, "icmp, ipv6-icmp"),
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

  /** The plan applied last: a change to the next is applied alone when it can be. */
  private last: IsolationPlan | null = null;

  async apply(plan: IsolationPlan): Promise<void> {
    const change = this.last ? renderNftChange(this.last, plan) : null;
    this.last = null;
    if (change !== null) {
      // Someone removed or changed the table (nft flush ruleset): then the whole table is made again.
      const ok =
        change === "" ||
        (await this.run([this.nft, "-f", "-"], change).then(
          () => true,
          () => false,
        ));
      if (ok) {
        this.last = plan;
        return;
      }
    }
    await this.run([this.nft, "-f", "-"], renderNft(plan));
    this.last = plan;
  }
}

/** PIER_ISOLATION=off: no rules. */
export const noFirewall: Firewall = { apply: async () => undefined };
