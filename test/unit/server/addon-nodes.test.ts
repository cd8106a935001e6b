// Add-ons pinned to swarm nodes (ADR 0030), over the fakes: where the add-on service puts one (the node
// asked for, else the manager), what it refuses before anything is made (an unknown node, a node on one
// dockerd), a drain of an add-on's node refused saying what to do, and PIER_SWARM_NODE_ENGINES read.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import { addonProviders } from "../../../src/adapters/addons/providers.js";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { LABEL } from "../../../src/core/labels.js";
import { AddonService } from "../../../src/server/addons.js";
import { parseNodeEngines } from "../../../src/server/config-swarm.js";
import { NodeService } from "../../../src/server/nodes.js";
import { withAddonImages } from "../../support/addon-images.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { FakeNodes } from "../../support/fake-nodes.js";

const dir = mkdtempSync(join(tmpdir(), "pier-addon-nodes-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function setup(name: string, swarmNodes: string[] | null) {
  const store = new SqliteStore(join(dir, `${name}.db`), SecretBox.fromFile(join(dir, "secret.key")));
  const engine = new FakeEngine();
  withAddonImages(engine);
  engine.addonServers.swarmNodes = swarmNodes;
  const service = new AddonService({
    store,
    addons: store.addons(),
    engine,
    networks: {
      ensure: (n, owner, _ipv6, labels) =>
        engine.ensureNetwork(n, labels ?? { [LABEL.app]: owner }, { ipv4: null, ipv6: null }),
      released: (names) => store.releaseSubnets(names),
    },
    providers: addonProviders(engine),
    logger: pino({ level: "silent" }),
    backupDir: join(dir, `${name}-backups`),
    backupDays: 7,
  });
  return { engine, service };
}

describe("add-ons on swarm nodes", () => {
  it("goes on the node asked for, else on the manager; the record and the server's spec say which", async () => {
    const { engine, service } = setup("placed", ["node1", "node2", "node3"]);
    const pinned = await service.create({ kind: "kv", name: "cache", node: "node2" });
    assert.equal(pinned.node, "node2");
    assert.equal((await service.get("cache")).node, "node2");
    const byDefault = await service.create({ kind: "kv", name: "sessions" });
    assert.equal(byDefault.node, "node1");
    assert.deepEqual(
      engine.addonServers.specs.map((s) => s.node),
      ["node2", "node1"],
    );
    assert.deepEqual(await service.pinnedTo("node2"), ["cache"]);
  });

  it("an unknown node is refused naming the nodes, before anything is made", async () => {
    const { engine, service } = setup("unknown", ["node1", "node2"]);
    await assert.rejects(service.create({ kind: "kv", name: "cache", node: "node9" }), {
      code: "INVALID_INPUT",
      message: "--node node9: the swarm has no node of that name (its nodes: node1, node2).",
    });
    await assert.rejects(service.get("cache"), { code: "ADDON_NOT_FOUND" });
    assert.equal(engine.addonServers.specs.length, 0);
  });

  it("on one dockerd, --node is refused saying there are no nodes; without it, no node is recorded", async () => {
    const { service } = setup("one", null);
    await assert.rejects(service.create({ kind: "kv", name: "cache", node: "node2" }), {
      code: "INVALID_INPUT",
      message: /Pier runs on one dockerd \(PIER_ENGINE=docker\), which has no nodes/,
    });
    assert.equal((await service.create({ kind: "kv", name: "cache" })).node, null);
  });

  it("a drain of a node add-ons are pinned to is refused, naming them and the steps; another node drains", async () => {
    const nodes = new NodeService(new FakeNodes(), null, async (node) =>
      node === "node2" ? ["cache", "db"] : [],
    );
    await assert.rejects(nodes.drain("node2"), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.code, "CONFLICT");
      assert.equal(
        e.message,
        "node2 was not drained: the add-ons cache, db are pinned to it with their data, and a drain cannot move them.",
      );
      assert.match(e.hint ?? "", /pier addon backup create NAME.*--node OTHER.*then drain node2 again/);
      return true;
    });
    assert.equal((await nodes.list()).find((n) => n.name === "node2")?.availability, "active");
    assert.equal((await nodes.drain("node3")).availability, "drain");
  });

  it("PIER_SWARM_NODE_ENGINES: unix sockets and tcp addresses by node; a bad item is named", () => {
    assert.deepEqual(parseNodeEngines("node2=unix:///run/n2.sock, node3=tcp://10.0.0.3:2375"), {
      node2: { socketPath: "/run/n2.sock" },
      node3: { host: "10.0.0.3", port: 2375 },
    });
    assert.deepEqual(parseNodeEngines(""), {});
    assert.throws(
      () => parseNodeEngines("node2"),
      /'node2' is not NODE=unix:\/\/\/path or NODE=tcp:\/\/host:port/,
    );
    assert.throws(() => parseNodeEngines("node2=http://x"), /node2: 'http:\/\/x' is not unix/);
    assert.throws(() => parseNodeEngines("a=unix:///x,a=unix:///y"), /the node a is named twice/);
  });
});
