// The node guard as nftables text and as a global service (ADR 0019 on the swarm).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  guardLoop,
  guardServiceSpec,
  renderGuardNft,
  SwarmGuard,
} from "../../../src/adapters/swarm-guard.js";
import { planNodeGuard } from "../../../src/core/swarm-guard.js";
import { FakeGuardEngine } from "../../support/fake-guard-engine.js";

const plan = planNodeGuard({
  scope: "s1",
  pool: "10.210.0.0/16",
  allow: ["192.168.251.99/32"],
  hostPorts: [80, 443],
  edges: ["192.168.251.10"],
});

const lines = (text: string) => text.split("\n").map((l) => l.trim());
const before = (text: string, a: string, b: string) => {
  const ls = lines(text);
  assert.ok(ls.includes(a), `missing: ${a}`);
  assert.ok(ls.includes(b), `missing: ${b}`);
  assert.ok(ls.indexOf(a) < ls.indexOf(b), `${a} must come before ${b}`);
};

describe("renderGuardNft", () => {
  const nft = renderGuardNft(plan);
  test("replaced whole in one transaction: created if missing, deleted, made again", () => {
    assert.deepEqual(lines(nft).slice(0, 3), [
      "table inet pier-guard-s1 {}",
      "delete table inet pier-guard-s1",
      "table inet pier-guard-s1 {",
    ]);
  });
  test("only traffic entering from the gwbridge is judged, forwarded or for the node itself", () => {
    assert.ok(lines(nft).includes('iifname { "docker_gwbridge" } jump egress'));
    assert.ok(lines(nft).includes('iifname { "docker_gwbridge" } jump host'));
  });
  test("tenants are dropped first; the edge's ports and the allowed ranges before the LAN's drop", () => {
    before(nft, "ip daddr @tenants4 drop", "ip daddr @edge4 tcp dport { 80, 443 } return");
    before(nft, "ip daddr @edge4 tcp dport { 80, 443 } return", "ip daddr @internal4 drop");
    before(nft, "ip daddr @allow4 return", "ip daddr @internal4 drop");
    assert.match(nft, /set allow4 \{ [^}]*elements = \{ 192\.168\.251\.99\/32 \}/);
  });
  test("the node takes replies, ICMP, the edge's ports and DNS, and drops the rest", () => {
    before(nft, "ct state established,related return", "drop");
    assert.ok(lines(nft).includes("tcp dport { 80, 443 } return"));
  });
  test("no bridge: the table is deleted and nothing made", () => {
    assert.equal(
      renderGuardNft({ ...plan, bridges: [] }),
      "table inet pier-guard-s1 {}\ndelete table inet pier-guard-s1\n",
    );
  });
});

describe("guardServiceSpec", () => {
  const spec = guardServiceSpec(plan, "reg:5000/pier/guard@sha256:abc", { "pier.scope": "s1" });
  test("one task on every node, on the host's network, with NET_ADMIN only", () => {
    assert.deepEqual(spec.Mode, { Global: {} });
    assert.deepEqual(spec.TaskTemplate.Networks, [{ Target: "host" }]);
    assert.deepEqual(spec.TaskTemplate.ContainerSpec.CapabilityAdd, ["CAP_NET_ADMIN"]);
    assert.equal(spec.Name, "pier-guard-s1");
    assert.equal(spec.Labels["pier.scope"], "s1");
  });
  test("the rules travel in the environment; the loop re-applies a removed table and deletes it at stop", () => {
    assert.deepEqual(spec.TaskTemplate.ContainerSpec.Env, [`PIER_GUARD_RULES=${renderGuardNft(plan)}`]);
    const loop = guardLoop(plan.table);
    assert.match(loop, /nft list table inet pier-guard-s1 >\/dev\/null 2>&1 \|\| apply/);
    assert.match(loop, /trap 'nft delete table inet pier-guard-s1/);
  });
});

describe("SwarmGuard", () => {
  const spec = guardServiceSpec(plan, "reg:5000/pier/guard@sha256:abc", { "pier.scope": "s1" });
  test("made once; the same rules and image again change nothing; other rules update it in place", async () => {
    const engine = new FakeGuardEngine();
    const guard = new SwarmGuard(engine);
    assert.equal(await guard.ensure(spec), "created");
    assert.equal(await guard.ensure(spec), "unchanged");
    const wider = guardServiceSpec(
      { ...plan, allow4: ["192.168.251.0/24"] },
      spec.TaskTemplate.ContainerSpec.Image,
      {},
    );
    assert.equal(await guard.ensure(wider), "updated");
    assert.deepEqual(engine.calls, ["create pier-guard-s1", "update pier-guard-s1"]);
    assert.equal(engine.services.size, 1);
  });
  test("removed with isolation off; another scope's guard whose name it prefixes is left alone", async () => {
    const engine = new FakeGuardEngine();
    const guard = new SwarmGuard(engine);
    const longer = guardServiceSpec({ ...plan, table: "pier-guard-s1x" }, "img", {});
    await guard.ensure(longer);
    assert.equal(await guard.remove("pier-guard-s1"), false);
    await guard.ensure(spec);
    assert.equal(await guard.remove("pier-guard-s1"), true);
    assert.deepEqual(
      [...engine.services.values()].map((s) => s.spec.Name),
      ["pier-guard-s1x"],
    );
  });
  test("the push is skipped when the service runs the local image as pushed and the registry still has it", async () => {
    const engine = new FakeGuardEngine();
    const guard = new SwarmGuard(engine);
    const image = spec.TaskTemplate.ContainerSpec.Image;
    assert.equal(await guard.pushed("pier-guard-s1", "pier/guard:1"), null, "no service yet: push");
    await guard.ensure(spec);
    assert.equal(await guard.pushed("pier-guard-s1", "pier/guard:1"), null, "never pushed from here");
    engine.digests.set("pier/guard:1", ["reg:5000/pier/guard@sha256:old"]);
    assert.equal(await guard.pushed("pier-guard-s1", "pier/guard:1"), null, "a rebuilt image: push");
    engine.digests.set("pier/guard:1", ["reg:5000/pier/guard@sha256:old", image]);
    assert.equal(await guard.pushed("pier-guard-s1", "pier/guard:1"), null, "the registry lost it: push");
    engine.registry.add(image);
    assert.equal(await guard.pushed("pier-guard-s1", "pier/guard:1"), image);
  });
  test("the report: the service's tasks, each current when it runs the service's rules and image", async () => {
    const engine = new FakeGuardEngine();
    const guard = new SwarmGuard(engine);
    assert.deepEqual(await guard.report("pier-guard-s1"), {
      isolation: true,
      service: "pier-guard-s1",
      exists: false,
      tasks: [],
    });
    await guard.ensure(spec);
    const [id] = [...engine.services.keys()];
    const container = spec.TaskTemplate.ContainerSpec;
    engine.tasks.set(id ?? "", [
      {
        NodeID: "n1",
        DesiredState: "running",
        Status: { State: "running" },
        Spec: { ContainerSpec: container },
      },
      {
        NodeID: "n2",
        DesiredState: "running",
        Status: { State: "running" },
        Spec: { ContainerSpec: { ...container, Env: ["PIER_GUARD_RULES=older"] } },
      },
      { NodeID: "n3", DesiredState: "shutdown", Status: { State: "rejected", Err: "No such image" } },
    ]);
    const r = await guard.report("pier-guard-s1");
    assert.ok(r.isolation && r.exists);
    assert.deepEqual(
      r.tasks.map((t) => [t.nodeId, t.state, t.current, t.error]),
      [
        ["n1", "running", true, null],
        ["n2", "running", false, null],
        ["n3", "rejected", false, "No such image"],
      ],
    );
  });
});
