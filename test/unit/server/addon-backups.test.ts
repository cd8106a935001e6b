// The daily add-on backups' timer, driven by a clock the test moves (ADR 0027): the first round a minute
// after start, then one every hour; a round backs up what is due at the clock's time.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import { addonProviders } from "../../../src/adapters/addons/providers.js";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { AddonKind } from "../../../src/core/addons.js";
import { AddonBackups } from "../../../src/server/addon-backups.js";
import { withAddonImages } from "../../support/addon-images.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { ManualClock } from "../../support/manual-clock.js";

const dir = mkdtempSync(join(tmpdir(), "pier-addon-backups-unit-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("AddonBackups on a clock", () => {
  it("backs up a minute after start, then every hour, once a day per add-on, at the clock's time", async () => {
    const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
    const addons = store.addons();
    const clock = new ManualClock();
    // The real providers over the one fake engine (its add-on servers play the images).
    const engine = new FakeEngine();
    withAddonImages(engine);
    const providers = addonProviders(engine);
    const kv = providers.kv;
    const backups = new AddonBackups({
      addons,
      providers,
      logger: pino({ level: "silent" }),
      backupDir: join(dir, "backups"),
      backupDays: 7,
      clock,
    });
    const credentials = kv.credentials("cache");
    const a = await addons.createAddon(
      { id: "adn-cache", name: "cache", kind: "kv", flavor: "nano" },
      credentials,
    );
    await engine.ensureNetwork("adn-cache-net", {}, { ipv4: null, ipv6: null });
    await kv.provision({
      id: a.id,
      name: a.name,
      flavor: a.flavor,
      memoryBytes: 64 * 2 ** 20,
      credentials,
      network: "adn-cache-net",
    });
    const made = async () => {
      for (let i = 0; i < 100; i++) {
        const list = await addons.listBackups(a.id);
        if (list.length > 0) return list;
        await new Promise((r) => setTimeout(r, 10));
      }
      return [];
    };
    backups.start();
    try {
      assert.deepEqual(clock.pending(), [60_000], "the first round is a minute after start");
      clock.advance(59_999);
      assert.deepEqual(await addons.listBackups(a.id), [], "nothing before that minute");
      clock.advance(1);
      const first = await made();
      assert.equal(first.length, 1);
      assert.equal(first[0]?.createdAt, clock.iso(), "recorded at the clock's time");
      assert.equal(first[0]?.automatic, true);
      assert.deepEqual(clock.pending(), [3_600_000], "then every hour");
    } finally {
      backups.stop();
    }
    assert.deepEqual(clock.pending(), [], "stop() cancels the next round");
    store.close();
  });

  it("names each kind's backup file for what it holds: an RDB snapshot, a pg_dump archive, a gzip'ed SQL dump, a tar.gz of a bucket", async () => {
    const store = new SqliteStore(join(dir, "kinds.db"), SecretBox.fromFile(join(dir, "secret.key")));
    const addons = store.addons();
    const kinds: AddonKind[] = ["kv", "postgresql", "mysql", "fs"];
    const engine = new FakeEngine();
    withAddonImages(engine);
    await engine.ensureNetwork("kinds-net", {}, { ipv4: null, ipv6: null });
    const providers = addonProviders(engine);
    const backups = new AddonBackups({
      addons,
      providers,
      logger: pino({ level: "silent" }),
      backupDir: join(dir, "kinds-backups"),
      backupDays: 7,
      clock: new ManualClock(),
    });
    const files: string[] = [];
    for (const kind of kinds) {
      const credentials = providers[kind].credentials(kind);
      const a = await addons.createAddon(
        { id: `adn-${kind}`, name: `a-${kind}`, kind, flavor: "nano" },
        credentials,
      );
      await providers[kind].provision({
        id: a.id,
        name: a.name,
        flavor: "nano",
        memoryBytes: 2 ** 28,
        credentials,
        network: "kinds-net",
      });
      files.push((await backups.create(a)).file.replace(/^.*-bak-[0-9a-z]+/, ""));
    }
    assert.deepEqual(files, [".rdb", ".pgdump", ".sql.gz", ".tar.gz"]);
    store.close();
  });
});
