// EngineEvents from the swarm (src/adapters/engine/swarm-events.ts, ADR 0030): two polls of the task list
// compared, as the engine loop then sees them (an instance's exit recorded, the edge following a new task).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type LabelledService,
  type NodeState,
  taskEvents,
} from "../../../src/adapters/engine/swarm-events.js";
import type { SwarmTask } from "../../../src/adapters/engine/swarm-tasks.js";
import { LABEL } from "../../../src/core/labels.js";

const labels = { [LABEL.app]: "a1", [LABEL.instance]: "2" };
const service: LabelledService = { ID: "svc", Spec: { Labels: labels } };
const task = (id: string, state: string, node = "n2", desired = "running", code?: number): SwarmTask => ({
  ID: id,
  ServiceID: "svc",
  NodeID: node,
  CreatedAt: `2026-01-01T00:00:0${id.length}Z`,
  DesiredState: desired,
  Status: { State: state, Timestamp: "2026-01-01T00:01:00Z", ContainerStatus: { ExitCode: code } },
});
const up = new Map<string, NodeState>([
  ["n1", { name: "node1", ready: true }],
  ["n2", { name: "node2", ready: true }],
  ["n3", { name: "node3", ready: true }],
]);
const node2Down = new Map(up).set("n2", { name: "node2", ready: false });
const NOW = "2026-01-01T00:02:00Z";

function between(first: SwarmTask[], then: SwarmTask[], nodes = up, nodesBefore = up) {
  const a = taskEvents(null, [service], first, nodesBefore, NOW);
  assert.deepEqual(a.events, [], "the first poll is the baseline");
  return taskEvents(a.phases, [service], then, nodes, NOW).events.map((e) => ({
    type: e.type,
    id: e.containerId,
    code: e.exitCode,
    node: e.node,
    reason: e.reason,
    readdressed: e.readdressed,
  }));
}

describe("the swarm's events, from two polls of its tasks", () => {
  test("nothing changed: no event", () => {
    assert.deepEqual(between([task("t1", "running")], [task("t1", "running")]), []);
  });

  test("a node goes down: its running instance dies with no code, saying which node; then starts elsewhere at a new address", () => {
    const t1 = task("t1", "running");
    assert.deepEqual(between([t1], [task("t1", "running", "n2", "shutdown")], node2Down), [
      { type: "die", id: "svc", code: null, node: "node2", reason: "node2 down", readdressed: undefined },
    ]);
    const moved = between(
      [task("t1", "running", "n2", "shutdown"), task("t22", "pending", "n3")],
      [task("t1", "running", "n2", "shutdown"), task("t22", "running", "n3")],
      node2Down,
      node2Down,
    );
    assert.deepEqual(moved, [
      { type: "start", id: "svc", code: null, node: "node3", reason: undefined, readdressed: true },
    ]);
  });

  test("the lost task's node comes back and shuts it down: no second death", () => {
    assert.deepEqual(
      between(
        [task("t1", "running", "n2", "shutdown")],
        [task("t1", "shutdown", "n2", "shutdown")],
        up,
        node2Down,
      ),
      [],
    );
  });

  test("a task that exits is a death with its code; the first task of an instance starts with no readdress", () => {
    assert.deepEqual(between([task("t1", "running")], [task("t1", "failed", "n2", "shutdown", 3)]), [
      { type: "die", id: "svc", code: 3, node: "node2", reason: undefined, readdressed: undefined },
    ]);
    assert.deepEqual(between([task("t1", "pending")], [task("t1", "running")]), [
      { type: "start", id: "svc", code: null, node: "node2", reason: undefined, readdressed: undefined },
    ]);
  });

  test("a task that ran and ended between two polls still dies; one rejected before it ran does not", () => {
    assert.deepEqual(
      between([], [task("t1", "complete", "n2", "shutdown", 0)]).map((e) => [e.type, e.code]),
      [["die", 0]],
    );
    assert.deepEqual(between([], [task("t1", "rejected", "n2", "shutdown")]), []);
  });

  test("a running task gone from the list (scaled to 0 or removed, deleted by the swarm) dies, its code unknown", () => {
    assert.deepEqual(between([task("t1", "running")], []), [
      { type: "die", id: "svc", code: null, node: "node2", reason: undefined, readdressed: undefined },
    ]);
    assert.deepEqual(between([task("t1", "rejected", "n2", "shutdown")], []), [], "it never ran");
  });

  test("a task of a service that is not Pier's is ignored", () => {
    const other = { ...task("t9", "running"), ServiceID: "not-pier" };
    assert.deepEqual(between([], [other]), []);
  });
});
