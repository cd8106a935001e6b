// The edge's sandbox on a swarm (src/adapters/edge/edge-sandbox.ts, ADR 0030) joins every app's overlay
// (src/adapters/edge/sandbox-overlays.ts) and empties a replaced namespace (src/adapters/edge/sandbox-netns.ts)
// after it is made again or restarted; the joins themselves run against real engines in
// test/e2e-swarm/edge-swarm.test.ts. Here: one join that fails does not stop the others; the interfaces
// of a replaced sandbox's namespace are read from `ip -o link show`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { linkNames } from "../../../src/adapters/edge/sandbox-netns.js";
import { addressedIds, joinEach } from "../../../src/adapters/edge/sandbox-overlays.js";

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

test("the interfaces of `ip -o link show`: names without their peer's index", () => {
  const out = [
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00",
    "18: eth0@if19: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default \\    link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0",
    "40: eth1@if41: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP mode DEFAULT group default \\    link/ether 02:42:0a:e7:00:05 brd ff:ff:ff:ff:ff:ff link-netnsid 1",
    "",
  ].join("\n");
  assert.deepEqual(linkNames(out), ["lo", "eth0", "eth1"]);
  assert.deepEqual(linkNames(""), []);
});

test("a network the sandbox is attached to without an address is not joined", () => {
  const networks = {
    bridge: { NetworkID: "b1", IPAddress: "172.17.0.2" },
    "pier-app-a": { NetworkID: "o1", IPAddress: "10.201.0.4" },
    "pier-app-b": { NetworkID: "o2", IPAddress: "" },
    "pier-app-c": { NetworkID: "o3" },
  };
  assert.deepEqual([...addressedIds(networks)].sort(), ["b1", "o1"]);
  assert.deepEqual([...addressedIds({})], []);
});
