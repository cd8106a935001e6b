// The nodes' routes over the fake swarm (ADR 0030): what a user sees for an unknown node, the last active
// node drained, a read-only admin token asking for the join secret, and a server on one dockerd.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FakeNodes } from "../../support/fake-nodes.js";
import { type ApiOverFakes, apiOverFakes } from "./api-setup.js";

const ADMIN = "admin-token-0123456789abcdef";
const READER = "reader-token-0123456789abcdef";

describe("the nodes' routes", () => {
  let s: ApiOverFakes;
  const nodes = new FakeNodes();
  before(async () => {
    s = await apiOverFakes({ nodes });
    await s.token("root", ADMIN);
    await s.token("reader", READER, { readOnly: true });
  });
  after(() => s.close());

  test("an unknown node: 404 NODE_NOT_FOUND naming it and the nodes there are", async () => {
    const a = await s.call(ADMIN, "POST", "/v1/nodes/node9/drain");
    assert.equal(a.status, 404);
    assert.equal(a.body.error?.code, "NODE_NOT_FOUND");
    assert.equal(a.body.error?.message, "There is no node named 'node9' in the swarm.");
    assert.match(a.body.error?.hint ?? "", /node1, node2, node3/);
  });

  test("draining the last active node: 409 saying why, and nothing changes", async () => {
    assert.equal((await s.call(ADMIN, "POST", "/v1/nodes/node2/drain")).status, 200);
    assert.equal((await s.call(ADMIN, "POST", "/v1/nodes/node3/drain")).status, 200);
    const a = await s.call(ADMIN, "POST", "/v1/nodes/node1/drain");
    assert.equal(a.status, 409);
    assert.equal(a.body.error?.code, "CONFLICT");
    assert.match(a.body.error?.message ?? "", /^Draining node1 would leave no active, ready node .*last one/);
    assert.equal(nodes.nodes.find((n) => n.name === "node1")?.availability, "active");
    for (const n of ["node2", "node3"]) await s.call(ADMIN, "POST", `/v1/nodes/${n}/activate`);
  });

  test("the join command: its token and the manager's address; a read-only token may list but not ask it", async () => {
    const a = await s.call(ADMIN, "POST", "/v1/nodes/join-command", { role: "manager" });
    assert.equal(a.status, 200);
    assert.equal(a.body.command, "docker swarm join --token SWMTKN-1-fake-manager 192.0.2.11:2377");
    assert.equal((await s.call(READER, "GET", "/v1/nodes")).status, 200);
    assert.equal((await s.call(READER, "POST", "/v1/nodes/join-command")).status, 403);
    assert.equal((await s.call(READER, "POST", "/v1/nodes/node2/drain")).status, 403);
    const bad = await s.call(ADMIN, "POST", "/v1/nodes/join-command", { role: "boss" });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error?.message ?? "", /role: must be one of manager, worker/);
  });
});

describe("the nodes' routes on one dockerd (PIER_ENGINE=docker)", () => {
  let s: ApiOverFakes;
  before(async () => {
    s = await apiOverFakes({ nodes: null });
    await s.token("root", ADMIN);
  });
  after(() => s.close());

  test("every one answers 409 NO_SWARM saying how to get a swarm", async () => {
    for (const [method, path] of [
      ["GET", "/v1/nodes"],
      ["POST", "/v1/nodes/join-command"],
      ["POST", "/v1/nodes/node1/drain"],
      ["POST", "/v1/nodes/node1/activate"],
    ] as const) {
      const a = await s.call(ADMIN, method, path);
      assert.equal(a.status, 409, `${method} ${path}`);
      assert.equal(a.body.error?.code, "NO_SWARM");
      assert.match(a.body.error?.hint ?? "", /PIER_ENGINE=swarm/);
    }
  });
});
