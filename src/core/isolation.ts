/**
 * Tenant isolation as data (ADR 0019): which sources are Pier's networks, what each may reach, and what the
 * host accepts from them. A pure planner; the firewall adapter (src/adapters/nft-isolation.ts) carries the
 * plan out as one nftables table of Pier's own, replaced whole and atomically at each change.
 *
 * The rule: a packet whose source is in one of Pier's networks may go to that network's own subnets, to
 * PIER_EGRESS_ALLOW, to DNS servers outside the pool, and to public addresses; not to another Pier network
 * (the whole pool, and every IPv6 subnet Pier recorded), nor to private, shared or link-local ranges. A new
 * connection into a Pier network from such a range is dropped unless the engine's DNAT made it (a published
 * port). The host itself takes from Pier's networks only replies, ICMP, DNS and the edge's ports.
 */
import { parseIpv6 } from "./plan-docker.js";
import { type Cidr, formatCidr, overlaps, parseCidr } from "./subnets.js";

/** A network Pier made or is about to make, with its subnets (IPv4 and IPv6 CIDRs). */
export interface IsolatedNetwork {
  name: string;
  subnets: readonly string[];
}

export interface IsolationInput {
  /** `pier.scope` (ADR 0004): one table per Pier installation, so Piers sharing an engine never collide. */
  scope: string;
  /** PIER_SUBNET_POOL: every address of it is another tenant's, unless in the source's own network. */
  pool: string;
  networks: readonly IsolatedNetwork[];
  /** PIER_EGRESS_ALLOW: private ranges instances may reach (a database on the LAN, a proxy). */
  allow: readonly string[];
  /** The edge's ports (PIER_HTTP_PORT, PIER_HTTPS_PORT): instances reach other apps by their URL. */
  hostPorts: readonly number[];
}

/** One network's chain: its own subnets are the only internal destinations its instances reach. */
export interface NetworkRule {
  chain: string;
  network: string;
  v4: string[];
  v6: string[];
}

export interface IsolationPlan {
  table: string;
  networks: NetworkRule[];
  /** Destinations no Pier network reaches beyond its own subnets: the pool and Pier's IPv6 subnets. */
  tenants4: string[];
  tenants6: string[];
  /** Private, shared and link-local ranges: reached only when allowed (and DNS). */
  internal4: string[];
  internal6: string[];
  allow4: string[];
  allow6: string[];
  hostPorts: number[];
}

/** RFC 1918, shared address space (RFC 6598), link-local, and Pier's pool; IPv6 ULA and link-local. */
export const INTERNAL_V4 = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];
export const INTERNAL_V6 = ["fc00::/7", "fe80::/10"];

/** An IPv6 CIDR as a range of 128-bit numbers, or null. */
function range6(text: string): { from: bigint; to: bigint } | null {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const bytes = m ? parseIpv6(m[1] as string) : null;
  if (!m || !bytes) return null;
  const prefix = Number(m[2]);
  if (prefix > 128) return null;
  const n = bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
  const span = 1n << BigInt(128 - prefix);
  const from = n - (n % span);
  return { from, to: from + span - 1n };
}

type Family = 4 | 6;
const familyOf = (cidr: string): Family | null => {
  if (cidr.includes(":")) return range6(cidr) ? 6 : null;
  return typeof parseCidr(cidr) === "string" ? null : 4;
};

/** Whether two CIDRs of one family share an address (false across families or when one is malformed). */
export function cidrsOverlap(a: string, b: string): boolean {
  if (familyOf(a) === null || familyOf(b) === null) return false;
  return overlapping(a, b);
}

function overlapping(a: string, b: string): boolean {
  if (a.includes(":") !== b.includes(":")) return false;
  if (a.includes(":")) {
    const x = range6(a);
    const y = range6(b);
    return x !== null && y !== null && x.from <= y.to && y.from <= x.to;
  }
  return overlaps(parseCidr(a) as Cidr, parseCidr(b) as Cidr);
}

/** A chain name per network, kept from one plan to the next (nftables names: letters, digits, `-`, `_`). */
const chainOf = (network: string) => {
  const clean = network.replace(/[^A-Za-z0-9_-]/g, "_");
  return /^[A-Za-z]/.test(clean) ? clean : `n-${clean}`;
};

/** The table's name for a Pier scope (nftables names: letters, digits, `-`, `_`). */
export const isolationTable = (scope: string) => `pier-${scope.replace(/[^A-Za-z0-9_-]/g, "")}`;

/**
 * The rule set for these networks, in their order. A subnet that overlaps one an earlier network has (two
 * apps asking for one IPv6 subnet: the engine refuses the second, which came later) is left out: keys of
 * the source maps may not overlap, and the earlier subnet is no other network's destination already.
 * Malformed subnets are skipped.
 */
export function planIsolation(input: IsolationInput): IsolationPlan {
  const taken: string[] = [];
  const networks: NetworkRule[] = [];
  for (const n of input.networks) {
    const rule: NetworkRule = { chain: chainOf(n.name), network: n.name, v4: [], v6: [] };
    for (const s of [...new Set(n.subnets)]) {
      const fam = familyOf(s);
      if (fam === null || taken.some((t) => overlapping(t, s))) continue;
      taken.push(s);
      (fam === 4 ? rule.v4 : rule.v6).push(s);
    }
    if (rule.v4.length + rule.v6.length > 0) networks.push(rule);
  }
  const allow = input.allow.filter((a) => familyOf(a) !== null);
  const poolCidr = parseCidr(input.pool);
  const pool = typeof poolCidr === "string" ? [] : [formatCidr(poolCidr)];
  const uniq = (xs: string[]) => [...new Set(xs)].sort();
  // Elements that never overlap (so that each can be removed alone): the pool, and subnets outside it.
  const outside = networks.flatMap((n) => n.v4).filter((s) => !pool.some((p) => overlapping(p, s)));
  return {
    table: isolationTable(input.scope),
    networks,
    tenants4: uniq([...pool, ...outside]),
    tenants6: uniq(networks.flatMap((n) => n.v6)),
    internal4: [...INTERNAL_V4],
    internal6: [...INTERNAL_V6],
    allow4: uniq(allow.filter((a) => familyOf(a) === 4)),
    allow6: uniq(allow.filter((a) => familyOf(a) === 6)),
    hostPorts: [...new Set(input.hostPorts)].sort((a, b) => a - b),
  };
}
