// Where Pier places a new instance on the swarm (swarm-placement.ts): the node with the fewest instances of
// the same deployment, then of the app, then with the smallest share of its memory held by every app's
// instances, over the nodes that take new tasks and have room for it; starts in flight count.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  LOAD_TTL_MS,
  type PlacedInstance,
  SwarmSpread,
  spreadNode,
} from "../../../src/adapters/engine/swarm-placement.js";
import type { SwarmNodeState } from "../../../src/adapters/engine/swarm-services.js";
import { pinnedNode } from "../../../src/adapters/engine/swarm-spec.js";
import type { SwarmTask } from "../../../src/adapters/engine/swarm-tasks.js";
import { LABEL } from "../../../src/core/labels.js";

const up = (name: string): SwarmNodeState => ({ name, ready: true, active: true });
const three = new Map([
  ["n1", up("node1")],
  ["n2", up("node2")],
  ["n3", up("node3")],
]);
const MIB = 2 ** 20;
const on = (nodeId: string, deploymentId = "d2"): PlacedInstance => ({ nodeId, deploymentId });

test("the node with the fewest instances of the deployment, then of the app, among the nodes open to tasks", () => {
  const cases: {
    why: string;
    nodes?: Map<string, SwarmNodeState>;
    live: PlacedInstance[];
    want: string | null;
  }[] = [
    { why: "one instance on n1: another node", live: [on("n1")], want: "n2|n3" },
    { why: "n1 and n2 hold one each: n3", live: [on("n1"), on("n2")], want: "n3" },
    { why: "one on each: a second anywhere", live: [on("n1"), on("n2"), on("n3")], want: "n1|n2|n3" },
    {
      why: "the old deployment on n3 and n2 twice: the new one's third goes to n3, which has none of it",
      live: [on("n1"), on("n2"), on("n3", "d1"), on("n3", "d1")],
      want: "n3",
    },
    {
      why: "deployment ties: the node with fewer of the app's instances",
      live: [on("n1"), on("n2"), on("n3"), on("n1", "d1"), on("n3", "d1")],
      want: "n2",
    },
    {
      why: "a node not ready or drained takes nothing, however empty",
      nodes: new Map([
        ["n1", up("node1")],
        ["n2", { name: "node2", ready: false, active: true }],
        ["n3", { name: "node3", ready: true, active: false }],
        ["n4", up("node4")],
      ]),
      live: [on("n1")],
      want: "n4",
    },
    {
      why: "one node open: no choice to make, the swarm places it",
      nodes: new Map([
        ["n1", up("node1")],
        ["n2", { name: "node2", ready: false, active: true }],
      ]),
      live: [],
      want: null,
    },
    {
      why: "a task not assigned yet counts nowhere",
      live: [{ nodeId: undefined, deploymentId: "d2" }, on("n1")],
      want: "n2|n3",
    },
  ];
  for (const c of cases) {
    const got = spreadNode(c.nodes ?? three, c.live, { appId: "a1", deploymentId: "d2", memoryBytes: MIB });
    if (c.want === null) assert.equal(got, null, c.why);
    else assert.ok(c.want.split("|").includes(got ?? ""), `${c.why}: got ${got}`);
  }
});

test("where the app weighs nodes alike, the node where every app's instances hold the least", () => {
  const key = { appId: "a1", deploymentId: "d2", memoryBytes: MIB };
  const load = (n1: number, n2: number, n3: number) =>
    new Map([
      ["n1", n1],
      ["n2", n2],
      ["n3", n3],
    ]);
  assert.equal(spreadNode(three, [], key, load(4, 1, 2)), "n2", "a new app's first instance");
  // The app's own spread comes first: n1 holds one of its instances, so n3 (busier than n2) is not taken.
  assert.equal(spreadNode(three, [on("n1")], key, load(0, 9, 3)), "n3");
  assert.equal(spreadNode(three, [on("n1")], key, load(0, 3, 9)), "n2");
  // A node missing from the count has none.
  assert.equal(
    spreadNode(
      three,
      [],
      key,
      new Map([
        ["n1", 1],
        ["n2", 1],
      ]),
    ),
    "n3",
  );
});

test("by memory: the node with the smallest share held once the instance is placed, among those it fits in", () => {
  const GIB = 2 ** 30;
  const sized = (n1: number, n2: number, n3: number) =>
    new Map([
      ["n1", { ...up("node1"), memoryBytes: n1 * GIB }],
      ["n2", { ...up("node2"), memoryBytes: n2 * GIB }],
      ["n3", { ...up("node3"), memoryBytes: n3 * GIB }],
    ]);
  const held = (n1: number, n2: number, n3: number) =>
    new Map([
      ["n1", n1 * GIB],
      ["n2", n2 * GIB],
      ["n3", n3 * GIB],
    ]);
  const key = (gib: number) => ({ appId: "a1", deploymentId: "d2", memoryBytes: gib * GIB });
  // A 64 GiB node with 8 held is freer (1/8) than a 16 GiB one with 3 held (1/4), though it holds more.
  assert.equal(spreadNode(sized(16, 64, 16), [], key(1), held(3, 8, 4)), "n2");
  // The emptiest node has no room for an 8 GiB instance (the swarm would refuse it): the next one.
  assert.equal(spreadNode(sized(16, 16, 8), [], key(8), held(4, 6, 1)), "n1");
  // Room on one node only: no choice for Pier; the swarm places it there (or says why it cannot).
  assert.equal(spreadNode(sized(16, 16, 16), [], key(8), held(10, 12, 4)), null);
  // The app's own spread still comes first: n2 holds one of its instances, however free it is.
  assert.equal(spreadNode(sized(16, 64, 16), [on("n2")], key(1), held(8, 0, 9)), "n1");
});

test("ties break the same way on every call, differently for different apps", () => {
  const first = (appId: string) => spreadNode(three, [], { appId, deploymentId: "d1", memoryBytes: MIB });
  assert.equal(first("a1"), first("a1"));
  const firsts = new Set(Array.from({ length: 30 }, (_, i) => first(`app-${i}`)));
  assert.equal(firsts.size, 3, "30 apps' first instances go to every node");
});

/** A swarm's reads as the spread sees them: these tasks (a deployment label each) on these nodes. */
function swarm(tasks: SwarmTask[]) {
  return {
    nodes: async () => three,
    liveTasks: async (appId: string) =>
      tasks.filter((t) => t.Spec?.ContainerSpec?.Labels?.[LABEL.app] === appId),
    allLiveTasks: async () => tasks,
  };
}
const task = (id: string, serviceId: string, nodeId: string | undefined, appId = "a1"): SwarmTask => ({
  ID: id,
  ServiceID: serviceId,
  ...(nodeId ? { NodeID: nodeId } : {}),
  Spec: {
    ContainerSpec: { Labels: { [LABEL.app]: appId, [LABEL.deployment]: "d1" } },
    Resources: { Reservations: { MemoryBytes: MIB } },
  },
});

test("starts made together go to different nodes: each counts those in flight", async () => {
  const spread = new SwarmSpread(
    swarm([task("t0", "s0", "n1", "other-app"), task("t00", "s00", "n1", "other-app")]),
  );
  const key = { appId: "a1", deploymentId: "d1", memoryBytes: MIB };
  const spots = await Promise.all([spread.reserve(key), spread.reserve(key), spread.reserve(key)]);
  assert.deepEqual(spots.map((s) => s?.nodeId).sort(), ["n1", "n2", "n3"]);
  // Once they are done, the swarm's own list is what counts: a fourth start sees none of them here.
  for (const s of spots) s?.done();
  assert.ok(await spread.reserve(key));
});

test("a start in flight counts once, whether the swarm lists its task yet, assigned or not", async () => {
  const tasks: SwarmTask[] = [];
  const spread = new SwarmSpread(swarm(tasks));
  const key = { appId: "a1", deploymentId: "d1", memoryBytes: MIB };
  const a = await spread.reserve(key);
  assert.ok(a);
  a.made("svc-a");
  // Listed before the swarm assigned it: counted on its pin, not twice, not nowhere.
  tasks.push(task("ta", "svc-a", undefined));
  const b = await spread.reserve(key);
  assert.ok(b);
  assert.notEqual(b.nodeId, a.nodeId);
  b.made("svc-b");
  tasks.push(task("tb", "svc-b", b.nodeId));
  a.done();
  tasks[0] = task("ta", "svc-a", a.nodeId);
  const c = await spread.reserve(key);
  assert.ok(c);
  assert.deepEqual(new Set([a.nodeId, b.nodeId, c.nodeId]).size, 3);
  // Another app's starts count for that app only.
  const other = await spread.reserve({ appId: "a2", deploymentId: "d9", memoryBytes: MIB });
  assert.ok(other);
});

test("Pier's pin is read back from a service's constraints; a bucket's node is not Pier's pin", () => {
  assert.equal(pinnedNode(["node.id==n2"]), "n2");
  assert.equal(pinnedNode(["node.hostname==node2"]), null);
  assert.equal(pinnedNode(undefined), null);
  assert.equal(pinnedNode(["node.role==manager", "node.id==abc123"]), "abc123");
});

test("a start under way is known by its service until it is done", async () => {
  const spread = new SwarmSpread(swarm([]));
  const spot = await spread.reserve({ appId: "a1", deploymentId: "d1", memoryBytes: MIB });
  assert.ok(spot);
  assert.equal(spread.starting("svc-1"), false, "not made yet");
  spot.made("svc-1");
  assert.equal(spread.starting("svc-1"), true);
  spot.done();
  assert.equal(spread.starting("svc-1"), false);
});

test("one-instance apps fill the emptiest node first; every app's count is listed once per LOAD_TTL_MS", async () => {
  // Three other apps' instances on n1 and on n2 each, none on n3.
  const tasks = [
    ...["o1", "o2", "o3"].map((a, i) => task(`t1${i}`, `s1${i}`, "n1", a)),
    ...["o1", "o2", "o3"].map((a, i) => task(`t2${i}`, `s2${i}`, "n2", a)),
  ];
  const reads = swarm(tasks);
  let lists = 0;
  let clock = 0;
  const spread = new SwarmSpread(
    {
      ...reads,
      allLiveTasks: () => {
        lists++;
        return reads.allLiveTasks();
      },
    },
    () => clock,
  );
  const place = async (appId: string) => {
    const r = await spread.reserve({ appId, deploymentId: `d-${appId}`, memoryBytes: MIB });
    r?.done(); // its task would be listed by the swarm from here on
    return r?.nodeId;
  };
  // Each new app's instance goes to n3 until it holds as many as the others (its own choices counted).
  assert.deepEqual([await place("x1"), await place("x2"), await place("x3")], ["n3", "n3", "n3"]);
  assert.equal(lists, 1);
  const fourth = await place("x4");
  assert.ok(["n1", "n2", "n3"].includes(fourth ?? ""));
  assert.equal(lists, 1);
  // Past LOAD_TTL_MS the swarm's list is read again (here: still the 6 tasks, so n3 is the emptiest again).
  clock += LOAD_TTL_MS + 1;
  assert.equal(await place("x5"), "n3");
  assert.equal(lists, 2);
});

test("an instance Pier stopped frees its memory in the load listed before the stop, not in one listed after", async () => {
  // Two other apps' instances on n1, one on n2, none on n3; listed once (clock 0).
  const reads = swarm([
    task("t1", "s1", "n1", "o1"),
    task("t2", "s2", "n1", "o2"),
    task("t3", "s3", "n2", "o3"),
  ]);
  let clock = 0;
  const spread = new SwarmSpread(reads, () => clock);
  const place = async (appId: string) => {
    const r = await spread.reserve({ appId, deploymentId: `d-${appId}`, memoryBytes: MIB });
    r?.done();
    return r?.nodeId;
  };
  assert.equal(await place("x1"), "n3"); // n1 2, n2 1, n3 1 MiB
  // Both of n1's instances stopped by Pier after that list (a rebalance moved them): n1 is the emptiest now.
  clock = 5;
  spread.released("n1", MIB, 1);
  spread.released("n1", MIB, 1);
  assert.equal(await place("x2"), "n1");
  // A stop begun before the load was listed may be in that list already: nothing is taken off.
  clock = LOAD_TTL_MS + 10;
  assert.equal(await place("x3"), "n3", "listed again: the swarm's tasks (n3 empty in this fake)");
  spread.released("n2", MIB, LOAD_TTL_MS);
  assert.equal(await place("x4"), "n3", "n2 keeps its listed instance");
});

test("an instance that reserves much weighs as much as many small ones: each choice adds its memory", async () => {
  // Two small instances of other apps on n1 and on n2, none on n3.
  const spread = new SwarmSpread(
    swarm([task("t1", "s1", "n1", "o1"), task("t2", "s2", "n2", "o2"), task("t3", "s3", "n2", "o3")]),
  );
  const place = async (appId: string, memoryBytes: number) => {
    const r = await spread.reserve({ appId, deploymentId: `d-${appId}`, memoryBytes });
    r?.done();
    return r?.nodeId;
  };
  assert.equal(await place("big", 4 * MIB), "n3", "the emptiest node");
  // n3 now holds 4 MiB, n1 1, n2 2: the next small ones fill n1, then n1 and n2 alike.
  assert.equal(await place("s1", MIB), "n1");
  assert.ok(["n1", "n2"].includes((await place("s2", MIB)) ?? ""));
});

test("a failed list of every app's instances fails that start only: the next one lists again", async () => {
  const reads = swarm([]);
  let fail = true;
  const spread = new SwarmSpread({
    ...reads,
    allLiveTasks: () => (fail ? Promise.reject(new Error("engine down")) : reads.allLiveTasks()),
  });
  await assert.rejects(spread.reserve({ appId: "a1", deploymentId: "d1", memoryBytes: MIB }), /engine down/);
  fail = false;
  assert.ok(await spread.reserve({ appId: "a1", deploymentId: "d1", memoryBytes: MIB }));
});
