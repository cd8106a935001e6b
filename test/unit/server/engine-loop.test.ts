// The engine-event and recovery loop alone (src/server/engine-loop.ts), over a scripted engine: what it
// records, rejoins and reconciles, as `pier status` and the logs show it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import type { EngineEvent } from "../../../src/core/ports.js";
import { type EngineLoopDeps, onEngineEvent, startEngineLoop } from "../../../src/server/engine-loop.js";

function deps(script: {
  streams: EngineEvent[][];
  pingFails?: number;
  rejoinAll?: Map<string, number>;
  /** What each reconcile waits for (it returns at once without it). */
  reconcile?: () => Promise<void>;
}) {
  const seen = {
    exits: [] as unknown[],
    rejoined: [] as string[],
    refreshed: [] as (string | undefined)[],
    reconciles: 0,
    reconciling: 0,
    mostReconciling: 0,
    pings: 0,
    streams: 0,
    started: [] as string[],
    startedAll: 0,
  };
  let pingFails = script.pingFails ?? 0;
  const d: EngineLoopDeps = {
    engine: {
      // Each call is one stream: it delivers its events, then ends as when dockerd restarts (the last one
      // stays open until the loop stops).
      events: async (on, signal) => {
        const events = script.streams[seen.streams++];
        if (!events) return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
        for (const e of events) on(e);
      },
      ping: async () => {
        seen.pings++;
        if (pingFails-- > 0) throw new Error("connect ENOENT /var/run/docker.sock");
      },
    },
    store: { recordExit: async (e) => void seen.exits.push(e) },
    instances: {
      rejoin: async (appId, sandboxId) => {
        seen.rejoined.push(`${appId}/${sandboxId}`);
        return 1;
      },
      rejoinAll: async () => {
        const all = script.rejoinAll ?? new Map<string, number>();
        for (const appId of all.keys()) seen.rejoined.push(`${appId}/*`);
        return all;
      },
      refreshEdge: async (appId) => void seen.refreshed.push(appId),
    },
    starts: {
      started: (appId) => void seen.started.push(appId),
      startedAll: () => void seen.startedAll++,
    },
    reconcileAll: async () => {
      seen.reconciles++;
      seen.mostReconciling = Math.max(seen.mostReconciling, ++seen.reconciling);
      await script.reconcile?.();
      seen.reconciling--;
    },
    logger: pino({ level: "silent" }),
    pollMs: 1,
  };
  return { d, seen };
}

const event = (
  type: EngineEvent["type"],
  labels: Record<string, string>,
  exitCode: number | null = null,
  slot = false,
) => ({
  type,
  containerId: "c-1",
  slot,
  labels,
  exitCode,
  at: "2026-01-01T00:00:00.000Z",
});

describe("the engine's events", () => {
  const cases: [string, EngineEvent, { exits: number; rejoined: number }][] = [
    [
      "an instance's death is recorded",
      event("die", { "pier.app": "a", "pier.instance": "2" }, 137),
      { exits: 1, rejoined: 0 },
    ],
    [
      "a build container's is not",
      event("die", { "pier.app": "a", "pier.role": "build" }, 1),
      { exits: 0, rejoined: 0 },
    ],
    ["a container of no app is ignored", event("die", {}, 1), { exits: 0, rejoined: 0 }],
    [
      "an instance slot that starts again gets its instances back",
      event("start", { "pier.app": "a", "pier.role": "sandbox" }, null, true),
      { exits: 0, rejoined: 1 },
    ],
    [
      "a slot's death is not an instance's",
      event("die", { "pier.app": "a", "pier.role": "sandbox" }, 0, true),
      { exits: 0, rejoined: 0 },
    ],
  ];
  for (const [name, e, want] of cases) {
    test(name, async () => {
      const { d, seen } = deps({ streams: [] });
      await onEngineEvent(d, e);
      assert.deepEqual({ exits: seen.exits.length, rejoined: seen.rejoined.length }, want);
    });
  }

  test("a death is recorded with the instance's number and exit code", async () => {
    const { d, seen } = deps({ streams: [] });
    await onEngineEvent(d, event("die", { "pier.app": "a", "pier.instance": "2" }, 137));
    assert.deepEqual(seen.exits, [
      { appId: "a", containerId: "c-1", instance: 2, exitCode: 137, at: "2026-01-01T00:00:00.000Z" },
    ]);
  });
});

describe("a swarm's instance events", () => {
  const swarm = (over: Partial<EngineEvent>): EngineEvent => ({
    ...event("start", { "pier.app": "a", "pier.instance": "1" }),
    containerId: "svc-1",
    node: "node3",
    ...over,
  });

  test("a task that replaced another (new address) makes the edge follow; a first start does not", async () => {
    const { d, seen } = deps({ streams: [] });
    await onEngineEvent(d, swarm({ readdressed: true }));
    await onEngineEvent(d, swarm({}));
    assert.deepEqual(seen.refreshed, ["a"]);
    assert.deepEqual(seen.exits, []);
  });

  test("an instance lost with its node is recorded as an exit without a code", async () => {
    const { d, seen } = deps({ streams: [] });
    await onEngineEvent(d, swarm({ type: "die", node: "node2", reason: "node2 down" }));
    assert.deepEqual(seen.exits, [
      { appId: "a", containerId: "svc-1", instance: 1, exitCode: -1, at: "2026-01-01T00:00:00.000Z" },
    ]);
    assert.deepEqual(seen.refreshed, []);
  });
});

describe("when the engine's stream ends (dockerd restarted)", () => {
  test("Pier waits for the engine, reconciles, rejoins every app's instances to their slots, and follows again", async () => {
    const { d, seen } = deps({ streams: [[]], pingFails: 2, rejoinAll: new Map([["a", 1]]) });
    const loop = startEngineLoop(d);
    for (let i = 0; i < 200 && seen.streams < 2; i++) await new Promise((r) => setTimeout(r, 5));
    loop.stop();
    assert.equal(seen.pings, 3, "asked until it answered");
    assert.equal(seen.reconciles, 1);
    assert.deepEqual(seen.rejoined, ["a/*"]);
    assert.equal(seen.streams, 2, "follows the new stream");
  });

  test("the followers of runtime logs are told of each instance's start, and to look again once the engine is back", async () => {
    const starts = [
      event("start", { "pier.app": "a", "pier.instance": "1" }),
      event("start", { "pier.app": "b", "pier.role": "sandbox" }, null, true),
      event("start", { "pier.app": "c", "pier.role": "build" }),
      event("die", { "pier.app": "d", "pier.instance": "1" }, 0),
      event("start", {}),
    ];
    const { d, seen } = deps({ streams: [starts] });
    const loop = startEngineLoop(d);
    for (let i = 0; i < 200 && seen.streams < 2; i++) await new Promise((r) => setTimeout(r, 5));
    loop.stop();
    assert.deepEqual(seen.started, ["a"], "an instance's start only: not a slot's, a build's, a death");
    assert.equal(seen.startedAll, 1, "after the recovery");
  });

  test("a stopped loop neither reconciles nor follows again", async () => {
    const { d, seen } = deps({ streams: [] });
    const loop = startEngineLoop(d);
    loop.stop();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual([seen.reconciles, seen.streams], [0, 1]);
  });
});

describe("while Pier recovers from the engine's return", () => {
  const until = async (what: () => boolean) => {
    for (let i = 0; i < 400 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(what(), "in time");
  };
  const gate = () => {
    let open = () => {};
    const opened = new Promise<void>((r) => {
      open = r;
    });
    return { opened, open };
  };

  test("the stream is followed again at once: a task moved while the reconciler waits is routed then, a lost one recorded; the recovery's own doings are left to it", async () => {
    const g = gate();
    const moved: EngineEvent = {
      ...event("start", { "pier.app": "b", "pier.instance": "0" }),
      readdressed: true,
    };
    const slotStart = event("start", { "pier.app": "a", "pier.role": "sandbox" }, null, true);
    const restarted = event("die", { "pier.app": "a", "pier.instance": "1" }, 143);
    const lost: EngineEvent = {
      ...event("die", { "pier.app": "c", "pier.instance": "2" }),
      reason: "node2 down",
    };
    const { d, seen } = deps({
      streams: [[], [moved, slotStart, restarted, lost]],
      rejoinAll: new Map([["a", 1]]),
      reconcile: () => g.opened,
    });
    const loop = startEngineLoop(d);
    try {
      await until(() => seen.refreshed.length === 1);
      assert.equal(seen.reconciling, 1, "the reconciler still runs");
      assert.deepEqual(seen.refreshed, ["b"]);
      assert.deepEqual(seen.rejoined, [], "the slot's start is not acted on by itself");
      await until(() => seen.exits.length === 1);
      assert.deepEqual(
        seen.exits.map((x) => (x as { appId: string }).appId),
        ["c"],
        "the instance lost with its node is recorded; the one the recovery restarted is not",
      );
      g.open();
      await until(() => seen.rejoined.length >= 1);
      // (The scripted stream ends after its events: the engine "went" again, and a second recovery follows.)
      assert.ok(
        seen.rejoined.every((r) => r === "a/*"),
        `the recovery rejoins every app's instances, the slot's event none: ${seen.rejoined}`,
      );
    } finally {
      loop.stop();
      g.open();
    }
  });

  test("the engine lost again during a recovery: the next recovery begins once the first ended", async () => {
    const g = gate();
    const { d, seen } = deps({ streams: [[], []], reconcile: () => g.opened });
    const loop = startEngineLoop(d);
    try {
      await until(() => seen.streams === 3);
      assert.equal(seen.reconciles, 1, "the second waits for the first");
      g.open();
      await until(() => seen.reconciles === 2);
      assert.equal(seen.mostReconciling, 1, "never two at once");
    } finally {
      loop.stop();
      g.open();
    }
  });
});
