// PIER_ENGINE=swarm's one Engine (src/adapters/engine/swarm-engine.ts, ADR 0030): builds, images, volumes,
// add-ons and events go to the manager's dockerd, instances and networks to the swarm. Each side is the
// unit tests' fake engine, so what reached which side is what its calls say.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SwarmComposite } from "../../../src/adapters/engine/swarm-engine.js";
import { LABEL } from "../../../src/core/labels.js";
import { instancePortsConformance } from "../../conformance/engine.js";
import { FakeEngine } from "../../support/fake-engine.js";

const IMAGE = "pier/base:bookworm";

function sides() {
  const manager = new FakeEngine();
  const swarm = new FakeEngine();
  manager.addImage(IMAGE);
  swarm.addImage(IMAGE);
  return { manager, swarm, engine: new SwarmComposite(manager, swarm) };
}

const verbs = (calls: string[]) => calls.map((c) => c.split(" ")[0]);

describe("the swarm's engine: which side answers", () => {
  test("a build and its image stay on the manager; the app's network is the swarm's", async () => {
    const { manager, swarm, engine } = sides();
    await engine.ensureNetwork("pier-app-a", { [LABEL.app]: "a" }, { ipv4: null, ipv6: null });
    await engine.buildImage(
      {
        contextDir: "/tmp",
        dockerfile: "Dockerfile",
        tag: "pier-app/a:1",
        buildArgs: {},
        labels: {},
        flavor: "S",
        memoryBytes: 2 ** 28,
        noCache: false,
        buildkit: false,
        login: null,
        network: "pier-app-a",
      },
      () => undefined,
      new AbortController().signal,
    );
    await engine.prepareBuildSlot({ appId: "a", network: "pier-app-a" });
    assert.equal(await engine.imageExists("pier-app/a:1"), true);
    assert.deepEqual(await engine.releaseImages("a"), ["pier-app/a:1"]);
    assert.deepEqual(verbs(swarm.calls), ["ensureNetwork"]);
    assert.ok(verbs(manager.calls).includes("buildImage"));
    assert.ok(verbs(manager.calls).includes("prepareBuildSlot"));
    assert.ok(!verbs(manager.calls).includes("ensureNetwork"));
  });

  test("the edge joins each app's overlay as it is made (not an add-on's) and leaves before removal", async () => {
    const manager = new FakeEngine();
    const swarm = new FakeEngine();
    const edge: string[] = [];
    const engine = new SwarmComposite(manager, swarm, {
      join: async (n) => {
        edge.push(`join ${n}`);
      },
      leave: async (labels, keep) => {
        // The swarm's network is still there when the edge leaves it.
        edge.push(
          `leave ${labels[LABEL.app]} keep=${keep} exists=${await swarm.networkExists("pier-app-a")}`,
        );
      },
    });
    await engine.ensureNetwork("pier-app-a", { [LABEL.app]: "a" }, { ipv4: null, ipv6: null });
    await engine.ensureNetwork("pier-addon-b", { [LABEL.addon]: "b" }, { ipv4: null, ipv6: null });
    await engine.removeNetworks({ [LABEL.app]: "a" });
    assert.deepEqual(edge, ["join pier-app-a", "leave a keep=undefined exists=true"]);
    assert.equal(await swarm.networkExists("pier-app-a"), false);
  });

  test("instance slots are the swarm's no-ops, the app's build slot goes with the manager's", async () => {
    const { manager, swarm, engine } = sides();
    await engine.prepareSlots(
      "a",
      { httpPort: 8080, tcpPort: null, network: { name: "pier-app-a", ipv6Subnet: null } },
      2,
    );
    await engine.removeSlots("a");
    assert.equal(verbs(swarm.calls)[0], "prepareSlots");
    assert.ok(!verbs(swarm.calls).includes("removeSlots"));
    assert.equal(verbs(manager.calls)[0], "removeSlots");
    assert.ok(!verbs(manager.calls).includes("prepareSlots"));
  });

  test("events are both sides'; a swarm task's container on the manager is told by the swarm only", async () => {
    const { manager, swarm, engine } = sides();
    const seen: string[] = [];
    const stop = new AbortController();
    const listening = engine.events((e) => void seen.push(`${e.type} ${e.labels[LABEL.app]}`), stop.signal);
    await new Promise((r) => setTimeout(r, 10));
    const spec = (app: string, labels: Record<string, string> = {}) => ({
      name: `pier-${app}-1`,
      image: IMAGE,
      env: {},
      labels: { [LABEL.app]: app, ...labels },
      cmd: ["sleep", "600"],
      httpPort: null,
      tcpPort: null,
      memoryBytes: 2 ** 28,
      network: { name: "n", ipv6Subnet: null },
      mountDockerSocket: false,
      restart: true,
      slot: null,
      buckets: [],
    });
    const onSwarm = await swarm.runInstance(spec("web"));
    const task = await manager.runInstance(spec("task", { "com.docker.swarm.task.id": "t1" }));
    const addon = await manager.runInstance(spec("addon"));
    for (const [side, id] of [
      [swarm, onSwarm.id],
      [manager, task.id],
      [manager, addon.id],
    ] as const)
      side.exit(id, 1);
    stop.abort();
    await listening;
    assert.deepEqual(seen, ["start web", "start addon", "die web", "die addon"]);
  });

  test("the manager's stream ending ends the engine's (the loop then waits for it and reconciles)", async () => {
    const manager = new FakeEngine();
    const swarm = new FakeEngine();
    manager.events = async () => undefined;
    const engine = new SwarmComposite(manager, swarm);
    await engine.events(() => undefined, new AbortController().signal);
    assert.equal(swarm.calls.filter((c) => c.startsWith("events")).length, 1);
  });

  test("the apps owning something are those of both sides", async () => {
    const { manager, swarm, engine } = sides();
    await swarm.ensureNetwork("pier-app-a", { [LABEL.app]: "a" }, { ipv4: null, ipv6: null });
    await manager.ensureNetwork("pier-addon-b", { [LABEL.app]: "b" }, { ipv4: null, ipv6: null });
    assert.deepEqual([...(await engine.ownerAppIds())].sort(), ["a", "b"]);
  });
});

// Every instance verb reaches the swarm's side whole: the instance ports' cases over the composite.
instancePortsConformance("the swarm's engine over two fakes", async () => {
  const { engine } = sides();
  return { engine, image: IMAGE, prefix: "conformance", cleanUp: async () => undefined };
});
