// The nodes' sweep (ADR 0030): the swarm job's spec, what it asks each node's dockerd, and what it reports.
// The task's script runs against real dockerd's in test/e2e-swarm/own-registry.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
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
      ["reg:5000/pier-app/app-1@sha256:aa", "reg:5000/pier-app/app-2@sha256:bb"],
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
    // One request per image, each by the reference the nodes pulled it by, separated by spaces.
    assert.deepEqual(spec.TaskTemplate.ContainerSpec.Env, [
      "PIER_SWEEP_IMAGES=reg:5000/pier-app/app-1@sha256:aa reg:5000/pier-app/app-2@sha256:bb",
    ]);
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

  test("images asked for while a job runs go together in the next job, each once", async () => {
    const jobs: string[][] = [];
    let release: () => void = () => undefined;
    let first = true;
    const engine: SweepEngine = {
      createService: async (spec) => {
        jobs.push(spec.TaskTemplate.ContainerSpec.Env[0]!.replace(/^PIER_SWEEP_IMAGES=/, "").split(" "));
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
      nodes: async () => new Map([["n1", { name: "node1", ready: true }]]),
    };
    const sweep = new NodeSweep({ docker: engine, scope: "s1", image: async () => "img", socket: "/s" });
    const one = sweep.sweep("a", ["r/a@1"]);
    await new Promise((r) => setTimeout(r, 10));
    const two = sweep.sweep("b", ["r/b@1"]);
    const three = sweep.sweep("c", ["r/c@1"]);
    // The same image again is one request; another of the app is added.
    const again = sweep.sweep("b", ["r/b@1", "r/b@2"]);
    assert.equal(two, three);
    release();
    assert.deepEqual(await Promise.all([one, two, three, again]), [[], [], [], []]);
    assert.deepEqual(jobs, [["r/a@1"], ["r/b@1", "r/b@2", "r/c@1"]]);
  });

  test("a node that is down does not hold the job: its task is reported, the job removed", {
    timeout: 10_000,
  }, async () => {
    const removed: string[] = [];
    const engine: SweepEngine = {
      createService: async () => "job-1",
      listTasks: async () => [
        { NodeID: "n1", Status: { State: "complete" } },
        { NodeID: "n3", Status: { State: "pending" } },
      ],
      removeService: async (id) => void removed.push(id),
      nodes: async () =>
        new Map([
          ["n1", { name: "node1", ready: true }],
          ["n3", { name: "node3", ready: false }],
        ]),
    };
    // Without the node's state it would wait for the job's 10 minutes.
    const sweep = new NodeSweep({
      docker: engine,
      scope: "s1",
      image: async () => "img",
      socket: "/s",
      timeoutMs: 600_000,
    });
    assert.deepEqual(await sweep.sweep("a", ["r/a@1"]), ["node3: still pending"]);
    assert.deepEqual(removed, ["pier-sweep-s1", "job-1"]);
  });
});
