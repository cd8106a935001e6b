// Which sandboxes a deploy's instances start in (src/server/instances.ts), against the one fake engine.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Edge, InstanceInfo, SandboxInfo } from "../../../src/core/ports.js";
import { Instances } from "../../../src/server/instances.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";

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

const WEB = { httpPort: 8080, tcpPort: null, ipv6Subnet: null };
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

function setUp(engine: FakeEngine): Instances {
  return new Instances({
    engine,
    edge: {} as Edge,
    store: new MemoryStore(),
    networks: {
      ensure: (name) => engine.ensureNetwork(name, {}, { ipv4: null, ipv6: null }),
      remove: async () => undefined,
    },
    domain: "localhost",
    stopGraceMs: 1000,
  });
}

describe("sandboxes for a deploy", () => {
  it("a free sandbox that fits is used; the one a running instance is in is not", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("a"), fits("b")];
    engine.instances = [instanceIn("a", true)];
    const got = await setUp(engine).sandboxes("app-1", WEB, 1);
    assert.deepEqual(
      got.map((s) => s.id),
      ["b"],
    );
    assert.equal(engine.sandboxSpecs.length, 0);
  });

  it("a stopped (retired) instance does not hold its sandbox", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("a")];
    engine.instances = [instanceIn("a", false)];
    const got = await setUp(engine).sandboxes("app-1", WEB, 1);
    assert.deepEqual(
      got.map((s) => s.id),
      ["a"],
    );
  });

  it("missing ones are made on the app's network, with the app's ports", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("a")];
    engine.instances = [instanceIn("a", true)];
    const got = await setUp(engine).sandboxes(
      "app-1",
      { httpPort: 3000, tcpPort: 5432, ipv6Subnet: null },
      2,
    );
    assert.equal(got.length, 2);
    assert.equal(engine.sandboxSpecs.length, 2);
    assert.deepEqual(engine.sandboxSpecs[0]?.network, { name: "pier-app-1", ipv6Subnet: null });
    assert.equal(engine.sandboxSpecs[0]?.httpPort, 3000);
    assert.equal(engine.sandboxSpecs[0]?.tcpPort, 5432);
    assert.equal(engine.sandboxSpecs[0]?.labels["pier.sandbox-for"], "instances");
    assert.deepEqual(removed(engine), [], "the busy sandbox of other ports stays until its instance goes");
  });

  it("free sandboxes of other ports or a stopped sandbox are not used; the unfit free ones are removed", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("old-port", { "pier.http-port": "9000" }), fits("stopped", {}, false)];
    const got = await setUp(engine).sandboxes("app-1", WEB, 1);
    assert.equal(got[0]?.id, "sandbox-1");
    assert.deepEqual(removed(engine), ["old-port"]);
  });

  it("build sandboxes are never taken for instances", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("build", { "pier.sandbox-for": "build" })];
    const got = await setUp(engine).sandboxes("app-1", WEB, 1);
    assert.equal(got[0]?.id, "sandbox-1");
    assert.deepEqual(removed(engine), [], "the build sandbox is left to builds");
  });

  it("after a scale-down, preparing for the next deploy removes the surplus free sandboxes", async () => {
    const engine = new FakeEngine();
    engine.sandboxes = [fits("a"), fits("b"), fits("c"), fits("d")];
    engine.instances = [instanceIn("a", true)];
    await setUp(engine).prepare("app-1", WEB, 1);
    assert.deepEqual(removed(engine).sort(), ["c", "d"]);
    assert.deepEqual(
      engine.sandboxes.map((s) => s.id),
      ["a", "b"],
    );
  });

  it("preparations for one app run one after another: the second finds the sandbox the first made", async () => {
    const engine = new FakeEngine();
    const instances = setUp(engine);
    const [x, y] = await Promise.all([
      instances.sandboxes("app-1", WEB, 1),
      instances.sandboxes("app-1", WEB, 1),
    ]);
    assert.equal(engine.sandboxSpecs.length, 1, "the second finds the sandbox the first made");
    assert.equal(x[0]?.id, y[0]?.id, "no instance runs in it yet, so it is free for both");
  });
});
