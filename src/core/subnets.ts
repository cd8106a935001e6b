/**
 * Pier's own IPv4 subnet pool (ADR 0007): every network Pier creates gets an explicit subnet of
 * PIER_SUBNET_SIZE from PIER_SUBNET_POOL, so the number of apps on one engine is not bounded by dockerd's
 * default address pools (about 30 networks). Pure: parsing, overlap, and which subnet is free.
 */

/** An IPv4 CIDR as numbers: `base` is the first address (aligned to `prefix`). */
export interface Cidr {
  base: number;
  prefix: number;
}

/**
 * Addresses one app network needs at most: up to 20 instance slots with two sandboxes each (ADR 0004;
 * a sandbox holds the network namespace of one instance), the build sandbox, and up to 20 task instances
 * (tasks run on the network directly, without a sandbox), plus the bridge's gateway. With the network's
 * own and broadcast addresses, a /26 (64 addresses) holds them: 2 * 20 + 1 + 20 + 1 + 2 = 64.
 */
export const ADDRESSES_PER_NETWORK = 2 * 20 + 1 + 20 + 1 + 2;

/** The longest prefix (smallest network) that still holds ADDRESSES_PER_NETWORK. */
export const MAX_SUBNET_PREFIX = 32 - Math.ceil(Math.log2(ADDRESSES_PER_NETWORK));

export const DEFAULT_SUBNET_POOL = "10.210.0.0/16";
export const DEFAULT_SUBNET_PREFIX = MAX_SUBNET_PREFIX;

const OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function parseIpv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => OCTET.test(p))) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

export function formatIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
}

/** `a.b.c.d/n` with the host bits zero, or a message saying what is wrong. */
export function parseCidr(text: string): Cidr | string {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(text.trim());
  if (!m) return "must be an IPv4 CIDR like 10.210.0.0/16";
  const base = parseIpv4(m[1] as string);
  const prefix = Number(m[2]);
  if (base === null) return `'${m[1]}' is not an IPv4 address`;
  if (prefix > 32) return "the prefix length must be 0..32";
  if (base % 2 ** (32 - prefix) !== 0) {
    const aligned = base - (base % 2 ** (32 - prefix));
    return `has host bits set: did you mean ${formatIpv4(aligned)}/${prefix}?`;
  }
  return { base, prefix };
}

export const formatCidr = (c: Cidr) => `${formatIpv4(c.base)}/${c.prefix}`;

const size = (c: Cidr) => 2 ** (32 - c.prefix);

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.base < b.base + size(b) && b.base < a.base + size(a);
}

/** How many networks of `/prefix` the pool holds. */
export function subnetCount(pool: Cidr, prefix: number): number {
  return prefix < pool.prefix ? 0 : 2 ** (prefix - pool.prefix);
}

/**
 * The first `/prefix` subnet of the pool that is neither claimed (Pier's own record: exact pool subnets)
 * nor overlapping a network that exists on the engine (another Pier's, a user's), or null: the pool is
 * full. Cost: linear in the number of subnets in use, with a set lookup per candidate.
 */
export function pickSubnet(
  pool: Cidr,
  prefix: number,
  claimed: readonly string[],
  foreign: readonly Cidr[],
): string | null {
  const taken = new Set(claimed);
  const step = 2 ** (32 - prefix);
  const count = subnetCount(pool, prefix);
  for (let i = 0; i < count; i++) {
    const candidate = { base: pool.base + i * step, prefix };
    const text = formatCidr(candidate);
    if (taken.has(text)) continue;
    if (foreign.some((f) => overlaps(f, candidate))) continue;
    return text;
  }
  return null;
}
