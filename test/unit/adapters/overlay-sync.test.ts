// The edge's overlays watched after its sandbox is made again (src/adapters/edge/overlay-sync.ts): an
// overlay whose table lacks instances on nodes that are its gossip peers again is left and joined again; one
// whose nodes are not peers yet is left alone. A fake clock and fake tables, no engine.
import assert from "node:assert/strict";
import { test } from "node:test";
import type Docker from "dockerode";
import {
  instancesOnOverlays,
  OVERLAY_SYNC,
  type OverlayInstance,
  type OverlaySyncDeps,
  type OverlayTable,
  overlayState,
  overlayTable,
  syncOverlays,
} from "../../../src/adapters/edge/overlay-sync.js";

const table = (peers: string[], endpoints: string[]): OverlayTable => ({
  peers: new Set(peers),
  endpoints: new Set(endpoints),
});

const a2: OverlayInstance = { network: "a", address: "10.0.1.2", nodeAddress: "192.168.1.12" };
const a4: OverlayInstance = { network: "a", address: "10.0.1.4", nodeAddress: "192.168.1.13" };

test("an overlay is synced when its table has every instance elsewhere, stale when their nodes are peers, else waiting", () => {
  assert.equal(
    overlayState([a2, a4], table(["192.168.1.11"], ["10.0.1.9", "10.0.1.2", "10.0.1.4"])),
    "synced",
  );
  assert.equal(overlayState([], table([], [])), "synced", "nothing elsewhere: nothing to wait for");
  assert.equal(
    overlayState([a2, a4], table(["192.168.1.11", "192.168.1.12", "192.168.1.13"], ["10.0.1.9"])),
    "stale",
  );
  assert.equal(
    overlayState([a2, a4], table(["192.168.1.11", "192.168.1.12"], ["10.0.1.9", "10.0.1.2"])),
    "waiting",
    "node3 is not a peer yet: a rejoin now would ask nobody there",
  );
  assert.equal(
    overlayState([a2, a4], table(["192.168.1.11", "192.168.1.13"], ["10.0.1.9", "10.0.1.4"])),
    "waiting",
    "node3's instance is there, but node2's is missing and node2 is not a peer",
  );
});

test("an instance on the manager holds the overlay joined there: a rejoin would sync nothing, so none is asked", () => {
  const local: OverlayInstance = { network: "a", address: "10.0.1.3", nodeAddress: "", local: true };
  const peers = ["192.168.1.11", "192.168.1.12", "192.168.1.13"];
  assert.equal(overlayState([a2, local], table(peers, ["10.0.1.9"])), "held");
  assert.equal(
    overlayState([a2, local], table(peers, ["10.0.1.9", "10.0.1.2"])),
    "synced",
    "the manager's own instance is not looked for in the table (it may be starting again)",
  );
});

test("the table is read from the engine's verbose inspect: peers by address, every service's task endpoints", () => {
  const t = overlayTable({
    Peers: [{ IP: "192.168.1.12" }, { IP: "192.168.1.11" }, {}],
    Services: {
      "": { Tasks: [{ EndpointIP: "10.0.1.9" }] },
      "pier-web-1": { Tasks: [{ EndpointIP: "10.0.1.2" }, { EndpointIP: "10.0.1.4" }] },
      "pier-web-2": { Tasks: null },
    },
  });
  assert.deepEqual([...t.peers].sort(), ["192.168.1.11", "192.168.1.12"]);
  assert.deepEqual([...t.endpoints].sort(), ["10.0.1.2", "10.0.1.4", "10.0.1.9"]);
  const empty = overlayTable({ Peers: null, Services: null });
  assert.equal(empty.peers.size + empty.endpoints.size, 0);
});

/** A fake sandbox: the instances elsewhere, and each overlay's table at read `n` (1-based) and after rejoins. */
function fake(
  remote: OverlayInstance[],
  tableAt: (network: string, read: number, rejoins: number) => OverlayTable | null,
) {
  let clock = 0;
  let read = 0;
  const sandbox = { generation: 1 };
  const rejoins: { network: string; at: number }[] = [];
  const tables: string[] = [];
  const deps: OverlaySyncDeps = {
    instances: async () => {
      read++;
      return remote;
    },
    table: async (network) => {
      tables.push(network);
      return tableAt(network, read, rejoins.filter((r) => r.network === network).length);
    },
    rejoin: async (network) => {
      rejoins.push({ network, at: clock });
    },
    sleep: async (ms) => {
      clock += ms;
    },
    now: () => clock,
    generation: () => sandbox.generation,
  };
  return { deps, rejoins, tables, reads: () => read, sandbox, clock: () => clock };
}

const PEERS = ["192.168.1.11", "192.168.1.12", "192.168.1.13"];

test("every overlay synced: nothing is rejoined, and the watch ends after doneReads reads", async () => {
  const f = fake([a2, a4], () => table(PEERS, ["10.0.1.2", "10.0.1.4"]));
  assert.deepEqual(await syncOverlays(f.deps), []);
  assert.equal(f.reads(), OVERLAY_SYNC.doneReads);
});

test("the gossip back late (the lab's manager restart): no rejoin while its nodes are not peers, one as soon as they are", async () => {
  // Reads 1-5: only the manager is a peer; from read 6 on every node is, the table still empty until a rejoin.
  const f = fake([a2, a4], (_, read, rejoins) =>
    rejoins > 0
      ? table(PEERS, ["10.0.1.2", "10.0.1.4"])
      : table(read < 6 ? ["192.168.1.11"] : PEERS, ["10.0.1.9"]),
  );
  assert.deepEqual(await syncOverlays(f.deps), ["a"]);
  assert.equal(f.rejoins.length, 1);
  // Stale at reads 6 and 7 (two in a row): rejoined at read 7, 7 periods after the sandbox was made.
  assert.equal(f.rejoins[0]?.at, 7 * OVERLAY_SYNC.periodMs);
});

test("an instance missing for one read only (a task just started, its entry on its way) is not a reason to rejoin", async () => {
  const f = fake([a2], (_, read) => table(PEERS, read === 1 ? [] : ["10.0.1.2"]));
  assert.deepEqual(await syncOverlays(f.deps), []);
});

test("a rejoin that did not sync is tried again only after settleMs, and only the stale overlay", async () => {
  const b: OverlayInstance = { network: "b", address: "10.0.2.2", nodeAddress: "192.168.1.12" };
  const f = fake([a2, b], (network, _, rejoins) =>
    network === "b" || rejoins >= 2 ? table(PEERS, [b.address, a2.address]) : table(PEERS, []),
  );
  assert.deepEqual(await syncOverlays(f.deps), ["a", "a"]);
  const [first, second] = f.rejoins;
  assert.ok(first && second);
  assert.ok(second.at - first.at >= OVERLAY_SYNC.settleMs, `${second.at - first.at} ms apart`);
});

test("reads that list no instance elsewhere (nodes still unknown after the restart) neither end nor rejoin", async () => {
  let listed = 0;
  const f = fake([a2], () => table(PEERS, ["10.0.1.2"]));
  const deps: OverlaySyncDeps = {
    ...f.deps,
    instances: async () => (++listed <= 10 ? [] : [a2]),
  };
  assert.deepEqual(await syncOverlays(deps), []);
  assert.equal(f.clock(), (10 + OVERLAY_SYNC.doneReads) * OVERLAY_SYNC.periodMs);
});

test("the watch gives up after windowMs, and a sandbox made again starts it over", async () => {
  const f = fake([a2], () => table(["192.168.1.11"], [])); // never a peer: waits, never rejoins
  const deps: OverlaySyncDeps = {
    ...f.deps,
    sleep: async (ms) => {
      await f.deps.sleep(ms);
      if (f.clock() === 30_000) f.sandbox.generation++;
    },
  };
  assert.deepEqual(await syncOverlays(deps), []);
  assert.equal(f.clock(), 30_000 + OVERLAY_SYNC.windowMs, "the window counted again from the new sandbox");
});

test("an overlay held by an instance on the manager is never rejoined; the others still are", async () => {
  const held: OverlayInstance = { network: "h", address: "10.0.3.2", nodeAddress: "192.168.1.12" };
  const local: OverlayInstance = { network: "h", address: "10.0.3.3", nodeAddress: "", local: true };
  const f = fake([a2, held, local], (network, _, rejoins) =>
    network === "a" && rejoins > 0 ? table(PEERS, [a2.address]) : table(PEERS, []),
  );
  assert.deepEqual(await syncOverlays(f.deps), ["a"]);
  assert.ok(f.rejoins.every((r) => r.network === "a"));
  assert.ok(f.clock() < OVERLAY_SYNC.windowMs, "the held overlay does not keep the watch reading");
  assert.ok(!f.tables.includes("h"), "nor is its table read: the task list decides");
});

test("a table or listing the engine cannot give is not a failure: the watch reads again", async () => {
  let calls = 0;
  const f = fake([a2], () => table(PEERS, ["10.0.1.2"]));
  const deps: OverlaySyncDeps = {
    ...f.deps,
    table: async (n) => {
      if (++calls <= 2) throw new Error("engine restarting");
      return f.deps.table(n);
    },
  };
  assert.deepEqual(await syncOverlays(deps), []);
  assert.equal(calls, 2 + OVERLAY_SYNC.doneReads);
});

test("the instances read from the manager: others' running ones on ready nodes, any on the manager, only on the sandbox's overlays", async () => {
  const attach = (network: string, address: string) => ({
    Network: { Spec: { Name: network } },
    Addresses: [address],
  });
  let filters: unknown;
  const docker = {
    listNodes: async () => [
      { ID: "m", Status: { State: "ready", Addr: "192.168.1.11" } },
      { ID: "w1", Status: { State: "ready", Addr: "192.168.1.12" } },
      { ID: "w2", Status: { State: "down", Addr: "192.168.1.13" } },
    ],
    listTasks: async (o: { filters: unknown }) => {
      filters = o.filters;
      return [
        {
          NodeID: "w1",
          Status: { State: "running" },
          NetworksAttachments: [attach("pier-app-a", "10.0.1.2/24")],
        },
        {
          NodeID: "w1",
          Status: { State: "starting" },
          NetworksAttachments: [attach("pier-app-a", "10.0.1.3/24")],
        },
        {
          NodeID: "w2",
          Status: { State: "running" },
          NetworksAttachments: [attach("pier-app-a", "10.0.1.4/24")],
        },
        {
          NodeID: "m",
          Status: { State: "preparing" },
          NetworksAttachments: [attach("pier-app-b", "10.0.2.5/24")],
        },
        {
          NodeID: "w1",
          Status: { State: "running" },
          NetworksAttachments: [attach("pier-app-c", "10.0.3.2/24")],
        },
      ];
    },
  } as unknown as Docker;
  const got = await instancesOnOverlays(
    docker,
    { "pier.managed": "true", "pier.scope": "s" },
    {
      "pier-app-a": { IPAddress: "10.0.1.9" },
      "pier-app-b": { IPAddress: "10.0.2.9" },
      "pier-app-c": { IPAddress: "" },
    },
    "m",
  );
  assert.deepEqual(got, [
    { network: "pier-app-a", address: "10.0.1.2", nodeAddress: "192.168.1.12" },
    { network: "pier-app-b", address: "10.0.2.5", nodeAddress: "", local: true },
  ]);
  assert.deepEqual(filters, {
    label: ["pier.managed=true", "pier.scope=s", "pier.role=instance"],
    "desired-state": ["running"],
  });
});
