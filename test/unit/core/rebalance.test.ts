import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LABEL } from "../../../src/core/labels.js";
import type { ClusterNode } from "../../../src/core/nodes.js";
import { crowded, spreadPlan, takesWork } from "../../../src/core/rebalance.js";
import { fakeSwarm } from "../../support/fake-nodes.js";

const swarm = (changes: Partial<ClusterNode>[]): ClusterNode[] =>
  fakeSwarm().map((n, i) => ({ ...n, ...(changes[i] ?? {}) }));

const instance = (app: string, deployment: string, node: string | undefined, running = true) => ({
  labels: { [LABEL.app]: app, [LABEL.deployment]: deployment },
  running,
  node,
});

describe("rebalance", () => {
  test("a node takes work when it is ready and active", () => {
    assert.equal(takesWork({ state: "ready", availability: "active" }), true);
    assert.equal(takesWork({ state: "ready", availability: "drain" }), false);
    assert.equal(takesWork({ state: "ready", availability: "pause" }), false);
    assert.equal(takesWork({ state: "down", availability: "active" }), false);
  });

  const open = ["node1", "node2", "node3"];
  const cases: [string, readonly string[], readonly string[], boolean][] = [
    ["one per node", open, ["node1", "node2", "node3"], false],
    ["2, 1 and 0 on three nodes", open, ["node1", "node1", "node2"], true],
    ["3 on one node, 0 on two", open, ["node1", "node1", "node1"], true],
    ["2 instances on two nodes of three", open, ["node1", "node2"], false],
    ["2 instances on one node, a node empty", open, ["node2", "node2"], true],
    ["one instance", open, ["node3"], false],
    ["none", open, [], false],
    ["4 on three nodes: 2, 1, 1", open, ["node1", "node1", "node2", "node3"], false],
    ["4 on three nodes: 2, 2, 0", open, ["node1", "node1", "node2", "node2"], true],
    ["one node takes work", ["node1"], ["node1", "node1", "node1"], false],
    // A node that takes no work (drained, down) does not count as a place to spread onto; what runs on it counts.
    [
      "two on a drained node, one per open node",
      ["node1", "node3"],
      ["node2", "node2", "node1", "node3"],
      false,
    ],
    [
      "three on a node that is not open, the open ones empty",
      ["node1", "node3"],
      ["node2", "node2", "node2"],
      true,
    ],
  ];
  for (const [name, nodes, running, want] of cases)
    test(`crowded: ${name}: ${want}`, () => assert.equal(crowded(nodes, running), want));

  test("spreadPlan reads each app's serving deployment's running instances only, in the order of `serving`", () => {
    const nodes = swarm([{}, {}, { state: "down" }]);
    const serving = new Map([
      ["web", "d2"],
      ["api", "a1"],
      ["even", "e1"],
    ]);
    const instances = [
      // web: its serving deployment runs 2 on node1, 0 on node2 (node3 is down); an older one's and a
      // stopped instance are not counted.
      instance("web", "d2", "node1"),
      instance("web", "d2", "node1"),
      instance("web", "d1", "node2"),
      instance("web", "d2", "node2", false),
      // api: 3 on node2, none on node1.
      instance("api", "a1", "node2"),
      instance("api", "a1", "node2"),
      instance("api", "a1", "node2"),
      // even: one per open node; an instance on the down node too.
      instance("even", "e1", "node1"),
      instance("even", "e1", "node2"),
      instance("even", "e1", "node3"),
      // An app not serving (stopped, a task) is not in `serving`; an instance not yet placed has no node.
      instance("gone", "g1", "node1"),
      instance("gone", "g1", "node1"),
      instance("even", "e1", undefined),
    ];
    const all = new Set(serving.keys());
    assert.deepEqual(spreadPlan(nodes, instances, serving, all), ["web", "api"]);
    // Once node3 is ready again, `even` is even still: one on each; web and api spread, the nodes are even.
    assert.deepEqual(spreadPlan(swarm([]), instances, serving, all), ["web", "api"]);
    // A drained node2 leaves node1 alone to take work: nothing to spread onto.
    assert.deepEqual(
      spreadPlan(swarm([{}, { availability: "drain" }, { state: "down" }]), instances, serving, all),
      [],
    );
    // An app that may not move (being deployed, held on a node) is not planned.
    assert.deepEqual(spreadPlan(nodes, instances, serving, new Set(["api"])), ["api"]);
  });

  /** One-instance apps `a0`, `a1`, ... on these nodes, all serving and movable. */
  const singles = (where: string[]) => {
    const serving = new Map(where.map((_, i) => [`a${i}`, `d${i}`]));
    return {
      serving,
      instances: where.map((node, i) => instance(`a${i}`, `d${i}`, node)),
      movable: new Set(serving.keys()),
    };
  };

  const nodePlans: [string, string[], number][] = [
    [
      "six one-instance apps on node1 and node2, node3 back: two move to it",
      ["node1", "node1", "node1", "node2", "node2", "node2"],
      2,
    ],
    ["2, 1 and 0: one moves", ["node1", "node1", "node2"], 1],
    ["1, 1 and 0: even enough", ["node1", "node2"], 0],
    ["one per node: nothing", ["node1", "node2", "node3"], 0],
    ["nine on node1: six move", Array<string>(9).fill("node1"), 6],
  ];
  for (const [name, where, moves] of nodePlans)
    test(`spreadPlan, the nodes' loads: ${name}`, () => {
      const { serving, instances, movable } = singles(where);
      const plan = spreadPlan(swarm([]), instances, serving, movable);
      assert.equal(plan.length, moves, JSON.stringify(plan));
      // Each app at most once, and only apps with an instance on a node busier than another.
      assert.equal(new Set(plan).size, plan.length);
    });

  test("spreadPlan, the nodes' loads: apps that may not move count as load; the others even the nodes out", () => {
    // node1 runs 4 (two of them held there: a bucket's), node2 1, node3 0.
    const { serving, instances } = singles(["node1", "node1", "node1", "node1", "node2"]);
    const plan = spreadPlan(swarm([]), instances, serving, new Set(["a2", "a3", "a4"]));
    // a2 and a3 move (node1 4 -> 2, node3 0 -> 2): the nodes run 2, 1, 2.
    assert.deepEqual(plan, ["a2", "a3"]);
  });

  test("spreadPlan, the nodes' loads: a one-instance app moves before an app of several", () => {
    const serving = new Map([
      ["big", "b1"],
      ["small", "s1"],
    ]);
    // node1: big x2 and small (3); node2: big (1); node3 nothing. big is not crowded itself (2, 1, 0 is:
    // so make it 1 per node on node1 and node2 plus small on node1).
    const instances = [
      instance("big", "b1", "node1"),
      instance("big", "b1", "node2"),
      instance("small", "s1", "node1"),
      instance("small", "s1", "node1"),
    ];
    // small (2 on node1, none on node3) crowds itself: it moves first; then the nodes run 2, 2, 1: even.
    assert.deepEqual(spreadPlan(swarm([]), instances, serving, new Set(serving.keys())), ["small"]);
    const single = [
      instance("big", "b1", "node1"),
      instance("big", "b1", "node2"),
      instance("small", "s1", "node1"),
    ];
    // node1 2, node2 1, node3 0: small (one instance) moves, not big.
    assert.deepEqual(spreadPlan(swarm([]), single, serving, new Set(serving.keys())), ["small"]);
  });
});
