// The nodes' sweep (ADR 0030): the swarm job's spec, what it asks each node's dockerd, and what it reports.
// The task's script runs against real dockerd's in test/e2e-swarm/own-registry.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { nodePruneFilters } from "../../../src/adapters/engine/swarm-release-images.js";
import {
  encodeFilters,
  NodeSweep,
  type SweepEngine,
  sweepJobSpec,
  sweepProblems,
} from "../../../src/adapters/engine/swarm-sweep.js";

describe("the nodes' sweep", () => {
  test("a global job, run once per node, the node's socket mounted where the task asks it", () => {
    const spec = sweepJobSpec(
      "pier-sweep-s1",
      "reg:5000/pier/guard@sha256:ab",
      "/n/{{.Node.Hostname}}/docker.sock",
      [{ label: ["pier.app=app-1"] }, { label: ["pier.app=app-2"] }],
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
    // One request per app: the filters, each URL-encoded (no space), separated by spaces.
    const env = spec.TaskTemplate.ContainerSpec.Env[0]!.replace(/^PIER_PRUNE_FILTERS=/, "").split(" ");
    assert.deepEqual(
      env.map((f) => JSON.parse(decodeURIComponent(f))),
      [{ label: ["pier.app=app-1"] }, { label: ["pier.app=app-2"] }],
    );
  });

  test("a node prunes the images of the releases the registry forgot, each by its deployment; a deleted app: all", () => {
    assert.deepEqual(nodePruneFilters("app-1", ["dep-2", "dep-3"], false), [
      { dangling: ["true"], label: ["pier.app=app-1", "pier.deployment=dep-2"] },
      { dangling: ["true"], label: ["pier.app=app-1", "pier.deployment=dep-3"] },
    ]);
    // Nothing forgotten: nothing to prune (a kept or new image is never named).
    assert.deepEqual(nodePruneFilters("app-1", [], false), []);
    assert.deepEqual(nodePruneFilters("app-1", [], true), [
      { dangling: ["true"], label: ["pier.app=app-1"] },
    ]);
    for (const f of nodePruneFilters("app-1", ["dep-2"], false)) assert.doesNotMatch(encodeFilters(f), / /);
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

  test("sweeps asked while a job runs go together in the next job, each ask once", async () => {
    const jobs: string[][] = [];
    let release: () => void = () => undefined;
    let first = true;
    const engine: SweepEngine = {
      createService: async (spec) => {
        const env = spec.TaskTemplate.ContainerSpec.Env[0]!.replace(/^PIER_PRUNE_FILTERS=/, "").split(" ");
        jobs.push(env.map((f) => (JSON.parse(decodeURIComponent(f)) as { label: string[] }).label[0]!));
        if (first) {
          first = false;
          await new Promise<void>((r) => {
            release = r;
          });
        }
        return `job-${jobs.length}`;
      },
      listTasks: async () => [{ NodeID: "n1", Status: { State: "complete" } }],
      removeService: async () => undefined,
      nodeNames: async () => new Map([["n1", "node1"]]),
    };
    const sweep = new NodeSweep({ docker: engine, scope: "s1", image: async () => "img", socket: "/s" });
    const f = (app: string) => [{ label: [`pier.app=${app}`] }];
    const one = sweep.sweep("a", f("a"));
    await new Promise((r) => setTimeout(r, 10));
    const two = sweep.sweep("b", f("b"));
    const three = sweep.sweep("c", f("c"));
    // The same ask again is one request; another ask of the app is added.
    const again = sweep.sweep("b", [...f("b"), { label: ["pier.app=b2"] }]);
    assert.equal(two, three);
    release();
    assert.deepEqual(await Promise.all([one, two, three, again]), [[], [], [], []]);
    assert.deepEqual(jobs, [["pier.app=a"], ["pier.app=b", "pier.app=b2", "pier.app=c"]]);
  });
});
