// The add-on service on a real SQLite store with the real providers over the fake engine: what it
// records, what it refuses, the links' environment, the daily backups and their retention, and the undo
// of a failed provisioning.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import { addonProviders } from "../../../src/adapters/addons/providers.js";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { PierError } from "../../../src/core/errors.js";
import { LABEL } from "../../../src/core/labels.js";
import { AddonService } from "../../../src/server/addons.js";
import { newApp } from "../../conformance/store.js";
import { withAddonImages } from "../../support/addon-images.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { storeApp } from "./store-apps.js";

const dir = mkdtempSync(join(tmpdir(), "pier-addons-unit-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function setup(name: string) {
  const store = new SqliteStore(join(dir, `${name}.db`), SecretBox.fromFile(join(dir, "secret.key")));
  // The real providers over the one fake engine, whose add-on servers play the images (ADR 0015).
  const engine = new FakeEngine();
  withAddonImages(engine);
  /** Makes a network as Networks would (an app's `pier-<id>` is labelled with that id). */
  const net = async (
    n: string,
    owner = n.slice(5),
    _ipv6: string | null = null,
    labels?: Record<string, string>,
  ) => engine.ensureNetwork(n, labels ?? { [LABEL.app]: owner }, { ipv4: null, ipv6: null });
  const service = new AddonService({
    store,
    addons: store.addons(),
    engine,
    networks: {
      ensure: net,
      released: (names: readonly string[]) => store.releaseSubnets(names),
    },
    providers: addonProviders(engine),
    logger: pino({ level: "silent" }),
    backupDir: join(dir, `${name}-backups`),
    backupDays: 7,
  });
  /** The app networks an add-on's server is on (its own left out). */
  const appNetworks = async (id: string) =>
    ((await engine.addonServer(id))?.networks ?? []).filter((n) => n !== AddonService.networkOf(id));
  return { store, engine, service, net, appNetworks };
}

describe("AddonService", () => {
  it("creates, links at creation, refuses duplicates and unknown apps, and undoes a failed provisioning", async () => {
    const { store, engine, service } = setup("create");
    await storeApp(store, "web");
    const a = await service.create({ kind: "kv", name: "cache", link: ["web"] });
    assert.deepEqual([a.kind, a.flavor, a.apps], ["kv", "nano", ["web"]]);
    await assert.rejects(service.create({ kind: "kv", name: "cache" }), /exists already/);
    await assert.rejects(
      service.create({ kind: "kv", name: "x", link: ["nope"] }),
      /No app named or numbered 'nope'/,
    );
    await assert.rejects(service.create({ kind: "redis", name: "x" }), /unknown add-on kind 'redis'/);
    engine.before.runAddonServer = () => {
      throw new Error("engine said no");
    };
    await assert.rejects(service.create({ kind: "kv", name: "broken" }), /engine said no/);
    assert.deepEqual(
      (await service.list(null)).map((x) => x.name),
      ["cache"],
      "nothing of it is left",
    );
    // The credentials are stored sealed: the database file holds no password in clear.
    const { password } = await store.addons().addonCredentials(a.id);
    store.close();
    const raw = (await import("node:fs")).readFileSync(join(dir, "create.db"));
    assert.ok(!raw.includes(password));
  });

  it("links: the environment of the app and its sources; unlink; delete refused while linked", async () => {
    const { store, service } = setup("links");
    const web = await storeApp(store, "web");
    const api = await storeApp(store, "api");
    const a = await service.create({ kind: "postgresql", name: "db" });
    await service.linkAddon(web, "db");
    await assert.rejects(service.linkAddon(web, "db"), /linked to web already/);
    await assert.rejects(service.linkAddon(web, "nope"), /No add-on/);
    await service.publish(api, "API_URL", "http://api");
    await assert.rejects(service.publish(api, "CC_RUN_COMMAND", "x"), /CC_/);
    await service.linkApp(web, api);
    await assert.rejects(service.linkApp(web, web), /itself/);
    const env = await service.environment(web.id, { OWN: "1" });
    assert.equal(env.vars.OWN, "1");
    assert.equal(env.vars.API_URL, "http://api");
    const { password } = await store.addons().addonCredentials(a.id);
    assert.equal(env.vars.DATABASE_URL, `postgresql://u_db:${password}@pier-addon-${a.id}:5432/db`);
    assert.deepEqual(
      [...new Set(env.linked.map((l) => `${l.source.kind}:${l.source.name}`))],
      ["addon:db", "app:api"],
    );
    await assert.rejects(service.remove(a, false), /linked to web/);
    await service.unlinkAddon(web, "db");
    await assert.rejects(service.unlinkAddon(web, "db"), /not linked/);
    await service.remove(a, false);
    assert.equal((await service.environment(web.id, {})).vars.DATABASE_URL, undefined);
    store.close();
  });

  it("attach connects linked add-ons to the app's networks and disconnects the others", async () => {
    const { store, engine, service, net, appNetworks } = setup("attach");
    const web = await storeApp(store, "web");
    const a = await service.create({ kind: "kv", name: "cache", link: ["web"] });
    const b = await service.create({ kind: "kv", name: "other" });
    await net(`pier-${web.id}`);
    await engine.connectAddonServer(b.id, `pier-${web.id}`);
    const lines = await service.attach(web.id, { name: `pier-${web.id}`, ipv6Subnet: null });
    assert.deepEqual(await appNetworks(a.id), [`pier-${web.id}`]);
    assert.deepEqual(await appNetworks(b.id), []);
    assert.match(lines.join("\n"), /Add-on cache \(kv\) is reachable at pier-addon-adn-[0-9a-f]+:6378\./);
    store.close();
  });

  it("status: per linked app joined, pending (no join yet) or joining; made again, it joins before it runs", async () => {
    const { store, engine, service, net } = setup("joins");
    const web = await storeApp(store, "web");
    await storeApp(store, "api");
    const a = await service.create({ kind: "kv", name: "cache", link: ["web", "api"] });
    await net(`pier-${web.id}`);
    const joins = async () => {
      const s = await service.status(a);
      return [s.state, ...s.joins.map((j) => `${j.app}: ${j.state} ${j.networks.join(",")}`)];
    };
    assert.deepEqual(await joins(), ["running", "api: pending ", `web: pending pier-${web.id}`]);
    // A deploy of web connects it: `joining` while it does.
    let release = () => {};
    const hold = new Promise<void>((r) => {
      release = r;
    });
    let reached = () => {};
    const connecting = new Promise<void>((r) => {
      reached = r;
    });
    engine.before.connectAddonServer = () => {
      reached();
      return hold;
    };
    const attaching = service.attach(web.id, { name: `pier-${web.id}`, ipv6Subnet: null });
    await connecting;
    assert.deepEqual(await joins(), ["joining", "api: pending ", `web: joining pier-${web.id}`]);
    release();
    engine.before = {};
    await attaching;
    assert.deepEqual(await joins(), ["running", "api: pending ", `web: joined pier-${web.id}`]);
    // Its container gone: made again at start with the linked apps' networks to join before it starts.
    engine.addonServers.lose(a.id);
    assert.equal((await service.status(a)).state, "missing");
    assert.deepEqual(await service.reconcile(), ["cache"]);
    assert.deepEqual(engine.addonServers.specs.at(-1)?.joins, [`pier-${web.id}`]);
    assert.deepEqual(await joins(), ["running", "api: pending ", `web: joined pier-${web.id}`]);
    store.close();
  });

  it("a stopped or missing add-on is neither backed up nor restored: ADDON_NOT_RUNNING, nothing changed", async () => {
    const { store, engine, service } = setup("stopped");
    const a = await service.create({ kind: "kv", name: "cache" });
    const b = await service.backup(a);
    engine.addonServers.lose(a.id);
    await assert.rejects(service.backup(a), (e: Error & { code?: string; status?: number }) => {
      assert.equal(e.code, "ADDON_NOT_RUNNING");
      assert.equal(e.status, 409);
      assert.match(
        e.message,
        /The add-on 'cache' is missing \(its container is gone\): nothing was backed up/,
      );
      return true;
    });
    await assert.rejects(service.restore(a, b.id), /nothing was restored, its data is as it was/);
    assert.deepEqual(
      (await service.backups(a)).map((x) => x.id),
      [b.id],
    );
    store.close();
  });

  it("daily backups: one a day per add-on, automatic ones kept PIER_BACKUP_DAYS days; restore checks the owner", async () => {
    const { store, service } = setup("backups");
    const a = await service.create({ kind: "kv", name: "cache" });
    const b = await service.create({ kind: "fs", name: "other" });
    const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000);
    const addons = store.addons();
    // Ten days of backups, made as the timer would (the clock is the test's).
    for (let n = 0; n < 10; n++) assert.equal((await service.runDailyBackups(day(n))).made, 2, `day ${n}`);
    assert.equal(
      (await service.runDailyBackups(new Date(day(9).getTime() + 3_600_000))).made,
      0,
      "not twice a day",
    );
    const kept = await addons.listBackups(a.id);
    assert.ok(kept.length <= 8 && kept.length >= 7, `kept ${kept.length}`);
    assert.ok(kept.every((x) => x.automatic));
    const gone = (await service.runDailyBackups(day(30))).deleted;
    assert.ok(gone >= 12, `deleted ${gone}`);
    const left = await addons.listBackups(a.id);
    assert.equal(left.length, 1, "the newest automatic backup stays");
    assert.ok(existsSync(join(dir, "backups-backups", a.id, left[0]!.file)));
    await assert.rejects(service.restore(b, left[0]!.id), /is of the add-on 'cache', not of 'other'/);
    await service.restore(a, left[0]!.id);
    const fsLeft = await addons.listBackups(b.id);
    assert.equal(fsLeft.length, 1, "an fs add-on's automatic backups rotate alike");
    assert.match(fsLeft[0]!.file, /\.tar\.gz$/);
    await service.restore(b, fsLeft[0]!.id);
    store.close();
  });

  it("a backup of one add-on restores into another of its kind when named (--from), never of another kind", async () => {
    const { store, service } = setup("restore-from");
    const a = await service.create({ kind: "kv", name: "cache" });
    const moved = await service.create({ kind: "kv", name: "cache2" });
    const files = await service.create({ kind: "fs", name: "files" });
    const b = await service.backup(a);
    await assert.rejects(service.restore(moved, b.id), (e: PierError) => {
      assert.equal(e.code, "BACKUP_NOT_FOUND");
      assert.match(e.message, /is of the add-on 'cache', not of 'cache2'/);
      assert.equal(
        e.hint,
        `To restore another add-on's backup into cache2: pier addon backup restore cache2 ${b.id} --from cache`,
      );
      return true;
    });
    assert.equal((await service.restore(moved, b.id, a)).id, b.id);
    await assert.rejects(service.restore(files, b.id, a), (e: PierError) => {
      assert.equal(e.code, "INVALID_INPUT");
      assert.match(e.message, /'cache' is a kv add-on and 'files' an fs one: .* Nothing was restored\./);
      return true;
    });
    await assert.rejects(service.restore(moved, b.id, moved), /is of the add-on 'cache', not of 'cache2'/);
    assert.deepEqual(
      (await store.addons().listBackups(moved.id)).map((x) => x.id),
      [],
      "the backup stays its source's",
    );
    store.close();
  });

  it("fs: a link gives BUCKET_HOST; a docker app is refused; CC_FS_BUCKET is checked against the app's links", async () => {
    const { store, service } = setup("fs");
    const web = await storeApp(store, "web");
    const other = await storeApp(store, "other");
    const dock = await store.createApp(newApp("dock", { type: "docker" }));
    const up = await service.create({ kind: "fs", name: "uploads", link: ["web"] });
    const host = `pier-addon-${up.id}`;
    assert.deepEqual((await service.environment(web.id)).vars, { BUCKET_HOST: host });
    assert.deepEqual(await service.buckets(web.id), [{ id: up.id, name: "uploads", host }]);
    assert.deepEqual(await service.buckets(other.id), []);
    // A Docker app: no link (at creation or later), no CC_FS_BUCKET; nothing made or linked.
    const noBuckets = /dock is a docker app, and the docker runtime has no file-system buckets/;
    await assert.rejects(service.linkAddon(dock, "uploads"), noBuckets);
    await assert.rejects(service.create({ kind: "fs", name: "more", link: ["dock"] }), noBuckets);
    assert.deepEqual(
      (await service.list(null)).map((x) => x.name),
      ["uploads"],
    );
    assert.deepEqual(await service.buckets(dock.id), []);
    assert.deepEqual(await service.bucketProblems(dock, { CC_FS_BUCKET: `/up:${host}` }), [
      "CC_FS_BUCKET: the docker runtime has no file-system buckets (runtime contract, section 1).",
    ]);
    // The app's own links only, by bucket name or add-on name; other variables are not looked at.
    assert.deepEqual(
      await service.bucketProblems(web, {
        CC_FS_BUCKET: `/up:${host}`,
        CC_FS_BUCKET_1: "/m:uploads",
        A: "x",
      }),
      [],
    );
    assert.deepEqual(await service.bucketProblems(other, { CC_FS_BUCKET: `/up:${host}` }), [
      `CC_FS_BUCKET names the bucket '${host}', which is not an fs add-on linked to other.`,
    ]);
    assert.match(
      (await service.bucketProblems(web, { CC_FS_BUCKET_2: "/../x:uploads" }))[0] ?? "",
      /CC_FS_BUCKET_2: the path '\/..\/x' must stay inside the app's folder/,
    );
    store.close();
  });
});
