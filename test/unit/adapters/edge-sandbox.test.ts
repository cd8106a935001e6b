// The edge's sandbox on a swarm (src/adapters/edge/edge-sandbox.ts, ADR 0030) joins every app's overlay
// after it is made again or restarted; the joins themselves run against real engines in
// test/e2e-swarm/edge-swarm.test.ts. Here: one join that fails does not stop the others.
import assert from "node:assert/strict";
import { test } from "node:test";
import { joinEach } from "../../../src/adapters/edge/edge-sandbox.js";

test("one overlay the engine cannot attach is reported; every other app's is still joined", async () => {
  const joined: string[] = [];
  const failed = await joinEach(["pier-app-a", "pier-app-b", "pier-app-c"], async (network) => {
    if (network === "pier-app-b") throw new Error("attaching to network failed: context deadline exceeded");
    joined.push(network);
  });
  assert.deepEqual(joined, ["pier-app-a", "pier-app-c"]);
  assert.deepEqual(failed, [
    { network: "pier-app-b", message: "attaching to network failed: context deadline exceeded" },
  ]);
  assert.deepEqual(await joinEach([], async () => undefined), []);
});
