// The subnet pool (src/server/networks.ts) against the one fake engine (test/support: it refuses overlapping
// subnets as dockerd does), and the real SQLite store.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { PierError } from "../../../src/core/errors.js";
import { type Cidr, parseCidr } from "../../../src/core/subnets.js";
import { Isolation } from "../../../src/server/isolation.js";
import { Networks } from "../../../src/server/networks.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryFirewall } from "./memory-firewall.js";

const cidr = (s: string) => parseCidr(s) as Cidr;

/** What these tests watch on the engine: a network's rule when it is created; a hook run before each create. */
interface Watch {
  isolatedAtCreate: Map<string, boolean>;
  /** Runs before each create: another Pier acting between our look and our create. */
  beforeCreate: (() => void) | null;
}
const watches = new WeakMap<FakeEngine, Watch>();
const watchOf = (engine: FakeEngine) => watches.get(engine) as Watch;

function watch(engine: FakeEngine, firewall: MemoryFirewall): void {
  const w: Watch = { isolatedAtCreate: new Map(), beforeCreate: null };
  watches.set(engine, w);
  engine.before.ensureNetwork = (name, _labels, s) => {
    w.beforeCreate?.();
    if (engine.networks.some((n) => n.name === name)) return;
    const rule = firewall.isolated().get(name) ?? [];
    w.isolatedAtCreate.set(
      name,
      s.ipv4 !== null && rule.includes(s.ipv4) && (!s.ipv6 || rule.includes(s.ipv6)),
    );
  };
}

const listCalls = (engine: FakeEngine) => engine.calls.filter((c) => c === "networksWithSubnets").length;

const dir = mkdtempSync(join(tmpdir(), "pier-networks-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const box = SecretBox.fromKey(randomBytes(32));

function setUp(
  engine: FakeEngine,
  file = join(dir, `${randomBytes(4).toString("hex")}.db`),
  pool = "10.210.0.0/24",
) {
  const store = new SqliteStore(file, box);
  const firewall = new MemoryFirewall();
  watch(engine, firewall);
  const isolation = new Isolation({
    firewall,
    scope: "test",
    pool,
    allow: [],
    hostPorts: [8000],
    logger: pino({ level: "silent" }),
  });
  const networks = new Networks({
    engine,
    store,
    pool: cidr(pool),
    prefix: 26,
    isolation,
  });
  return { store, networks, file, firewall, isolation };
}

const subnetOf = (e: FakeEngine, name: string) => e.networks.find((n) => n.name === name)?.subnets[0];

describe("the subnet pool", () => {
  test("concurrent creates get distinct subnets, recorded in the store", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine, undefined, "10.210.0.0/20");
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => networks.ensure(`pier-app-${i}`, `app-${i}`, null)),
    );
    const subnets = engine.networks.map((n) => n.subnets[0]);
    assert.equal(new Set(subnets).size, 40);
    assert.ok(subnets.every((s) => s?.startsWith("10.210.") && s.endsWith("/26")));
    assert.equal((await store.listSubnets()).length, 40);
    store.close();
  });

  test("the same network asked for twice at once is made once, with one subnet", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine);
    await Promise.all([networks.ensure("pier-a", "a", null), networks.ensure("pier-a", "a", null)]);
    assert.equal(engine.networks.length, 1);
    assert.equal((await store.listSubnets()).length, 1);
    store.close();
  });

  test("an existing network costs one engine call and no allocation", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine);
    await networks.ensure("pier-a", "a", null);
    const calls = listCalls(engine);
    for (let i = 0; i < 10; i++) await networks.ensure("pier-a", "a", null);
    assert.equal(listCalls(engine), calls);
    store.close();
  });

  test("subnets of networks the store does not know are skipped", async () => {
    const engine = new FakeEngine();
    engine.networks.push({ name: "users-net", labels: {}, subnets: ["10.210.0.0/25"] });
    engine.networks.push({
      name: "other-pier",
      labels: { "pier.managed": "true" },
      subnets: ["10.210.0.128/26"],
    });
    const { store, networks } = setUp(engine);
    await networks.ensure("pier-a", "a", null);
    assert.equal(subnetOf(engine, "pier-a"), "10.210.0.192/26");
    await assert.rejects(
      networks.ensure("pier-b", "b", null),
      (e: PierError) => e.code === "SUBNET_POOL_FULL",
    );
    store.close();
  });

  test("another Pier taking the subnet between look and create: the next one is used", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine);
    watchOf(engine).beforeCreate = () => {
      watchOf(engine).beforeCreate = null;
      engine.networks.push({
        name: "other-pier",
        labels: { "pier.managed": "true" },
        subnets: ["10.210.0.0/26"],
      });
    };
    await networks.ensure("pier-a", "a", null);
    assert.equal(subnetOf(engine, "pier-a"), "10.210.0.64/26");
    assert.deepEqual(
      (await store.listSubnets()).map((c) => c.subnet),
      ["10.210.0.64/26"],
    );
    store.close();
  });

  test("deleting an app frees its subnets; the record survives a restart", async () => {
    const engine = new FakeEngine();
    const first = setUp(engine);
    await first.networks.ensure("pier-a", "a", null);
    await first.networks.ensure("pier-a-v6-1", "a", null);
    await first.networks.ensure("pier-b", "b", null);
    first.store.close();
    const again = setUp(engine, first.file);
    assert.equal((await again.store.listSubnets()).length, 3);
    await again.networks.remove("a");
    assert.deepEqual(
      (await again.store.listSubnets()).map((c) => c.network),
      ["pier-b"],
    );
    // The freed subnet is given again.
    await again.networks.ensure("pier-c", "c", null);
    assert.equal(subnetOf(engine, "pier-c"), "10.210.0.0/26");
    again.store.close();
  });

  test("a prune keeps the network in use and frees the others", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine);
    await networks.ensure("pier-a", "a", null);
    await networks.ensure("pier-a-v6-1", "a", null);
    await networks.remove("a", "pier-a-v6-1");
    assert.deepEqual(
      (await store.listSubnets()).map((c) => c.network),
      ["pier-a-v6-1"],
    );
    store.close();
  });

  test("reconcile: deleted apps' networks go, records of vanished networks are freed", async () => {
    const engine = new FakeEngine();
    const { store, networks } = setUp(engine);
    await networks.ensure("pier-a", "a", null);
    await networks.ensure("pier-b", "b", null);
    await networks.ensure("pier-c", "c", null);
    engine.networks = engine.networks.filter((n) => n.name !== "pier-c");
    await networks.reconcile(new Set(["a", "c"]));
    assert.deepEqual(
      engine.networks.map((n) => n.name),
      ["pier-a"],
    );
    assert.deepEqual(
      (await store.listSubnets()).map((c) => c.network),
      ["pier-a"],
    );
    store.close();
  });

  test("checkPool: a network no Pier made inside the pool is a start error naming the setting", async () => {
    const engine = new FakeEngine();
    engine.networks.push({ name: "bridge", labels: {}, subnets: ["172.17.0.0/16"] });
    engine.networks.push({
      name: "other-pier",
      labels: { "pier.managed": "true" },
      subnets: ["10.210.0.0/26"],
    });
    const ok = setUp(engine);
    await ok.networks.checkPool();
    ok.store.close();
    const clash = setUp(engine, undefined, "172.16.0.0/12");
    await assert.rejects(clash.networks.checkPool(), (e: PierError) => {
      assert.equal(e.code, "CONFIG_INVALID");
      assert.match(
        e.message,
        /^PIER_SUBNET_POOL: 172\.16\.0\.0\/12 overlaps the Docker network 'bridge' \(172\.17\.0\.0\/16\)/,
      );
      return true;
    });
    clash.store.close();
  });
});

describe("IPv6 networks", () => {
  test("an IPv4 subnet still held by a network on its way out: the next one, not a variable error", async () => {
    const engine = new FakeEngine();
    engine.heldSubnets = ["10.210.0.0/26"];
    const { store, networks, firewall } = setUp(engine);
    await networks.ensure("pier-a-v6-1", "a", "fd00:5::/64");
    assert.deepEqual(engine.networks[0]?.subnets, ["10.210.0.64/26", "fd00:5::/64"]);
    assert.deepEqual(firewall.isolated().get("pier-a-v6-1"), ["10.210.0.64/26", "fd00:5::/64"]);
    store.close();
  });

  test("an IPv6 subnet another network has: INVALID_VARIABLE, and no record or rule is left", async () => {
    const engine = new FakeEngine();
    const { store, networks, firewall } = setUp(engine);
    await networks.ensure("pier-a-v6-1", "a", "fd00:6::/64");
    await assert.rejects(networks.ensure("pier-b-v6-1", "b", "fd00:6::/64"), (e: PierError) => {
      assert.equal(e.code, "INVALID_VARIABLE");
      assert.match(e.message, /The IPv6 subnet fd00:6::\/64 \(CC_DOCKER_FIXED-CIDR-V6\) overlaps a network/);
      return true;
    });
    assert.deepEqual(
      (await store.listSubnets()).map((c) => c.network),
      ["pier-a-v6-1"],
    );
    assert.deepEqual([...firewall.isolated().keys()], ["pier-a-v6-1"]);
    store.close();
  });
});

describe("isolation rules follow the networks (ADR 0019)", () => {
  test("a network's rule is in place before the engine creates it, with its IPv6 subnet too", async () => {
    const engine = new FakeEngine();
    const { store, networks, firewall } = setUp(engine, undefined, "10.210.0.0/20");
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => networks.ensure(`pier-app-${i}`, `app-${i}`, null)),
    );
    await networks.ensure("pier-v6", "v6", "fd00:1::/64");
    assert.equal(watchOf(engine).isolatedAtCreate.size, 13);
    assert.ok([...watchOf(engine).isolatedAtCreate.values()].every((x) => x));
    assert.deepEqual(firewall.isolated().get("pier-v6"), [subnetOf(engine, "pier-v6"), "fd00:1::/64"]);
    store.close();
  });

  test("the rule goes only after the engine removed the network; a kept network keeps its rule", async () => {
    const engine = new FakeEngine();
    const { store, networks, firewall } = setUp(engine);
    await networks.ensure("pier-a", "a", null);
    await networks.ensure("pier-a-v6-1", "a", "fd00:2::/64");
    await networks.ensure("pier-b", "b", null);
    let ruleWhileRemoving: string[] = [];
    engine.before.removeNetworks = () => {
      ruleWhileRemoving = [...firewall.isolated().keys()].sort();
    };
    await networks.remove("a", "pier-a-v6-1");
    assert.deepEqual(ruleWhileRemoving, ["pier-a", "pier-a-v6-1", "pier-b"]);
    assert.deepEqual([...firewall.isolated().keys()].sort(), ["pier-a-v6-1", "pier-b"]);
    await networks.remove("a");
    assert.deepEqual([...firewall.isolated().keys()], ["pier-b"]);
    store.close();
  });

  test("a subnet another Pier took meanwhile: the rule follows the subnet used in the end", async () => {
    const engine = new FakeEngine();
    const { store, networks, firewall } = setUp(engine);
    watchOf(engine).beforeCreate = () => {
      watchOf(engine).beforeCreate = null;
      engine.networks.push({
        name: "other-pier",
        labels: { "pier.managed": "true" },
        subnets: ["10.210.0.0/26"],
      });
    };
    await networks.ensure("pier-a", "a", null);
    assert.deepEqual(firewall.isolated().get("pier-a"), ["10.210.0.64/26"]);
    assert.equal(watchOf(engine).isolatedAtCreate.get("pier-a"), true);
    store.close();
  });

  test("a firewall that refuses: the network is not made, and the error says why", async () => {
    const engine = new FakeEngine();
    const { store, networks, firewall } = setUp(engine);
    firewall.refuse = "Operation not permitted";
    await assert.rejects(networks.ensure("pier-a", "a", null), (e: PierError) => {
      assert.equal(e.code, "ISOLATION_FAILED");
      assert.equal(e.status, 503);
      assert.match(
        e.message,
        /refused Pier's isolation rules \(nftables table inet pier-test\): Operation not permitted/,
      );
      assert.match(e.hint ?? "", /nftables/);
      return true;
    });
    assert.equal(engine.networks.length, 0);
    store.close();
  });

  test("at a restart, every recorded network's rule is rebuilt from the store (IPv6 from the engine)", async () => {
    const engine = new FakeEngine();
    const first = setUp(engine);
    await first.networks.ensure("pier-a", "a", "fd00:3::/64");
    await first.networks.ensure("pier-addon-k-net", "k", null, { "pier.addon": "k" });
    first.store.close();
    const again = setUp(engine, first.file);
    assert.equal(again.firewall.applied, 0);
    await again.isolation.restore(await again.networks.recorded());
    assert.deepEqual([...again.firewall.isolated()].sort(), [
      ["pier-a", ["10.210.0.0/26", "fd00:3::/64"]],
      ["pier-addon-k-net", ["10.210.0.64/26"]],
    ]);
    // The app is deleted: its rule goes; with no network left the plan has none (the table is removed).
    await again.networks.remove("a");
    await again.networks.released(["pier-addon-k-net"]);
    assert.deepEqual(again.firewall.plan?.networks, []);
    again.store.close();
  });
});
