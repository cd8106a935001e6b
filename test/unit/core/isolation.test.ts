// The isolation planner (ADR 0019): (networks, pool, allowed ranges, edge ports) -> the rule set as data.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  INTERNAL_V4,
  INTERNAL_V6,
  type IsolationInput,
  isolationTable,
  planIsolation,
} from "../../../src/core/isolation.js";

const base: IsolationInput = {
  scope: "0123456789ab",
  pool: "10.210.0.0/16",
  networks: [],
  allow: [],
  hostPorts: [8000, 8443],
};

describe("planIsolation", () => {
  const cases: {
    name: string;
    input: Partial<IsolationInput>;
    networks: { network: string; v4: string[]; v6: string[] }[];
    tenants4?: string[];
    tenants6?: string[];
    allow4?: string[];
    allow6?: string[];
  }[] = [
    { name: "no network: nothing to isolate", input: {}, networks: [], tenants4: ["10.210.0.0/16"] },
    {
      name: "one chain per network, in the order given, each with its own subnets",
      input: {
        networks: [
          { name: "pier-b", subnets: ["10.210.0.64/26"] },
          { name: "pier-a", subnets: ["10.210.0.0/26"] },
        ],
      },
      networks: [
        { network: "pier-b", v4: ["10.210.0.64/26"], v6: [] },
        { network: "pier-a", v4: ["10.210.0.0/26"], v6: [] },
      ],
      // The pool holds them: elements of the destination set never overlap.
      tenants4: ["10.210.0.0/16"],
    },
    {
      name: "an IPv6 network: both families, and its IPv6 subnet is no other network's destination",
      input: { networks: [{ name: "pier-a-v6-x", subnets: ["10.210.0.0/26", "fd00:1::/64"] }] },
      networks: [{ network: "pier-a-v6-x", v4: ["10.210.0.0/26"], v6: ["fd00:1::/64"] }],
      tenants6: ["fd00:1::/64"],
    },
    {
      name: "an IPv6 subnet a later network asks for too (the engine refuses it): the earlier one keeps it",
      input: {
        networks: [
          { name: "pier-z", subnets: ["10.210.0.0/26", "fd00:1::/64"] },
          { name: "pier-a", subnets: ["10.210.0.64/26", "fd00:1::/80"] },
        ],
      },
      networks: [
        { network: "pier-z", v4: ["10.210.0.0/26"], v6: ["fd00:1::/64"] },
        { network: "pier-a", v4: ["10.210.0.64/26"], v6: [] },
      ],
      tenants6: ["fd00:1::/64"],
    },
    {
      name: "a subnet outside the pool (a pool changed since) is still another tenant's",
      input: { networks: [{ name: "pier-old", subnets: ["10.99.0.0/26"] }] },
      networks: [{ network: "pier-old", v4: ["10.99.0.0/26"], v6: [] }],
      tenants4: ["10.210.0.0/16", "10.99.0.0/26"],
    },
    {
      name: "malformed and repeated subnets are skipped; a network left with none has no chain",
      input: {
        networks: [
          { name: "pier-a", subnets: ["10.210.0.0/26", "10.210.0.0/26", "nonsense"] },
          { name: "pier-b", subnets: ["10.210.0.1/26"] },
        ],
      },
      networks: [{ network: "pier-a", v4: ["10.210.0.0/26"], v6: [] }],
    },
    {
      name: "allowed ranges by family",
      input: { allow: ["192.168.7.0/24", "fd12::/48", "bad"] },
      networks: [],
      allow4: ["192.168.7.0/24"],
      allow6: ["fd12::/48"],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const plan = planIsolation({ ...base, ...c.input });
      assert.deepEqual(
        plan.networks.map(({ network, v4, v6 }) => ({ network, v4, v6 })),
        c.networks,
      );
      assert.deepEqual(
        plan.networks.map((n) => n.chain),
        c.networks.map((n) => n.network),
        "a network's chain is named for it (kept from one plan to the next)",
      );
      if (c.tenants4) assert.deepEqual(plan.tenants4, c.tenants4);
      if (c.tenants6) assert.deepEqual(plan.tenants6, c.tenants6);
      assert.deepEqual(plan.allow4, c.allow4 ?? []);
      assert.deepEqual(plan.allow6, c.allow6 ?? []);
    });
  }

  test("private, shared and link-local ranges are internal; the edge's ports are the host's only open ones", () => {
    const plan = planIsolation({ ...base, hostPorts: [8443, 8000, 8000] });
    assert.deepEqual(plan.internal4, INTERNAL_V4);
    assert.ok(plan.internal4.includes("169.254.0.0/16"));
    assert.deepEqual(plan.internal6, INTERNAL_V6);
    assert.deepEqual(plan.hostPorts, [8000, 8443]);
  });

  test("one table per Pier scope, named for nftables", () => {
    assert.equal(planIsolation(base).table, "pier-0123456789ab");
    assert.equal(isolationTable("a b;c"), "pier-abc");
    const odd = planIsolation({ ...base, networks: [{ name: "9net.x", subnets: ["10.210.0.0/26"] }] });
    assert.equal(odd.networks[0]?.chain, "n-9net_x");
  });

  test("hundreds of networks: distinct chains, sources never overlap", () => {
    const networks = Array.from({ length: 1000 }, (_, i) => ({
      name: `pier-${i}`,
      subnets: [`10.210.${Math.floor(i / 4)}.${(i % 4) * 64}/26`],
    }));
    const plan = planIsolation({ ...base, networks });
    assert.equal(plan.networks.length, 1000);
    assert.equal(new Set(plan.networks.flatMap((n) => n.v4)).size, 1000);
  });
});
