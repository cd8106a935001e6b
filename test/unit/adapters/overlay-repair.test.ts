// The edge's overlays watched after its sandbox is made again (src/adapters/edge/overlay-repair.ts): an
// overlay none of whose instances on other nodes can be reached is left and joined again, at most every
// settleMs, for windowMs; a fake clock and fake dials, no engine.
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { test } from "node:test";
import {
  type OverlayRepairDeps,
  REPAIR,
  type RemoteTarget,
  reachOf,
  repairOverlays,
  unreachedNetworks,
} from "../../../src/adapters/edge/overlay-repair.js";

const err = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });

test("a refusal is an answer; a timeout or no route is out of reach; anything else cannot tell", () => {
  assert.equal(reachOf(null), "reached");
  assert.equal(reachOf(err("ECONNREFUSED")), "reached", "the app does not listen, but the node answered");
  for (const code of ["ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"])
    assert.equal(reachOf(err(code)), "unreached");
  assert.equal(reachOf(err("EPIPE")), "unknown");
  assert.deepEqual(
    unreachedNetworks(
      new Map([
        ["all-out", ["unreached", "unreached"]],
        ["one-answers", ["unreached", "reached"]],
        ["cannot-tell", ["unreached", "unknown"]],
        ["none-probed", []],
      ]),
    ),
    ["all-out"],
  );
});

/** A fake sandbox: targets per network, and whether each network is in reach at round `n`. */
function fake(targets: RemoteTarget[], inReach: (network: string, round: number) => boolean) {
  let clock = 0;
  const sandbox = { generation: 1 };
  let round = 0;
  const dials: string[] = [];
  const rejoins: { network: string; at: number }[] = [];
  const deps: OverlayRepairDeps = {
    remoteTargets: async () => {
      round++;
      return targets;
    },
    dial: async (host) => {
      dials.push(host);
      const t = targets.find((x) => x.host === host);
      if (t && inReach(t.network, round)) return { destroy: () => undefined } as unknown as Socket;
      throw err("ETIMEDOUT");
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
  return { deps, dials, rejoins, rounds: () => round, sandbox };
}

const on = (network: string, n: number): RemoteTarget[] =>
  Array.from({ length: n }, (_, i) => ({ network, host: `${network}-${i}`, port: 8080 }));

test("every overlay in reach: nothing is rejoined, and the watch ends after doneRounds rounds", async () => {
  const f = fake([...on("a", 1), ...on("b", 2)], () => true);
  assert.deepEqual(await repairOverlays(f.deps), []);
  assert.equal(f.rounds(), REPAIR.doneRounds);
  assert.equal(f.dials.length, 3 * REPAIR.doneRounds);
});

test("rounds that list no instance elsewhere (nodes still unknown after the manager's restart) do not end it", async () => {
  let listed = 0;
  const f = fake(on("a", 1), (_, round) => round >= 5);
  const deps: OverlayRepairDeps = {
    ...f.deps,
    remoteTargets: async () => (++listed <= 3 ? [] : f.deps.remoteTargets()),
  };
  assert.deepEqual(await repairOverlays(deps), ["a"], "rejoined once listed and out of reach twice");
  const none = fake([], () => true);
  await repairOverlays(none.deps);
  assert.equal(
    none.rounds(),
    REPAIR.windowMs / REPAIR.periodMs,
    "a swarm with no instance elsewhere: the whole window",
  );
});

test("an overlay out of reach two rounds in a row is rejoined, not again before settleMs; the watch ends once it answers", async () => {
  // a: out of reach for rounds 1-3 (2 s apart), in reach from round 4; b always in reach.
  const f = fake([...on("a", 5), ...on("b", 1)], (n, round) => n === "b" || round >= 4);
  assert.deepEqual(await repairOverlays(f.deps), ["a"]);
  assert.deepEqual(f.rejoins, [{ network: "a", at: 2 * REPAIR.periodMs }], "round 3 came within settleMs");
  assert.equal(f.rounds(), 3 + REPAIR.doneRounds);
  assert.ok(
    f.dials.filter((h) => h.startsWith("a-")).length <= f.rounds() * REPAIR.perNetwork,
    "a few per overlay",
  );
});

test("an overlay out of reach for one round only (a fresh join learning its peers) is left alone", async () => {
  const f = fake(on("a", 2), (_, round) => round >= 2);
  assert.deepEqual(await repairOverlays(f.deps), []);
  assert.equal(f.rounds(), 1 + REPAIR.doneRounds);
});

test("a sandbox made again starts the watch over: its overlays were joined anew", async () => {
  const f = fake(on("a", 1), (_, round) => round >= 5);
  const deps: OverlayRepairDeps = {
    ...f.deps,
    remoteTargets: async () => {
      const targets = await f.deps.remoteTargets();
      if (f.rounds() === 1) f.sandbox.generation++; // made again during round 1
      return targets;
    },
  };
  await repairOverlays(deps);
  // Round 1 counted for the old sandbox; the next sleep sees the new one and skips; rounds 2-3 confirm.
  assert.equal(f.rejoins.length, 1);
  assert.equal(f.rejoins[0]?.at, 4 * REPAIR.periodMs);
});

test("an overlay that never answers is rejoined every settleMs within the window, then left alone", async () => {
  const f = fake(on("a", 1), () => false);
  const rejoined = await repairOverlays(f.deps);
  const most = Math.ceil(REPAIR.windowMs / REPAIR.settleMs);
  assert.ok(rejoined.length >= 2 && rejoined.length <= most, `${rejoined.length} rejoins`);
  for (let i = 1; i < f.rejoins.length; i++)
    assert.ok((f.rejoins[i]?.at ?? 0) - (f.rejoins[i - 1]?.at ?? 0) >= REPAIR.settleMs);
  assert.ok(f.rounds() <= REPAIR.windowMs / REPAIR.periodMs + 1, "the watch is bounded");
});

test("a failed list of the instances is a round lost, not the watch; a failed rejoin is reported", async () => {
  const f = fake(on("a", 1), (_, round) => round >= 4);
  let calls = 0;
  const warned: string[] = [];
  const deps: OverlayRepairDeps = {
    ...f.deps,
    remoteTargets: () => (++calls === 1 ? Promise.reject(new Error("engine down")) : f.deps.remoteTargets()),
    rejoin: async () => {
      throw new Error("no such network");
    },
    logger: { warn: (o) => void warned.push(JSON.stringify(o)) },
  };
  assert.deepEqual(await repairOverlays(deps), [], "nothing rejoined: the rejoin failed");
  assert.ok(warned.some((w) => w.includes("no such network")));
});
