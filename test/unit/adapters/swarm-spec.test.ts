// The Swarm driver's pure parts (ADR 0030): an instance planned as a service, a service and its tasks read
// back as an instance, overlapping subnets found before the swarm accepts and never allocates them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { overlapping } from "../../../src/adapters/engine/swarm-networks.js";
import { RUN_OF, runLikeSpec } from "../../../src/adapters/engine/swarm-run.js";
import { backOff, pollDelay } from "../../../src/adapters/engine/swarm-services.js";
import { serviceSpec, unpinned } from "../../../src/adapters/engine/swarm-spec.js";
import {
  currentTask,
  instanceOf,
  movedFrom,
  NO_NODE_GRACE_MS,
  pullRejected,
  type SwarmService,
  type SwarmTask,
  startFailure,
  startOutcome,
  swarmRestarts,
  unplaceable,
} from "../../../src/adapters/engine/swarm-tasks.js";
import type { PierError } from "../../../src/core/errors.js";
import { LABEL } from "../../../src/core/labels.js";
import type { InstanceSpec } from "../../../src/core/ports.js";

const MiB = 2 ** 20;
const instance = (over: Partial<InstanceSpec> = {}): InstanceSpec => ({
  name: "pier-web-1",
  image: "pier-app/a1:d1",
  env: { PORT: "8080" },
  labels: { [LABEL.app]: "a1" },
  cmd: null,
  httpPort: 8080,
  tcpPort: null,
  memoryBytes: 256 * MiB,
  network: { name: "pier-a1", ipv6Subnet: null },
  mountDockerSocket: false,
  restart: true,
  slot: { appId: "a1" },
  buckets: [],
  ...over,
});
const inputs = {
  own: { [LABEL.managed]: "true", [LABEL.scope]: "s" },
  image: "reg:5000/pier-app/a1@sha256:abc",
  imageLabels: {},
  cpus: 2,
  stopGraceMs: 10_000,
};

test("an instance becomes one replica of its image by digest, dnsrr on its overlay, with an init, its memory and its labels", () => {
  const s = serviceSpec(instance(), inputs);
  const c = s.TaskTemplate.ContainerSpec;
  assert.equal(s.Name, "pier-web-1");
  assert.deepEqual(s.Mode, { Replicated: { Replicas: 1 } });
  assert.equal(s.EndpointSpec.Mode, "dnsrr");
  assert.deepEqual(s.TaskTemplate.Networks, [{ Target: "pier-a1" }]);
  assert.equal(c.Image, "reg:5000/pier-app/a1@sha256:abc");
  assert.equal(c.Init, true);
  assert.deepEqual(c.HealthCheck, { Test: ["NONE"] }, "the image's HEALTHCHECK is off: Pier's gate decides");
  assert.ok(c.Env.includes("PORT=8080") && c.Env.includes("TINI_KILL_PROCESS_GROUP=1"));
  assert.equal(c.StopGracePeriod, 10_000 * 1e6);
  assert.equal(s.TaskTemplate.Resources.Limits.MemoryBytes, 256 * MiB);
  assert.equal(s.TaskTemplate.Resources.Reservations.MemoryBytes, 256 * MiB);
  for (const labels of [s.Labels, c.Labels]) {
    assert.equal(labels[LABEL.app], "a1");
    assert.equal(labels[LABEL.role], "instance");
    assert.equal(labels[LABEL.httpPort], "8080");
    assert.equal(labels[LABEL.scope], "s");
  }
  assert.equal("Args" in c, false, "no cmd: the image's own");
});

test("restart, cmd, writable paths and the engine's socket are planned as the Docker adapter runs them", () => {
  const cases: [
    string,
    Partial<InstanceSpec>,
    Record<string, string>,
    (s: ReturnType<typeof serviceSpec>) => void,
  ][] = [
    [
      "a web instance restarts whatever its exit",
      {},
      {},
      (s) => assert.equal(s.TaskTemplate.RestartPolicy.Condition, "any"),
    ],
    [
      "a task never restarts",
      { restart: false },
      {},
      (s) => assert.equal(s.TaskTemplate.RestartPolicy.Condition, "none"),
    ],
    [
      "cmd replaces the image's CMD (Args), not its ENTRYPOINT",
      { cmd: ["/bin/sh", "-c", "npm start"] },
      {},
      (s) => assert.deepEqual(s.TaskTemplate.ContainerSpec.Args, ["/bin/sh", "-c", "npm start"]),
    ],
    [
      "writable paths: a read-only root and a tmpfs bounded by a quarter of the memory",
      {},
      { [LABEL.writable]: "/tmp" },
      (s) => {
        assert.equal(s.TaskTemplate.ContainerSpec.ReadOnly, true);
        assert.deepEqual(s.TaskTemplate.ContainerSpec.Mounts, [
          { Type: "tmpfs", Source: "", Target: "/tmp", TmpfsOptions: { SizeBytes: 64 * MiB, Mode: 0o1777 } },
        ]);
      },
    ],
    [
      "the engine's socket, where an app may have it",
      { mountDockerSocket: true },
      {},
      (s) =>
        assert.deepEqual(s.TaskTemplate.ContainerSpec.Mounts, [
          { Type: "bind", Source: "/var/run/docker.sock", Target: "/var/run/docker.sock" },
        ]),
    ],
  ];
  for (const [what, over, imageLabels, check] of cases) {
    const s = serviceSpec(instance(over), { ...inputs, imageLabels });
    try {
      check(s);
    } catch (e) {
      throw new Error(`${what}: ${(e as Error).message}`);
    }
  }
});

test("an image whose vendor/ is in a release volume is refused: a volume lives on one machine", () => {
  assert.throws(
    () =>
      serviceSpec(instance(), { ...inputs, imageLabels: { [LABEL.volume]: "pier-rel-a1-d1:/app/vendor" } }),
    (e: PierError) => e.code === "ENGINE_ERROR" && /release volume/.test(e.message),
  );
});

test("an instance that mounts an fs bucket mounts its add-on's volume and is pinned to the bucket's node", () => {
  const s = serviceSpec(
    instance({ buckets: [{ addonId: "ad1", target: "/app/uploads", node: "node2" }] }),
    inputs,
  );
  assert.deepEqual(
    s.TaskTemplate.ContainerSpec.Mounts.filter((m) => m.Type === "volume"),
    [{ Type: "volume", Source: "pier-addon-ad1-data", Target: "/app/uploads" }],
  );
  assert.deepEqual(s.TaskTemplate.Placement.Constraints, ["node.hostname==node2"]);
  assert.equal(serviceSpec(instance(), inputs).TaskTemplate.Placement.Constraints, undefined);
});

test("an instance is made pinned to the node Pier chose; lifting the pin changes nothing else", () => {
  const pinned = serviceSpec(instance(), { ...inputs, pin: "n2" });
  assert.deepEqual(pinned.TaskTemplate.Placement.Constraints, ["node.id==n2"]);
  const lifted = unpinned(pinned, "n2");
  assert.equal(lifted.TaskTemplate.Placement.Constraints, undefined);
  assert.deepEqual(lifted, serviceSpec(instance(), inputs));
  // Only that pin goes: another node's is not Pier's to lift, and a bucket's node stays.
  assert.equal(unpinned(pinned, "n3"), pinned);
  const both = {
    ...pinned,
    TaskTemplate: {
      ...pinned.TaskTemplate,
      Placement: { ...pinned.TaskTemplate.Placement, Constraints: ["node.hostname==node2", "node.id==n2"] },
    },
  };
  assert.deepEqual(unpinned(both, "n2").TaskTemplate.Placement.Constraints, ["node.hostname==node2"]);
  // A bucket pins it to its node: no other pin is added.
  const bucket = instance({ buckets: [{ addonId: "ad1", target: "/app/uploads", node: "node2" }] });
  assert.deepEqual(serviceSpec(bucket, { ...inputs, pin: "n3" }).TaskTemplate.Placement.Constraints, [
    "node.hostname==node2",
  ]);
});

test("an instance whose buckets are on two nodes, or on none, is refused with what to do", () => {
  for (const buckets of [
    [
      { addonId: "ad1", target: "/app/a", node: "node2" },
      { addonId: "ad2", target: "/app/b", node: "node3" },
    ],
    [{ addonId: "ad1", target: "/app/a" }],
  ])
    assert.throws(
      () => serviceSpec(instance({ buckets }), inputs),
      (e: PierError) =>
        e.code === "ENGINE_ERROR" && /one swarm node/.test(e.message) && /--node/.test(e.hint ?? ""),
    );
});

const task = (id: string, over: Partial<SwarmTask> & { state?: string; at?: string } = {}): SwarmTask => ({
  ID: id,
  ServiceID: "svc",
  NodeID: "n2",
  CreatedAt: over.at ?? "2026-01-01T00:00:01Z",
  DesiredState: "running",
  Status: { State: over.state ?? "running", ContainerStatus: { ContainerID: `c-${id}`, ExitCode: 0 } },
  NetworksAttachments: [
    { Network: { Spec: { Name: "ingress" } }, Addresses: ["10.0.0.5/24"] },
    { Network: { Spec: { Name: "pier-a1" } }, Addresses: ["10.210.0.7/24"] },
  ],
  ...over,
});
const service: SwarmService = { ID: "svc", Spec: serviceSpec(instance(), inputs) };

test("a service and its tasks read as an instance: the running task's node and overlay address", () => {
  const i = instanceOf(
    service,
    [task("old", { DesiredState: "shutdown", state: "failed", at: "2026-01-01T00:00:00Z" }), task("now")],
    (n) => (n === "n2" ? "node2" : undefined),
  );
  assert.equal(i.running, true);
  assert.equal(i.node, "node2");
  assert.deepEqual(i.http, { host: "10.210.0.7", port: 8080 });
  assert.equal(i.networkAddress, "10.210.0.7");
  assert.equal(i.exitCode, null);
  assert.equal(i.restarts, 1, "the failed task was replaced");
});

test("a stopped instance: its last task's exit code, no address; no task at all: not running", () => {
  const stopped = instanceOf(
    service,
    [
      task("t", {
        DesiredState: "shutdown",
        Status: { State: "shutdown", ContainerStatus: { ExitCode: 143 } },
      }),
    ],
    () => "node1",
  );
  assert.deepEqual(
    [stopped.running, stopped.exitCode, stopped.http, stopped.restarts],
    [false, 143, null, 0],
  );
  const none = instanceOf(service, [], () => undefined);
  assert.deepEqual([none.running, none.state, none.exitCode, none.node], [false, "new", null, undefined]);
});

test("the current task is the newest wanted running, else the newest", () => {
  const a = task("a", { at: "2026-01-01T00:00:01Z" });
  const b = task("b", { at: "2026-01-01T00:00:02Z", DesiredState: "shutdown" });
  const c = task("c", { at: "2026-01-01T00:00:00Z" });
  assert.equal(currentTask([a, b, c])?.ID, "a");
  assert.equal(currentTask([b])?.ID, "b");
  assert.equal(currentTask([]), null);
});

test("a task the swarm brings back itself is waited for; a service it never restarts needs Pier's start", () => {
  const spec = serviceSpec(instance({ restart: true }), inputs);
  const svc = (replicas: number, condition: "any" | "none"): SwarmService => ({
    ID: "s1",
    Spec: {
      ...spec,
      Mode: { Replicated: { Replicas: replicas } },
      TaskTemplate: { ...spec.TaskTemplate, RestartPolicy: { Condition: condition } },
    },
  });
  const ended = task("ended", { at: "2026-01-01T00:00:01Z", state: "failed" });
  const leaving = task("leaving", { at: "2026-01-01T00:00:02Z", DesiredState: "shutdown" });
  const coming = task("coming", { at: "2026-01-01T00:00:03Z", state: "ready" });
  // The ended task and the one on its way out are past; the one the swarm is starting is the start.
  assert.deepEqual([...(swarmRestarts(svc(1, "any"), [ended, leaving, coming]) ?? [])].sort(), [
    "ended",
    "leaving",
  ]);
  assert.deepEqual([...(swarmRestarts(svc(1, "any"), []) ?? ["none"])], []);
  assert.equal(swarmRestarts(svc(0, "any"), [ended]), null);
  assert.equal(swarmRestarts(svc(1, "none"), [ended]), null);
});

test("a start ran, failed to happen, or is on its way", () => {
  const cases: [Partial<SwarmTask["Status"]>, ReturnType<typeof startOutcome>][] = [
    [{ State: "running" }, { ran: true }],
    [{ State: "complete" }, { ran: true }],
    [{ State: "failed", Err: "task: non-zero exit (3)" }, { ran: true }],
    [
      { State: "rejected", Err: "No such image: x" },
      { ran: false, why: "No such image: x" },
    ],
    [
      { State: "failed", Err: "starting container failed: oci runtime" },
      { ran: false, why: "starting container failed: oci runtime" },
    ],
    [{ State: "pending", Message: "no suitable node" }, null],
    [{ State: "preparing" }, null],
  ];
  for (const [status, expected] of cases)
    assert.deepEqual(startOutcome({ ID: "t", Status: status }), expected, JSON.stringify(status));
});

test("a task no node can take fails its start after a grace, naming the scheduler's reason", () => {
  const noNode = "no suitable node (3 nodes not available for new tasks)";
  const pending = (over: Partial<SwarmTask["Status"]>): SwarmTask => ({
    ID: "t",
    Status: { State: "pending", ...over },
  });
  assert.equal(unplaceable(pending({ Err: noNode }), NO_NODE_GRACE_MS - 1), null, "it may still find one");
  assert.equal(unplaceable(pending({ Err: noNode }), NO_NODE_GRACE_MS), `no node can run it (${noNode})`);
  assert.equal(unplaceable(pending({ Message: noNode }), NO_NODE_GRACE_MS), `no node can run it (${noNode})`);
  assert.equal(unplaceable(pending({ Message: "pending task scheduling" }), 10 * NO_NODE_GRACE_MS), null);
  assert.equal(unplaceable({ ID: "t", Status: { State: "assigned", Err: noNode } }, NO_NODE_GRACE_MS), null);
});

test("subnets that overlap a network of the swarm are named before the swarm accepts them", () => {
  const taken = [
    { name: "ingress", labels: {}, subnets: ["10.0.0.0/24"] },
    { name: "pier-a1", labels: {}, subnets: ["10.210.0.0/24", "fd00::/64"] },
  ];
  assert.deepEqual(overlapping(["10.210.0.0/25"], taken), ["10.210.0.0/25 overlaps pier-a1 (10.210.0.0/24)"]);
  assert.deepEqual(overlapping(["10.0.0.0/16"], taken), ["10.0.0.0/16 overlaps ingress (10.0.0.0/24)"]);
  assert.deepEqual(overlapping(["10.210.1.0/24"], taken), []);
  assert.deepEqual(overlapping([], taken), []);
});

test("an instance the swarm placed elsewhere after losing its node says from where and why", () => {
  const names = (n: string) => ({ n1: "node1", n2: "node2", n3: "node3" })[n];
  const lost = task("old", { NodeID: "n2", DesiredState: "shutdown", at: "2026-01-01T00:00:00Z" });
  const now = task("now", { NodeID: "n3", at: "2026-01-01T00:00:09Z" });
  const i = instanceOf(service, [lost, now], names, (n) => n === "n2");
  assert.deepEqual(
    [i.node, i.moved],
    ["node3", { from: "node2", reason: "node2 down", at: "2026-01-01T00:00:09Z" }],
  );
  assert.equal(i.restarts, 0, "a loss is not a restart");
  const cases: [string, SwarmTask[], (n: string) => boolean, string | undefined][] = [
    [
      "its old node is back, the old task shut down: nothing to say",
      [{ ...lost, Status: { State: "shutdown" } }, now],
      () => false,
      undefined,
    ],
    [
      "the swarm orphaned the old task and its node is back: nothing to say",
      [{ ...lost, Status: { State: "orphaned" } }, now],
      () => false,
      undefined,
    ],
    [
      "the swarm orphaned the old task and its node left the swarm",
      [{ ...lost, NodeID: "n9", Status: { State: "orphaned" } }, now],
      () => false,
      "n9 was lost",
    ],
    [
      "the old task failed by itself: a restart, not a move",
      [{ ...lost, Status: { State: "failed" } }, now],
      (n) => n === "n2",
      undefined,
    ],
    ["same node: not moved", [{ ...lost, NodeID: "n3" }, now], (n) => n === "n2", undefined],
    ["one task only", [now], () => true, undefined],
  ];
  for (const [name, tasks, down, want] of cases)
    assert.equal(movedFrom(tasks, currentTask(tasks), names, down)?.reason, want, name);
});

test("a command run like an instance: its image, variables and overlay, its own command, no restart, not the app's", () => {
  const own = { [LABEL.managed]: "true", [LABEL.scope]: "s1" };
  const like = runLikeSpec(service.Spec, ["/bin/sh", "-c", "echo hi"], own, "svc", "abc123");
  const c = like.TaskTemplate.ContainerSpec;
  assert.equal(like.Name, `${service.Spec.Name}-run-abc123`);
  assert.deepEqual(
    [c.Image, c.Env, c.Mounts],
    [
      service.Spec.TaskTemplate.ContainerSpec.Image,
      service.Spec.TaskTemplate.ContainerSpec.Env,
      service.Spec.TaskTemplate.ContainerSpec.Mounts,
    ],
  );
  assert.deepEqual(like.TaskTemplate.Networks, service.Spec.TaskTemplate.Networks);
  assert.deepEqual([c.Command, c.Args], [["/bin/sh", "-c", "echo hi"], undefined]);
  assert.deepEqual(like.TaskTemplate.RestartPolicy, { Condition: "none" });
  assert.equal(like.Labels[LABEL.app], undefined, "not listed, routed or counted as the app's instance");
  assert.equal(c.Labels[LABEL.app], undefined);
  assert.deepEqual([like.Labels[LABEL.scope], like.Labels[RUN_OF]], ["s1", "svc"]);
});

test("a task that never started names its node; one that could not pull its image says what to do", () => {
  const other = startFailure(
    "pier-web-1",
    "node2",
    "no suitable node (insufficient resources on 3 nodes)",
    "r:5000",
  );
  assert.equal(
    other.message,
    "The instance pier-web-1 did not start on node2: no suitable node (insufficient resources on 3 nodes)",
  );
  assert.equal(other.hint, undefined);
  const pull = startFailure(
    "pier-web-1",
    "node2",
    "No such image: r:5000/pier-app/a@sha256:ab (x509: certificate signed by unknown authority)",
    "r:5000",
  );
  assert.match(
    pull.message,
    /^The instance pier-web-1 did not start on node2: the node could not pull its release image from the registry r:5000 \(No such image/,
  );
  assert.match(
    pull.hint ?? "",
    /^Check that node2 reaches r:5000 and trusts its CA: run there the lines `pier nodes join-command` prints/,
  );
});

test("a try the swarm rejected for want of its image fails the start, though its next try is already preparing", () => {
  const task = (ID: string, CreatedAt: string, State: string, Err = "") => ({
    ID,
    CreatedAt,
    DesiredState: State === "rejected" ? "shutdown" : "running",
    Status: { State, Err },
  });
  const pull = "No such image: r:5000/pier-app/a@sha256:ab";
  const now = task("t3", "2026-11-29T10:00:03Z", "preparing");
  const cases: [string, ReturnType<typeof task>[], string | null][] = [
    [
      "the newest rejected try for want of its image",
      [
        task("t1", "2026-11-29T10:00:01Z", "rejected", pull),
        task("t2", "2026-11-29T10:00:02Z", "rejected", pull),
        now,
      ],
      "t2",
    ],
    [
      "x509 in the reason",
      [task("t1", "2026-11-29T10:00:01Z", "rejected", "x509: certificate signed by unknown authority"), now],
      "t1",
    ],
    [
      "another reason is left to the swarm's next try",
      [task("t1", "2026-11-29T10:00:01Z", "rejected", "invalid mount config"), now],
      null,
    ],
    [
      "a try shut down (replaced by Pier), not rejected",
      [task("t1", "2026-11-29T10:00:01Z", "shutdown", pull), now],
      null,
    ],
    ["no other try", [now], null],
  ];
  for (const [name, tasks, want] of cases) {
    assert.equal(currentTask(tasks)?.ID, "t3", name);
    assert.equal(pullRejected(tasks, now)?.ID ?? null, want, name);
  }
});

test("a wait on the swarm probes soon, every 50 ms for ~2 s, then backs off to one probe every 200 ms", () => {
  assert.deepEqual(
    [0, 1, 2, 10, 39, 40, 100].map((a) => pollDelay(a)),
    [25, 50, 50, 50, 50, 200, 200],
  );
  // A removal's wait, which lists every task of the swarm, backs off at once.
  assert.deepEqual(
    [0, 1, 2, 3, 4, 10].map((a) => backOff(a)),
    [25, 50, 100, 200, 200, 200],
  );
});
