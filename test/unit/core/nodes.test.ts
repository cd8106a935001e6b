import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { findNode } from "../../../src/core/node-lookup.js";
import {
  type ClusterNode,
  drainProblem,
  type GuardReport,
  type GuardTask,
  joinCommandLine,
  movedSentence,
  nodeGuard,
  oneManagerNote,
  registryTrustScript,
} from "../../../src/core/nodes.js";
import { NodeService } from "../../../src/server/nodes.js";
import { FakeNodes, fakeSwarm } from "../../support/fake-nodes.js";

const swarm = (changes: Partial<ClusterNode>[]): ClusterNode[] =>
  fakeSwarm().map((n, i) => ({ ...n, ...(changes[i] ?? {}) }));

describe("nodes", () => {
  test("a node is found by name, then by id; an unknown one names the nodes there are", () => {
    assert.equal(findNode(fakeSwarm(), "node2").id, "fake2");
    assert.equal(findNode(fakeSwarm(), "fake3").name, "node3");
    assert.throws(
      () => findNode(fakeSwarm(), "node9"),
      (e: Error & { code?: string; hint?: string }) =>
        e.code === "NODE_NOT_FOUND" &&
        e.message === "There is no node named 'node9' in the swarm." &&
        e.hint === "The nodes are: node1, node2, node3 (pier nodes lists them).",
    );
  });

  const cases: [string, Partial<ClusterNode>[], string, boolean][] = [
    ["another active, ready node is left", [], "node2", false],
    ["the two others drained", [{}, { availability: "drain" }, { availability: "drain" }], "node1", true],
    ["the others down", [{}, { state: "down" }, { state: "down" }], "node1", true],
    ["the others paused", [{}, { availability: "pause" }, { availability: "pause" }], "node1", true],
    ["one other down, one active", [{}, { state: "down" }], "node1", false],
    ["a drained node drained again", [{ availability: "drain" }, { availability: "drain" }], "node2", false],
  ];
  for (const [what, changes, name, refused] of cases)
    test(`drain ${name}: ${what} -> ${refused ? "refused" : "allowed"}`, () => {
      const all = swarm(changes);
      const problem = drainProblem(all, findNode(all, name));
      if (refused)
        assert.match(problem ?? "", new RegExp(`^Draining ${name} would leave no active, ready node`));
      else assert.equal(problem, null);
    });

  test("the join command names the token and the first manager", () => {
    assert.equal(
      joinCommandLine({
        role: "worker",
        token: "SWMTKN-1-x",
        managers: ["192.0.2.11:2377", "192.0.2.12:2377"],
      }),
      "docker swarm join --token SWMTKN-1-x 192.0.2.11:2377",
    );
  });

  test("a node trusts Pier's own registry by the lines join-command prints; the operator's needs none", async () => {
    const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    assert.equal(
      registryTrustScript("192.0.2.1:5000", pem),
      "mkdir -p /etc/docker/certs.d/192.0.2.1:5000\n" +
        "cat > /etc/docker/certs.d/192.0.2.1:5000/ca.crt <<'PIER_CA'\n" +
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nPIER_CA\n",
    );
    const own = await new NodeService(new FakeNodes(), {
      registry: { address: "192.0.2.1:5000", caPem: pem },
      managerNodeId: "fake1",
    }).joinCommand("worker");
    assert.equal(own.registry?.trust, registryTrustScript("192.0.2.1:5000", pem));
    const theirs = await new NodeService(new FakeNodes(), {
      registry: { address: "r:5000", caPem: null },
      managerNodeId: null,
    }).joinCommand("worker");
    assert.deepEqual(theirs.registry, { address: "r:5000", trust: null });
  });

  test("the manager Pier runs on is not drained: its edge could not join new apps' networks", async () => {
    const nodes = new FakeNodes();
    const service = new NodeService(nodes, {
      registry: { address: "r:5000", caPem: null },
      managerNodeId: "fake1",
    });
    await assert.rejects(service.drain("node1"), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.code, "CONFLICT");
      assert.match(e.message, /^node1 is the manager Pier runs on: the edge and builds run there/);
      return true;
    });
    assert.equal(nodes.nodes.find((n) => n.id === "fake1")?.availability, "active");
    assert.equal((await service.drain("node2")).availability, "drain");
  });

  test("each node counts the running instances placed on it; stopped ones and nodes without any count 0", async () => {
    const placed = async () => [
      { node: "node1", running: true },
      { node: "node2", running: true },
      { node: "node2", running: true },
      { node: "node3", running: false },
      { running: true },
    ];
    const listed = await new NodeService(new FakeNodes(), null, undefined, placed).list();
    assert.deepEqual(
      listed.map((n) => [n.name, n.instances]),
      [
        ["node1", 1],
        ["node2", 2],
        ["node3", 0],
      ],
    );
  });

  const task = (t: Partial<GuardTask>): GuardTask => ({
    nodeId: "fake2",
    state: "running",
    desired: "running",
    createdAt: "2026-01-01T00:00:02Z",
    error: null,
    current: true,
    ...t,
  });
  const on = (...tasks: Partial<GuardTask>[]): GuardReport => ({
    isolation: true,
    service: "pier-guard-s1",
    exists: true,
    tasks: tasks.map(task),
  });
  const guardCases: [string, GuardReport, Partial<ClusterNode>, string, RegExp | null][] = [
    ["isolation off", { isolation: false }, {}, "off", null],
    ["its task runs the current rules", on({}), {}, "yes", null],
    ["another node's task only", on({ nodeId: "fake3" }), {}, "no", /^no guard task runs there$/],
    [
      "the service removed by hand",
      { isolation: true, service: "pier-guard-s1", exists: false, tasks: [] },
      {},
      "no",
      /^the guard service pier-guard-s1 is missing .*next start of pier server makes it again/,
    ],
    ["its task runs older rules", on({ current: false }), {}, "no", /older rules than pier server's/],
    [
      "its task was rejected, the next one pending",
      on(
        { state: "rejected", desired: "shutdown", error: "No such image: r:5000/pier/guard@sha256:1" },
        { state: "pending", createdAt: "2026-01-01T00:00:03Z" },
      ),
      {},
      "no",
      /^its guard task rejected: No such image: r:5000\/pier\/guard@sha256:1$/,
    ],
    [
      "a failed task replaced by one that runs",
      on(
        { state: "failed", desired: "shutdown", error: "task: non-zero exit (1)" },
        { createdAt: "2026-01-01T00:00:03Z" },
      ),
      {},
      "yes",
      null,
    ],
    ["its task starting", on({ state: "preparing" }), {}, "no", /^its guard task is preparing/],
    ["a drained node", on(), { availability: "drain" }, "no", /a drained node runs none/],
    ["a node down", on(), { state: "down" }, "no", /the node is down/],
  ];
  for (const [what, report, change, guarded, problem] of guardCases)
    test(`the node guard on node2: ${what} -> ${guarded}`, () => {
      const node = { ...swarm([])[1]!, ...change };
      const g = nodeGuard(node, report);
      assert.equal(g.guarded, guarded);
      if (problem) assert.match(g.guardProblem ?? "", problem);
      else assert.equal(g.guardProblem, null);
    });

  test("pier nodes lists each node's guard; no guard given: isolation off", async () => {
    const guards = async () => on({ nodeId: "fake1" }, { nodeId: "fake2", state: "failed", error: "boom" });
    const listed = await new NodeService(new FakeNodes(), null, undefined, undefined, guards).list();
    assert.deepEqual(
      listed.map((n) => [n.name, n.guarded, n.guardProblem]),
      [
        ["node1", "yes", null],
        ["node2", "no", "its guard task failed: boom"],
        ["node3", "no", "no guard task runs there"],
      ],
    );
    const off = await new NodeService(new FakeNodes()).list();
    assert.deepEqual(new Set(off.map((n) => n.guarded)), new Set(["off"]));
  });

  test("the guard's tasks cannot be read: every node is listed, its guard unknown and why", async () => {
    const guards = async (): Promise<GuardReport> => {
      throw new Error("connect ECONNREFUSED /var/run/docker.sock");
    };
    const listed = await new NodeService(new FakeNodes(), null, undefined, undefined, guards).list();
    assert.deepEqual(
      listed.map((n) => [n.name, n.state, n.guarded]),
      [
        ["node1", "ready", "unknown"],
        ["node2", "ready", "unknown"],
        ["node3", "ready", "unknown"],
      ],
    );
    assert.match(listed[0]!.guardProblem ?? "", /^the guard's tasks could not be read: connect ECONNREFUSED/);
  });

  test("the sentence an instance moved by the swarm gets, in pier status and in the console", () => {
    const moved = { from: "node3", reason: "node3 down", at: "2026-11-28T10:00:00.000Z" };
    assert.equal(
      movedSentence({ number: 2, node: "node1", moved }),
      "Instance 2 moved from node3 to node1 at 2026-11-28T10:00:00.000Z: node3 down",
    );
    // The console writes the time its own way; a move whose time is unknown, or a node not known yet.
    assert.equal(
      movedSentence({ number: 0, moved: { ...moved, at: null } }, () => "never"),
      "Instance 0 moved from node3 to another node: node3 down",
    );
    assert.equal(
      movedSentence({ number: 1, node: "node1", moved }, () => "10:00"),
      "Instance 1 moved from node3 to node1 at 10:00: node3 down",
    );
    assert.equal(movedSentence({ number: 1, node: "node1" }), null);
  });
  test("one manager among several nodes is said (a manager's restart then reaches the others late); three are not", () => {
    const node = (name: string, role: "manager" | "worker") => ({ name, role });
    assert.match(
      oneManagerNote([node("node1", "manager"), node("node2", "worker"), node("node3", "worker")]) ?? "",
      /^node1 is the swarm's only manager: if its dockerd restarts, apps on the other nodes may take up to ~30 s .*pier nodes join-command --manager/,
    );
    assert.equal(oneManagerNote([node("node1", "manager")]), null, "one machine: nothing else to reach");
    assert.equal(
      oneManagerNote([node("node1", "manager"), node("node2", "manager"), node("node3", "manager")]),
      null,
    );
    assert.equal(oneManagerNote([node("node1", "worker"), node("node2", "worker")]), null);
  });
});
