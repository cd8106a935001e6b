// The isolation service (src/server/isolation.ts, ADR 0019) against the in-memory firewall: changes are
// applied one at a time and none is lost, a refused removal is only logged, and PIER_ISOLATION=off removes
// the rules an earlier start left and adds none.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import type { PierError } from "../../../src/core/errors.js";
import { Isolation, startIsolation } from "../../../src/server/isolation.js";
import { MemoryFirewall } from "./memory-firewall.js";

const opts = (firewall: MemoryFirewall, logger = pino({ level: "silent" })) => ({
  firewall,
  scope: "s1",
  pool: "10.210.0.0/16",
  allow: ["192.168.7.0/24"],
  hostPorts: [8000, 8443],
  logger,
});

describe("Isolation", () => {
  test("concurrent changes: every one is in the last plan applied, in the order asked", async () => {
    const fw = new MemoryFirewall();
    const iso = new Isolation(opts(fw));
    await Promise.all(Array.from({ length: 20 }, (_, i) => iso.add(`pier-${i}`, [`10.210.0.${i * 4}/30`])));
    assert.deepEqual(
      [...fw.isolated().keys()],
      Array.from({ length: 20 }, (_, i) => `pier-${i}`),
    );
    assert.equal(fw.plan?.table, "pier-s1");
    assert.deepEqual(fw.plan?.allow4, ["192.168.7.0/24"]);
    assert.deepEqual(fw.plan?.hostPorts, [8000, 8443]);
    await Promise.all([iso.remove(["pier-3"]), iso.remove(["pier-5", "pier-missing"])]);
    assert.equal(fw.isolated().size, 18);
    const before = fw.applied;
    await iso.remove(["pier-missing"]);
    assert.equal(fw.applied, before, "removing what has no rule applies nothing");
  });

  test("a refused add throws ISOLATION_FAILED; a refused remove is logged, and the next change applies", async () => {
    const fw = new MemoryFirewall();
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (l: string) => void lines.push(l) });
    const iso = new Isolation(opts(fw, logger));
    await iso.add("pier-a", ["10.210.0.0/26"]);
    fw.refuse = "nft: Operation not permitted";
    await assert.rejects(
      iso.add("pier-b", ["10.210.0.64/26"]),
      (e: PierError) => e.code === "ISOLATION_FAILED",
    );
    await iso.remove(["pier-a"]);
    assert.match(lines.join(""), /could not remove isolation rules/);
    fw.refuse = null;
    await iso.restore([{ name: "pier-c", subnets: ["10.210.0.128/26"] }]);
    assert.deepEqual([...fw.isolated().keys()], ["pier-c"]);
  });

  const noTables = [
    {
      name: "PIER_ISOLATION=off: the earlier table is removed, nothing is applied after, and the log says so",
      noTable: "off",
      said: /PIER_ISOLATION=off: Pier adds no firewall rules between apps/,
    },
    {
      name: "on a swarm: no table on this host (an earlier one removed), the node guard's part said in the log",
      noTable: "swarm",
      said: /on a swarm, apps are kept apart by the node guard on every node/,
      unsaid: /PIER_ISOLATION=off/,
    },
  ] as const;
  for (const c of noTables)
    test(c.name, async () => {
      const real = new MemoryFirewall();
      const lines: string[] = [];
      const logger = pino({ level: "info" }, { write: (l: string) => void lines.push(l) });
      const iso = await startIsolation({ ...opts(real, logger), noTable: c.noTable });
      assert.equal(real.applied, 1);
      assert.deepEqual(real.plan?.networks, []);
      assert.match(lines.join(""), c.said);
      if ("unsaid" in c) assert.doesNotMatch(lines.join(""), c.unsaid);
      await iso.add("pier-a", ["10.210.0.0/26"]);
      assert.equal(real.applied, 1);
    });
});
