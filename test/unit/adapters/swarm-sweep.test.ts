// The nodes' sweep (ADR 0030): the swarm job's spec, what it asks each node's dockerd, and what it reports.
// The task's script runs against real dockerd's in test/e2e-swarm/own-registry.test.ts.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { SwarmNodeState } from "../../../src/adapters/engine/swarm-services.js";
import {
  JOB_IMAGES,
  type JobTask,
  jobAnswered,
  jobOutcomes,
  MAX_OWED,
  NodeSweep,
  owedAfter,
  type SweepEngine,
  sweepJobSpec,
  sweepProblems,
} from "../../../src/adapters/engine/swarm-sweep.js";
import { ManualClock } from "../../support/manual-clock.js";

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

  /** Nodes n1..n5 as the manager lists them: n4 is down, n5 drained. */
  const NODES = new Map<string, SwarmNodeState>([
    ["n1", { name: "node1", ready: true, active: true }],
    ["n2", { name: "node2", ready: true, active: true }],
    ["n3", { name: "node3", ready: true, active: true }],
    ["n4", { name: "node4", ready: false, active: true }],
    ["n5", { name: "node5", ready: true, active: false }],
  ]);
  const task = (node: string, State: string, Err?: string): JobTask => ({
    NodeID: node,
    Status: Err ? { State, Err } : { State },
  });

  test("each node's answer: swept, failed with the engine's reason, away (down, drained), or still waiting", () => {
    const rejected = "No such image: reg:5000/pier/guard@sha256:ab";
    const tasks = [
      task("n1", "complete"),
      // A global job puts a new task on a node whose task was rejected: the first rejection is its answer.
      task("n2", "rejected", rejected),
      task("n2", "rejected", rejected),
      task("n2", "preparing"),
      task("n3", "running"),
      task("n4", "pending"),
    ];
    const outcomes = jobOutcomes(tasks, NODES);
    assert.deepEqual(Object.fromEntries(outcomes), {
      n1: { kind: "swept" },
      n2: { kind: "failed", why: rejected },
      n3: { kind: "waiting", why: "still running" },
      n4: { kind: "away", why: "down" },
      n5: { kind: "away", why: "drained" },
    });
    assert.deepEqual(
      sweepProblems(outcomes, (id) => NODES.get(id)?.name ?? id),
      [`node2: ${rejected}`, "node3: still running", "node4: down", "node5: drained"],
    );
    // The job waits for node3 only (node2 answered; node4 and node5 cannot run a task).
    assert.equal(jobAnswered(tasks, NODES), false);
    assert.equal(jobAnswered([...tasks, task("n3", "complete")], NODES), true);
  });

  test("what a job leaves owed: each image to the nodes that did not sweep (a failed one too); nodes gone owed nothing", () => {
    const owed = new Map([
      ["r/old@1", new Set(["n2"])],
      ["r/left@1", new Set(["n4", "n9"])],
    ]);
    // n2 swept this time (the job asked for r/old@1 again); n3's task failed (reported, and owed: the next
    // job asks it again); n4 is down, n5 drained; n9 left the swarm.
    const outcomes = jobOutcomes(
      [task("n1", "complete"), task("n2", "complete"), task("n3", "failed", "exit 2")],
      NODES,
    );
    const next = owedAfter(owed, ["r/old@1", "r/new@1"], outcomes);
    assert.deepEqual(
      [...next].map(([i, n]) => [i, [...n].sort()]),
      [
        ["r/left@1", ["n4"]],
        ["r/old@1", ["n3", "n4", "n5"]],
        ["r/new@1", ["n3", "n4", "n5"]],
      ],
    );
    const all = new Map([...NODES].map(([id, n]) => [id, { ...n, ready: true, active: true }]));
    const everyone = jobOutcomes(
      ["n1", "n2", "n3", "n4", "n5"].map((n) => task(n, "complete")),
      all,
    );
    assert.equal(owedAfter(next, [...next.keys()], everyone).size, 0);
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
      nodes: async () => new Map([["n1", { name: "node1", ready: true, active: true }]]),
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
          ["n1", { name: "node1", ready: true, active: true }],
          ["n3", { name: "node3", ready: false, active: true }],
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
    assert.deepEqual(await sweep.sweep("a", ["r/a@1"]), ["node3: down"]);
    assert.deepEqual(removed, ["pier-sweep-s1", "job-1"]);
  });

  /** A swarm of node1..node3 whose state a test sets; each job's images and which nodes completed it. */
  function swarm() {
    const state = new Map<string, SwarmNodeState>(
      ["n1", "n2", "n3"].map((id) => [id, { name: `node${id.slice(1)}`, ready: true, active: true }]),
    );
    const jobs: string[][] = [];
    /** Nodes whose task fails (their engine refuses the sweep's image, say). */
    const failing = new Set<string>();
    const engine: SweepEngine = {
      createService: async (spec) => {
        jobs.push(spec.TaskTemplate.ContainerSpec.Env[0]!.replace(/^PIER_SWEEP_IMAGES=/, "").split(" "));
        return `job-${jobs.length}`;
      },
      // A global job: a task on each active node, complete where the node is ready (failed where set).
      listTasks: async () =>
        [...state]
          .filter(([, n]) => n.active)
          .map(([id, n]) => ({
            NodeID: id,
            Status: failing.has(id)
              ? { State: "rejected", Err: "No such image: registry/pier/node-tool" }
              : { State: n.ready ? "complete" : "pending" },
          })),
      removeService: async () => undefined,
      nodes: async () => new Map([...state].map(([id, n]) => [id, { ...n }])),
    };
    const clock = new ManualClock();
    const options = { docker: engine, scope: "s1", image: async () => "img", socket: "/s", clock };
    return { state, jobs, failing, clock, options };
  }
  const settle = () => new Promise((r) => setTimeout(r, 20));

  test("a node down at its sweep is owed the images: asked again when it is back, then owed nothing", async () => {
    const { state, jobs, clock, options } = swarm();
    const sweep = new NodeSweep(options);
    state.set("n3", { name: "node3", ready: false, active: true });
    assert.deepEqual(await sweep.sweep("a", ["r/a@1"]), ["node3: down"]);
    assert.deepEqual([...sweep.owedImages()], [["r/a@1", new Set(["n3"])]]);
    // Still down a minute later: no job.
    clock.advance(60_000);
    await settle();
    assert.equal(jobs.length, 1);
    // Another app's sweep meanwhile asks for the owed image too.
    await sweep.sweep("b", ["r/b@1"]);
    assert.deepEqual(jobs[1], ["r/b@1", "r/a@1"]);
    // Back: the next look runs a job for what it is owed, and nothing is owed after it.
    state.set("n3", { name: "node3", ready: true, active: true });
    clock.advance(60_000);
    await settle();
    assert.deepEqual(jobs[2]?.sort(), ["r/a@1", "r/b@1"]);
    assert.equal(sweep.owedImages().size, 0);
    assert.deepEqual(clock.pending(), [], "nothing owed: nothing looked for");
  });

  test("a node whose task failed is owed the images: no job runs for it alone; the next job asks again, and once it sweeps it is owed nothing", async () => {
    const { jobs, failing, clock, options } = swarm();
    const sweep = new NodeSweep(options);
    failing.add("n2");
    assert.deepEqual(await sweep.sweep("a", ["r/a@1"]), ["node2: No such image: registry/pier/node-tool"]);
    assert.deepEqual([...sweep.owedImages()], [["r/a@1", new Set(["n2"])]]);
    // Ready and active, but it failed: no job every minute for it.
    clock.advance(180_000);
    await settle();
    assert.equal(jobs.length, 1, "no job for a node whose task failed");
    // The user fixes the node (it trusts the registry now); the next app's clean-up asks it again.
    failing.delete("n2");
    assert.deepEqual(await sweep.sweep("b", ["r/b@1"]), []);
    assert.deepEqual(jobs[1], ["r/b@1", "r/a@1"]);
    assert.equal(sweep.owedImages().size, 0);
  });

  test("a drained node is owed the images until it is active again; no job runs for it meanwhile", async () => {
    const { state, jobs, clock, options } = swarm();
    const sweep = new NodeSweep(options);
    state.set("n2", { name: "node2", ready: true, active: false });
    assert.deepEqual(await sweep.sweep("a", ["r/a@1"]), ["node2: drained"]);
    assert.deepEqual([...sweep.owedImages()], [["r/a@1", new Set(["n2"])]]);
    clock.advance(120_000);
    await settle();
    assert.equal(jobs.length, 1, "no job while the node is drained");
    state.set("n2", { name: "node2", ready: true, active: true });
    clock.advance(60_000);
    await settle();
    assert.deepEqual(jobs[1], ["r/a@1"]);
    assert.equal(sweep.owedImages().size, 0);
  });

  test("what is owed outlives a restart of pier server; an image published again is owed no more", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pier-sweep-"));
    try {
      const owedFile = join(dir, "owed.json");
      const { state, jobs, clock, options: base } = swarm();
      const options = { ...base, owedFile };
      state.set("n3", { name: "node3", ready: false, active: true });
      await new NodeSweep(options).sweep("a", ["r/a@1", "r/a@2"]);
      assert.deepEqual(JSON.parse(readFileSync(owedFile, "utf8")), { "r/a@1": ["n3"], "r/a@2": ["n3"] });
      // pier server again: it reads what is owed, and looks for node3.
      const again = new NodeSweep(options);
      assert.deepEqual([...again.owedImages().keys()], ["r/a@1", "r/a@2"]);
      // An identical rebuild of the pruned release is published: its image must stay on the nodes.
      again.published("r/a@2");
      assert.deepEqual(JSON.parse(readFileSync(owedFile, "utf8")), { "r/a@1": ["n3"] });
      state.set("n3", { name: "node3", ready: true, active: true });
      clock.advance(60_000);
      await settle();
      assert.deepEqual(jobs.at(-1), ["r/a@1"]);
      assert.deepEqual(JSON.parse(readFileSync(owedFile, "utf8")), {});
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`at most ${MAX_OWED} images are owed: the oldest are given up, and that is logged`, async () => {
    const { state, options } = swarm();
    const warned: string[] = [];
    const logger = { warn: (_: object, msg: string) => void warned.push(msg) };
    const sweep = new NodeSweep({ ...options, logger });
    state.set("n3", { name: "node3", ready: false, active: true });
    const images = Array.from({ length: MAX_OWED + 3 }, (_, i) => `r/a@${i}`);
    await sweep.sweep("a", images);
    const owed = [...sweep.owedImages().keys()];
    assert.equal(owed.length, MAX_OWED);
    assert.ok(!owed.includes("r/a@0") && owed.includes(`r/a@${MAX_OWED + 2}`), "the oldest went");
    assert.ok(
      warned.some((m) => m.includes(`more than ${MAX_OWED} images owed`)),
      warned.join("; "),
    );
  });

  test(`more than ${JOB_IMAGES} images: several jobs, each with at most ${JOB_IMAGES} (one variable of the task holds them)`, async () => {
    const { jobs, options } = swarm();
    const images = Array.from({ length: JOB_IMAGES + 10 }, (_, i) => `r/a@${i}`);
    assert.deepEqual(await new NodeSweep(options).sweep("a", images), []);
    assert.deepEqual(
      jobs.map((j) => j.length),
      [JOB_IMAGES, 10],
    );
    assert.deepEqual(jobs.flat().sort(), [...images].sort());
  });

  test("when the manager does not say which nodes there are, what is owed stays as it was", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pier-sweep-"));
    try {
      const { state, options: base } = swarm();
      // The job waits for the tasks of nodes it cannot tell down until its time is up: a short one here.
      const options = { ...base, owedFile: join(dir, "owed.json"), timeoutMs: 300 };
      state.set("n3", { name: "node3", ready: false, active: true });
      await new NodeSweep(options).sweep("a", ["r/a@1"]);
      // pier server again, while the manager lists no node: its job runs, what is owed is kept.
      const blind = new NodeSweep({
        ...options,
        docker: { ...options.docker, nodes: async () => new Map() },
      });
      await blind.sweep("b", ["r/b@1"]);
      assert.deepEqual([...blind.owedImages()], [["r/a@1", new Set(["n3"])]]);
      assert.deepEqual(JSON.parse(readFileSync(options.owedFile, "utf8")), { "r/a@1": ["n3"] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
