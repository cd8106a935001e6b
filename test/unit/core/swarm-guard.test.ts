// The node guard's planner (ADR 0019 on the swarm): (scope, pool, allowed ranges, edge) -> the rule set.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { INTERNAL_V4, INTERNAL_V6 } from "../../../src/core/isolation.js";
import { GW_BRIDGE, guardTable, type NodeGuardInput, planNodeGuard } from "../../../src/core/swarm-guard.js";

const base: NodeGuardInput = {
  scope: "0123456789ab",
  pool: "10.210.0.0/16",
  allow: [],
  hostPorts: [443, 80],
  edges: ["192.168.251.10"],
};

describe("planNodeGuard", () => {
  const cases: {
    name: string;
    input: Partial<NodeGuardInput>;
    want: Partial<ReturnType<typeof planNodeGuard>>;
  }[] = [
    {
      name: "by default: the gwbridge, the pool as tenants, the one-machine internal ranges, the edge's ports",
      input: {},
      want: {
        table: "pier-guard-0123456789ab",
        bridges: [GW_BRIDGE],
        tenants4: ["10.210.0.0/16"],
        internal4: INTERNAL_V4,
        internal6: INTERNAL_V6,
        hostPorts: [80, 443],
        edge4: ["192.168.251.10"],
        edge6: [],
      },
    },
    {
      name: "PIER_EGRESS_ALLOW split by family, malformed entries left out",
      input: { allow: ["192.168.251.99/32", "fd00:5::/64", "nonsense"] },
      want: { allow4: ["192.168.251.99/32"], allow6: ["fd00:5::/64"] },
    },
    {
      name: "edge addresses of both families, deduplicated; a malformed one skipped",
      input: { edges: ["fd00::10", "192.168.251.10", "192.168.251.10", "999.1.1.1"] },
      want: { edge4: ["192.168.251.10"], edge6: ["fd00::10"] },
    },
    {
      name: "bridge names nft would refuse are skipped (quotes, too long)",
      input: { bridges: ["docker_gwbridge", 'x" accept', "a-name-much-too-long"] },
      want: { bridges: ["docker_gwbridge"] },
    },
    {
      name: "no edge port: none opened",
      input: { hostPorts: [] },
      want: { hostPorts: [] },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const plan = planNodeGuard({ ...base, ...c.input });
      for (const [k, v] of Object.entries(c.want)) assert.deepEqual(plan[k as keyof typeof plan], v, k);
    });

  test("the node table never has the one-machine table's name (both can live on the manager's host)", () => {
    assert.notEqual(guardTable("abc"), "pier-abc");
    assert.equal(guardTable("a b;c"), "pier-guard-abc");
  });
});
