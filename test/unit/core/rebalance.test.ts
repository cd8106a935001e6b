import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LABEL } from "../../../src/core/labels.js";
import type { ClusterNode } from "../../../src/core/nodes.js";
import { crowded, crowdedApps, takesWork } from "../../../src/core/rebalance.js";
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

  test("crowdedApps reads each app's serving deployment's running instances only, in the order of `serving`", () => {
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
    assert.deepEqual(crowdedApps(nodes, instances, serving), ["web", "api"]);
    // Once node3 is ready again, `even` is even still: one on each.
    assert.deepEqual(crowdedApps(swarm([]), instances, serving), ["web", "api"]);
    // A drained node2 leaves node1 alone to take work: nothing to spread onto.
    assert.deepEqual(
      crowdedApps(swarm([{}, { availability: "drain" }, { state: "down" }]), instances, serving),
      [],
    );
  });
});
