// Creating an app through the service the API calls: the one name rule (src/core/names.ts) is applied with
// the server's PIER_DOMAIN, so that <name>.<domain> is a host name the edge can route.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { PierError } from "../../../src/core/errors.js";
import { AppService } from "../../../src/server/apps.js";
import type { Deployer } from "../../../src/server/deployer.js";
import { AppLimits } from "../../../src/server/limits.js";
import { InstanceStarts } from "../../../src/server/log-follow.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { fakeInstances } from "./fakes.js";

describe("AppService.create and PIER_DOMAIN", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-create-"));
  const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromKey(randomBytes(32)));
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Four labels of 61 characters: 247 characters, so a name may have at most 5.
  const domain = Array.from({ length: 4 }, (_, i) => `${"d".repeat(60)}${i}`).join(".");
  const engine = new FakeEngine();
  const instances = fakeInstances({ engine, store, domain });
  const apps = new AppService({
    store,
    engine,
    limits: new AppLimits({ store, defaults: { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 2 ** 20 } }),
    deployer: {} as Deployer,
    instances,
    starts: new InstanceStarts(),
    logger: pino({ level: "silent" }),
    repoDir: (id) => join(dir, `${id}.git`),
    gitUrl: (id) => `git+ssh://git@${domain}/${id}.git`,
    appUrl: (name) => `http://${name}.${domain}`,
    stopGraceMs: 10,
    domain,
    buildNetwork: null,
  });

  test("a name whose host name would pass 253 characters is refused with the rule, and nothing is stored", async () => {
    await assert.rejects(
      apps.create({ name: "webapp", type: "docker" }),
      (e: unknown) =>
        e instanceof PierError &&
        e.code === "INVALID_INPUT" &&
        e.status === 400 &&
        /'webapp\.d+0\..*' is longer than 253 characters \(a DNS name\)/.test(e.message),
    );
    assert.deepEqual(await store.listApps(), []);
  });

  test("a name that fits is created", async () => {
    const app = await apps.create({ name: "web", type: "docker" });
    assert.equal(app.name, "web");
    assert.equal(`${app.name}.${domain}`.length, 251);
  });
});
