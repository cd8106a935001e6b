import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ADDRESSES_PER_NETWORK,
  type Cidr,
  DEFAULT_SUBNET_PREFIX,
  formatCidr,
  MAX_SUBNET_PREFIX,
  overlaps,
  parseCidr,
  pickSubnet,
  subnetCount,
} from "../../../src/core/subnets.js";

const cidr = (text: string): Cidr => {
  const c = parseCidr(text);
  if (typeof c === "string") throw new Error(c);
  return c;
};

describe("parseCidr", () => {
  const cases: [string, string | RegExp][] = [
    ["10.210.0.0/16", "10.210.0.0/16"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    [" 192.168.4.0/22 ", "192.168.4.0/22"],
    ["10.210.0.1/16", /host bits set: did you mean 10\.210\.0\.0\/16/],
    ["10.210.0.0", /IPv4 CIDR/],
    ["10.210.0.0/33", /0\.\.32/],
    ["10.256.0.0/16", /not an IPv4 address/],
    ["fd00::/64", /not an IPv4 address/],
    ["10.0.0/8", /not an IPv4 address/],
  ];
  for (const [input, want] of cases) {
    test(input, () => {
      const got = parseCidr(input);
      if (typeof want === "string") assert.equal(typeof got === "string" ? got : formatCidr(got), want);
      else assert.match(String(got), want);
    });
  }
});

describe("overlaps", () => {
  const cases: [string, string, boolean][] = [
    ["10.210.0.0/16", "10.210.5.0/24", true],
    ["10.210.5.0/24", "10.210.0.0/16", true],
    ["10.210.0.0/26", "10.210.0.64/26", false],
    ["10.210.0.0/16", "10.211.0.0/16", false],
    ["172.16.0.0/12", "172.17.0.0/16", true],
    ["10.0.0.0/8", "10.255.255.255/32", true],
  ];
  for (const [a, b, want] of cases) test(`${a} ${b}`, () => assert.equal(overlaps(cidr(a), cidr(b)), want));
});

describe("sizes", () => {
  test("a network of the default size holds what one app needs", () => {
    assert.ok(2 ** (32 - DEFAULT_SUBNET_PREFIX) >= ADDRESSES_PER_NETWORK);
    assert.equal(MAX_SUBNET_PREFIX, 26);
  });
  test("the default pool holds 1024 networks of the default size", () => {
    assert.equal(subnetCount(cidr("10.210.0.0/16"), 26), 1024);
    assert.equal(subnetCount(cidr("10.210.0.0/26"), 24), 0);
  });
});

describe("pickSubnet", () => {
  const pool = cidr("10.210.0.0/24");
  const cases: { name: string; claimed: string[]; foreign: string[]; want: string | null }[] = [
    { name: "the first one when none is taken", claimed: [], foreign: [], want: "10.210.0.0/26" },
    { name: "skips claimed ones", claimed: ["10.210.0.0/26"], foreign: [], want: "10.210.0.64/26" },
    {
      name: "reuses a freed one (a hole)",
      claimed: ["10.210.0.64/26", "10.210.0.128/26"],
      foreign: [],
      want: "10.210.0.0/26",
    },
    {
      name: "skips subnets overlapping a network the store does not know",
      claimed: ["10.210.0.0/26"],
      foreign: ["10.210.0.96/28"],
      want: "10.210.0.128/26",
    },
    {
      name: "a foreign network larger than the pool takes all of it",
      claimed: [],
      foreign: ["10.210.0.0/16"],
      want: null,
    },
    {
      name: "null when the pool is full",
      claimed: ["10.210.0.0/26", "10.210.0.64/26", "10.210.0.128/26", "10.210.0.192/26"],
      foreign: [],
      want: null,
    },
    {
      name: "foreign networks outside the pool do not matter",
      claimed: [],
      foreign: ["172.17.0.0/16", "192.168.0.0/20"],
      want: "10.210.0.0/26",
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.equal(pickSubnet(pool, 26, c.claimed, c.foreign.map(cidr)), c.want));
  }
  // Its speed at this size is measured by bench/subnets.ts (ADR 0027: no timed tests).
  test("with 1000 networks in use, the first free subnet after them", () => {
    const big = cidr("10.210.0.0/16");
    const claimed = Array.from({ length: 1000 }, (_, i) =>
      formatCidr({ base: big.base + i * 64, prefix: 26 }),
    );
    assert.equal(pickSubnet(big, 26, claimed, [cidr("172.17.0.0/16")]), "10.210.250.0/26");
    assert.equal(pickSubnet(big, 26, claimed.slice(1), []), "10.210.0.0/26", "a freed one is taken first");
  });
});
