// Which slot (sandbox) a web instance starts in, which are made ahead and which go: the SlotKeeper
// (src/adapters/engine/slot-keeper.ts) behind the InstanceSlots port, over the one fake engine's sandboxes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SandboxInfo } from "../../../src/adapters/engine/slot-keeper.js";
import type { InstanceInfo, InstanceSpec, SlotShape } from "../../../src/core/ports.js";
import { FakeEngine } from "../../support/fake-engine.js";

/** The sandboxes the fake engine was asked to remove, in order. */
const removed = (engine: FakeEngine) =>
  engine.calls.filter((c) => c.startsWith("removeSandbox ")).map((c) => c.slice("removeSandbox ".length));

function sandbox(id: string, labels: Record<string, string>, running = true): SandboxInfo {
  return {
    id,
    labels,
    running,
    http: { host: "127.0.0.1", port: 40000 },
    tcp: null,
    networkAddress: "172.20.0.2",
  };
}

const WEB: SlotShape = { httpPort: 8080, tcpPort: null, network: { name: "pier-app-1", ipv6Subnet: null } };
const fits = (id: string, extra: Record<string, string> = {}, running = true) =>
  sandbox(
    id,
    {
      "pier.app": "app-1",
      "pier.sandbox-for": "instances",
      "pier.network": "pier-app-1",
      "pier.http-port": "8080",
      "pier.tcp-port": "",
      ...extra,
    },
    running,
  );
const instanceIn = (sandboxId: string, running: boolean): InstanceInfo => ({
  id: `i-${sandboxId}`,
  name: "x",
  labels: { "pier.app": "app-1", "pier.sandbox": sandboxId },
  state: running ? "running" : "exited",
  running,
  startedAt: null,
  restarts: 0,
  exitCode: null,
  http: null,
  tcp: null,
  networkAddress: null,
});

function engineWith(sandboxes: SandboxInfo[], instances: InstanceInfo[] = [], opts = {}): FakeEngine {
  const engine = new FakeEngine(opts);
  engine.addImage("img");
  engine.sandboxes = sandboxes;
  engine.instances = instances;
  return engine;
}

let n = 0;
const web = (shape: SlotShape = WEB): InstanceSpec => ({
  name: `web-${++n}`,
  image: "img",
  env: {},
  labels: { "pier.app": "app-1" },
  cmd: null,
  httpPort: shape.httpPort,
  tcpPort: shape.tcpPort,
  memoryBytes: 2 ** 26,
  network: shape.network,
  mountDockerSocket: false,
  restart: true,
  slot: { appId: "app-1" },
  buckets: [],
});
const slotOf = (i: InstanceInfo) => i.labels["pier.sandbox"];

describe("instance slots", () => {
  it("a free slot that fits is used; the one a running instance is in is not", async () => {
    const engine = engineWith([fits("a"), fits("b")], [instanceIn("a", true)]);
    assert.equal(slotOf(await engine.runInstance(web())), "b");
    assert.equal(engine.sandboxSpecs.length, 0);
  });

  it("a stopped (retired) instance does not hold its slot", async () => {
    const engine = engineWith([fits("a")], [instanceIn("a", false)]);
    assert.equal(slotOf(await engine.runInstance(web())), "a");
  });

  it("missing ones are made on the app's network, with the app's ports", async () => {
    const engine = engineWith([fits("a")], [instanceIn("a", true)]);
    await engine.prepareSlots("app-1", { ...WEB, httpPort: 3000, tcpPort: 5432 }, 2);
    assert.equal(engine.sandboxSpecs.length, 2);
    assert.deepEqual(engine.sandboxSpecs[0]?.network, { name: "pier-app-1", ipv6Subnet: null });
    assert.equal(engine.sandboxSpecs[0]?.httpPort, 3000);
    assert.equal(engine.sandboxSpecs[0]?.tcpPort, 5432);
    assert.equal(engine.sandboxSpecs[0]?.labels["pier.sandbox-for"], "instances");
    assert.deepEqual(removed(engine), [], "the busy slot of other ports stays until its instance goes");
  });

  it("free slots of other ports or a stopped one are not used; the unfit free ones are removed", async () => {
    const engine = engineWith([fits("old-port", { "pier.http-port": "9000" }), fits("stopped", {}, false)]);
    assert.equal(slotOf(await engine.runInstance(web())), "sandbox-1");
    assert.deepEqual(removed(engine), ["old-port"]);
  });

  it("build slots are never taken for instances", async () => {
    const engine = engineWith([fits("build", { "pier.sandbox-for": "build" })]);
    assert.equal(slotOf(await engine.runInstance(web())), "sandbox-1");
    assert.deepEqual(removed(engine), [], "the build slot is left to builds");
  });

  it("after a scale-down, preparing for the next deploy removes the surplus free slots", async () => {
    const engine = engineWith([fits("a"), fits("b"), fits("c"), fits("d")], [instanceIn("a", true)]);
    await engine.prepareSlots("app-1", WEB, 1);
    assert.deepEqual(removed(engine).sort(), ["c", "d"]);
    assert.deepEqual(
      engine.sandboxes.map((s) => s.id),
      ["a", "b"],
    );
  });

  it("preparations for one app run one after another: the second finds the slot the first made", async () => {
    const engine = engineWith([]);
    await Promise.all([engine.prepareSlots("app-1", WEB, 1), engine.prepareSlots("app-1", WEB, 1)]);
    assert.equal(engine.sandboxSpecs.length, 1, "the second finds the slot the first made");
  });

  it("a slot handed to a start under way is neither handed out again nor removed as surplus (ADR 0021)", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let first = true;
    const engine = engineWith([fits("a"), fits("b")], [], {
      serve: async (kind: "instance" | "sandbox") => {
        // The first instance's start is held after its slot was chosen.
        if (kind === "instance" && first) {
          first = false;
          await held;
        }
        return { http: null, networkAddress: null };
      },
    });
    const starting = engine.runInstance(web());
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await engine.prepareSlots("app-1", WEB, 0);
    assert.deepEqual(removed(engine), ["b"], "the free one goes, the claimed one stays");
    const second = await engine.runInstance(web());
    assert.notEqual(slotOf(second), "a", "the claimed slot is not handed out again");
    assert.equal(engine.sandboxSpecs.length, 1, "a slot is made for it");
    release();
    assert.equal(slotOf(await starting), "a");
  });

  it("a restarted slot: the serving deployment's instances in it that stopped or started before it start again, no others", async () => {
    const engine = engineWith([fits("a"), fits("b")]);
    const old = "2026-01-01T00:00:00.000Z";
    const seed = (id: string, slot: string, deployment: string, running: boolean) =>
      engine.addInstance({
        id,
        labels: { "pier.app": "app-1", "pier.deployment": deployment, "pier.sandbox": slot },
        running,
        startedAt: old,
      });
    seed("stale", "a", "d2", true);
    seed("stopped", "b", "d2", false);
    seed("retired", "a", "d1", false);
    engine.setSandboxRunning("a", false);
    engine.setSandboxRunning("a", true);
    const one = await engine.rejoinSlots(new Map([["app-1", "d2"]]), { graceMs: 0, slot: "a" });
    assert.deepEqual([...one], [["app-1", 1]]);
    assert.deepEqual(
      engine.calls.filter((c) => /^(re)?startInstance/.test(c)),
      ["restartInstance stale"],
      "the retired deployment's instance stays stopped",
    );
    const all = await engine.rejoinSlots(new Map([["app-1", "d2"]]), { graceMs: 0 });
    assert.deepEqual([...all], [["app-1", 1]], "b's stopped instance; a's was rejoined already");
    assert.equal(engine.instances.find((i) => i.id === "stopped")?.running, true);
    assert.deepEqual(
      await engine.rejoinSlots(new Map(), { graceMs: 0 }),
      new Map(),
      "an app that serves nothing",
    );
  });
});
