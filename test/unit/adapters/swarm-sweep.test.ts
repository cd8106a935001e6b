// The nodes' sweep (ADR 0030): the swarm job's spec, what it asks each node's dockerd, and what it reports.
// The task's script runs against real dockerd's in test/e2e-swarm/own-registry.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pruneFilters, sweepJobSpec, sweepProblems } from "../../../src/adapters/engine/swarm-sweep.js";

describe("the nodes' sweep", () => {
  test("a global job, run once per node, the node's socket mounted where the task asks it", () => {
    const spec = sweepJobSpec(
      "pier-sweep-s1-app-1",
      "reg:5000/pier/guard@sha256:ab",
      "/n/{{.Node.Hostname}}/docker.sock",
      "app-1",
      "s1",
    );
    assert.deepEqual(spec.Mode, { GlobalJob: {} });
    assert.deepEqual(spec.TaskTemplate.RestartPolicy, { Condition: "none" });
    assert.deepEqual(spec.TaskTemplate.ContainerSpec.Mounts, [
      { Type: "bind", Source: "/n/{{.Node.Hostname}}/docker.sock", Target: "/var/run/docker.sock" },
    ]);
    // Not an instance: the swarm driver takes a service with pier.managed for one.
    assert.equal(spec.Labels["pier.managed"], undefined);
    assert.equal(spec.Labels["pier.role"], "sweep");
    assert.equal(spec.Labels["pier.scope"], "s1");
  });

  test("it prunes only the app's images that are dangling (pulled by digest, no container uses them)", () => {
    assert.deepEqual(JSON.parse(decodeURIComponent(pruneFilters("app-1"))), {
      dangling: ["true"],
      label: ["pier.app=app-1"],
    });
  });

  test("every node's task that did not complete is reported with the engine's reason", () => {
    const names = new Map([
      ["n1", "node1"],
      ["n2", "node2"],
      ["n3", "node3"],
    ]);
    const problems = sweepProblems(
      [
        { NodeID: "n1", Status: { State: "complete" } },
        {
          NodeID: "n2",
          Status: { State: "rejected", Err: "invalid mount config: bind source path does not exist" },
        },
        { NodeID: "n3", Status: { State: "pending" } },
      ],
      (id) => names.get(id) ?? id,
    );
    assert.deepEqual(problems, [
      "node2: invalid mount config: bind source path does not exist",
      "node3: still pending",
    ]);
  });
});
