// PIER_BACKUP_DIR and PIER_BACKUP_DAYS (add-on backups), as `pier server` reads them at start.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../../../src/server/config.js";
import { ConfigError } from "../../../src/server/config-error.js";

describe("add-on backup settings", () => {
  test("defaults: <data dir>/backups, kept 7 days", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_DATA_DIR: "/srv/pier" });
    assert.equal(c.backupDir, "/srv/pier/backups");
    assert.equal(c.backupDays, 7);
  });
  test("set", () => {
    const c = loadConfig({
      PIER_EXTRA_CA_CERTS: "/dev/null",
      PIER_BACKUP_DIR: "/backups",
      PIER_BACKUP_DAYS: "30",
    });
    assert.deepEqual([c.backupDir, c.backupDays], ["/backups", 30]);
  });
  test("a bad number of days is listed with the other problems", () => {
    try {
      loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_BACKUP_DAYS: "0", PIER_API_PORT: "x" });
      assert.fail("accepted");
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.problems.length, 2);
      assert.match(e.problems.join("\n"), /PIER_BACKUP_DAYS: must be at least 1 day/);
    }
  });
});
