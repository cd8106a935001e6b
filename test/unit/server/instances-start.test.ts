// A release's instances start all together (on one dockerd as on a swarm); a failed start removes the
// instances that started and fails the start.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { InstanceInfo } from "../../../src/core/ports.js";
import type { ReleaseToRun } from "../../../src/server/instances.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";
import { fakeInstances } from "./fakes.js";

const IMAGE = "pier-app/a:1";

function setUp() {
  const engine = new FakeEngine();
  engine.addImage(IMAGE);
  const instances = fakeInstances({ engine, store: new MemoryStore() });
  return { engine, instances };
}

const release: ReleaseToRun = {
  appId: "a",
  appName: "web",
  deploymentId: "dep-0123456789",
  image: IMAGE,
  env: {},
  httpPort: null,
  tcpPort: null,
  cmd: null,
  flavor: "nano",
  instances: 3,
  ipv6Subnet: null,
  mountDockerSocket: false,
  restart: true,
  buckets: [],
};

/** Holds each start until `release()`; `entered` counts the starts begun. */
function holdStarts(engine: FakeEngine) {
  let entered = 0;
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  engine.before.runInstance = async () => {
    entered++;
    await gate;
  };
  return { entered: () => entered, release: open };
}

const numbers = (list: InstanceInfo[]) => list.map((i) => i.name.slice(-1));
const settle = () => new Promise((r) => setTimeout(r, 10));

test("the three start together and come back in instance order", async () => {
  const { engine, instances } = setUp();
  const held = holdStarts(engine);
  const lines: string[] = [];
  const started = instances.start(release, (l) => lines.push(l));
  await settle();
  assert.equal(held.entered(), 3);
  held.release();
  const list = await started;
  assert.deepEqual(numbers(list), ["0", "1", "2"]);
  assert.equal(lines.length, 3);
  assert.equal(engine.instances.filter((i) => i.running).length, 3);
});

test("one failed start removes the two that started and fails with its reason", async () => {
  const { engine, instances } = setUp();
  engine.before.runInstance = async (spec) => {
    if (spec.name.endsWith("-1")) throw new Error("engine: no suitable node");
  };
  await assert.rejects(
    instances.start(release, () => undefined),
    /no suitable node/,
  );
  assert.deepEqual(
    engine.instances.map((i) => i.name),
    [],
  );
});
