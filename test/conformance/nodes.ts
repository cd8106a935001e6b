// The Nodes port's one conformance suite (ADR 0030): the Swarm adapter passes it on the lab
// (test/e2e-swarm/nodes.test.ts), the fake in the unit run (test/unit/adapters/fake-nodes.test.ts).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Nodes } from "../../src/core/ports.js";

export interface NodesBed {
  nodes: Nodes;
  /** A worker that may be drained and activated again. */
  worker: string;
  cleanUp(): Promise<void>;
}

export function nodesConformance(name: string, make: () => Promise<NodesBed>): void {
  describe(`Nodes conformance: ${name}`, { timeout: 120_000 }, () => {
    let bed: NodesBed;
    before(async () => {
      bed = await make();
    });
    after(async () => {
      await bed.nodes.setAvailability(bed.worker, "active").catch(() => undefined);
      await bed.cleanUp();
    });

    test("every node is listed with its name, address, role, availability, state and labels", async () => {
      const list = await bed.nodes.listNodes();
      assert.ok(list.length >= 2, JSON.stringify(list));
      for (const n of list) {
        assert.ok(n.id !== "" && n.name !== "", JSON.stringify(n));
        assert.match(n.address, /^[0-9a-f.:]+$/, JSON.stringify(n));
        assert.ok(["manager", "worker"].includes(n.role));
        assert.equal(n.availability, "active", n.name);
        assert.equal(n.state, "ready", n.name);
        assert.equal(typeof n.labels, "object");
      }
      assert.equal(list.filter((n) => n.leader).length, 1, "one leader");
      assert.equal(list.find((n) => n.leader)?.role, "manager");
      assert.equal(list.find((n) => n.name === bed.worker)?.role, "worker");
    });

    test("a join token for each role, with the managers' addresses", async () => {
      const worker = await bed.nodes.joinToken("worker");
      const manager = await bed.nodes.joinToken("manager");
      assert.equal(worker.role, "worker");
      assert.equal(manager.role, "manager");
      assert.match(worker.token, /^SWMTKN-/);
      assert.notEqual(worker.token, manager.token);
      const leader = (await bed.nodes.listNodes()).find((n) => n.leader);
      assert.equal(worker.managers[0], `${leader?.address}:2377`);
    });

    test("drain moves a node out of work, activate brings it back; the new state is answered", async () => {
      const drained = await bed.nodes.setAvailability(bed.worker, "drain");
      assert.equal(drained.name, bed.worker);
      assert.equal(drained.availability, "drain");
      assert.equal((await bed.nodes.listNodes()).find((n) => n.name === bed.worker)?.availability, "drain");
      // Twice is the same.
      assert.equal((await bed.nodes.setAvailability(bed.worker, "drain")).availability, "drain");
      const active = await bed.nodes.setAvailability(bed.worker, "active");
      assert.equal(active.availability, "active");
      assert.equal((await bed.nodes.listNodes()).find((n) => n.name === bed.worker)?.availability, "active");
    });

    test("a node is found by its id too; an unknown one is NODE_NOT_FOUND naming it", async () => {
      const n = (await bed.nodes.listNodes()).find((x) => x.name === bed.worker);
      assert.ok(n);
      assert.equal((await bed.nodes.setAvailability(n.id, "active")).name, bed.worker);
      await assert.rejects(
        bed.nodes.setAvailability("no-such-node", "drain"),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "NODE_NOT_FOUND");
          assert.match(e.message, /no-such-node/);
          return true;
        },
      );
    });
  });
}
