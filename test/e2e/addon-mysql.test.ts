// The mysql add-on's own guarantees (MariaDB from Debian; ADR 0015), beyond the cases every provider passes
// (test/e2e/addon-providers.test.ts): the server runs as mysql with memory settings of its flavor, only the
// add-on's user is reachable over the network and it sees its own database only, the password is in no log,
// a backup brings back triggers, views, routines, events and foreign keys, a corrupt dump (garbage, cut
// short, failing half-way) changes nothing, and a restore brings back a database its user dropped.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import { mysqlProvider } from "../../src/adapters/addons/mysql.js";
import type { AddonCredentials } from "../../src/core/addons.js";
import { FLAVOR_MEMORY_MIB } from "../../src/core/model.js";
import { addonTestBed } from "./addon-bed.js";
import { run } from "./harness.js";

const _SOCKET = "/var/run/docker.sock";
const DOCKER = "/usr/bin/docker";
const IMAGE = "pier/addon-mysql:11";
const bed = addonTestBed("mysql");
const { work, engine } = bed;

const SEED = `
CREATE TABLE parent (id INT PRIMARY KEY, name VARCHAR(50)) ENGINE=InnoDB;
CREATE TABLE child (id INT PRIMARY KEY, parent_id INT, note TEXT,
  CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id)) ENGINE=InnoDB;
CREATE TABLE audit (msg VARCHAR(100));
CREATE TRIGGER child_ai AFTER INSERT ON child FOR EACH ROW INSERT INTO audit VALUES (CONCAT('child ', NEW.id));
CREATE VIEW child_names AS SELECT c.id, p.name FROM child c JOIN parent p ON p.id = c.parent_id;
CREATE PROCEDURE count_children(OUT n INT) SELECT COUNT(*) INTO n FROM child;
CREATE FUNCTION twice(x INT) RETURNS INT DETERMINISTIC RETURN 2 * x;
CREATE EVENT tidy ON SCHEDULE EVERY 1 DAY DO DELETE FROM audit WHERE msg = 'never';
INSERT INTO parent VALUES (1, 'café'), (2, 'two');
INSERT INTO child VALUES (10, 1, 'a'), (11, 2, 'b');
`;

/** What a user sees of the database: rows through the view and the trigger, the routines, the events. */
const STATE = `SELECT GROUP_CONCAT(name ORDER BY id) FROM child_names;
SELECT GROUP_CONCAT(msg ORDER BY msg) FROM audit;
CALL count_children(@n); SELECT @n, twice(21);
SELECT GROUP_CONCAT(EVENT_NAME) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE();`;

describe("the mysql add-on", { timeout: 300_000 }, () => {
  const p = mysqlProvider(engine);
  const id = `adn-${randomBytes(6).toString("hex")}`;
  const creds = p.credentials("my-db");
  const host = p.host(id);
  let network = "";

  /** The MariaDB client on the add-on's network, as an app connects (`user` and `password` may differ). */
  const client = (sql: string, c: Partial<AddonCredentials> & { args?: string[] } = {}) =>
    run(
      [
        DOCKER,
        "run",
        "--rm",
        "--network",
        network,
        "--entrypoint",
        "mariadb",
        IMAGE,
        "--no-defaults",
        `--host=${host}`,
        `--user=${c.user ?? creds.user}`,
        `--password=${c.password ?? creds.password}`,
        "--skip-column-names",
        ...(c.args ?? [creds.database]),
        "-e",
        sql,
      ],
      { timeoutMs: 60_000 },
    );
  const ok = async (sql: string) => {
    const r = await client(sql);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  /** The databases the server holds, as its local administrator sees them. */
  const databases = async () =>
    (
      await run([
        DOCKER,
        "exec",
        host,
        "mariadb",
        "--no-defaults",
        "--socket=/tmp/mysqld.sock",
        "--user=mysql",
        "-N",
        "-e",
        "SHOW DATABASES",
      ])
    ).stdout
      .trim()
      .split("\n")
      .sort();

  before(async () => {
    network = await bed.network("mysql");
    await p.provision({
      id,
      name: "my-db",
      flavor: "nano",
      memoryBytes: FLAVOR_MEMORY_MIB.nano * 2 ** 20,
      credentials: creds,
      network,
    });
  });
  after(async () => {
    await p.remove(id).catch(() => undefined);
    await bed.cleanUp();
  });

  it("runs as mysql, with the flavor's memory in its buffer pool, and its password in no log", async () => {
    assert.deepEqual([creds.user, creds.database], ["u_my_db", "my_db"]);
    const top = await run([DOCKER, "top", host, "-o", "pid,uid,comm"]);
    const uid = (await run([DOCKER, "exec", host, "id", "-u", "mysql"])).stdout.trim();
    const server = top.stdout.split("\n").find((l) => l.includes("mariadbd"));
    assert.equal(server?.trim().split(/\s+/)[1], uid, top.stdout);
    // nano: 512 MB, half of it less 64 MB for the pool.
    assert.equal(await ok("SELECT @@innodb_buffer_pool_size DIV 1048576, @@max_connections"), "192\t100");
    const logs = await run([DOCKER, "logs", host]);
    assert.ok(!(logs.stdout + logs.stderr).includes(creds.password), "the password is in no log line");
    assert.match(logs.stderr, /ready for connections/);
  });

  it("lets only its user in over the network, and that user sees its own database only", async () => {
    for (const user of ["root", "mysql"]) {
      const r = await client("SELECT 1", { user, password: "", args: ["--skip-ssl-verify-server-cert"] });
      assert.notEqual(r.code, 0, user);
      assert.match(r.stderr, /Access denied for user/, user);
    }
    assert.deepEqual((await ok("SHOW DATABASES")).split("\n").sort(), ["information_schema", "my_db"]);
    // `_` in a GRANT matches any character: the user's privileges name my_db exactly.
    const other = await client("CREATE DATABASE myxdb");
    assert.match(other.stderr, /Access denied for user/);
    const grants = await client("SELECT 1", { args: ["--skip-ssl-verify-server-cert", "mysql"] });
    assert.match(grants.stderr, /Access denied for user/);
  });

  it("a backup brings back tables, foreign keys, triggers, views, routines and events exactly", async () => {
    await ok(SEED);
    const before = await ok(STATE);
    assert.equal(before, "café,two\nchild 10,child 11\n2\t42\ntidy");
    const file = join(work, "good.sql.gz");
    assert.ok((await p.backup(id, file)) > 0);
    assert.match(gunzipSync(readFileSync(file)).toString(), /-- Dump completed/);
    await ok(
      "INSERT INTO parent VALUES (3, 'three'); INSERT INTO child VALUES (12, 3, 'c'); DROP VIEW child_names; DROP EVENT tidy; DROP PROCEDURE count_children; CREATE TABLE later (x INT);",
    );
    await p.restore(id, file);
    assert.equal(await ok(STATE), before);
    assert.equal(await ok("SHOW TABLES"), "audit\nchild\nchild_names\nparent");
    // The trigger fires, the foreign key holds, on the restored tables.
    await ok("INSERT INTO child VALUES (13, 2, 'd')");
    assert.equal(await ok("SELECT msg FROM audit WHERE msg = 'child 13'"), "child 13");
    const fk = await client("INSERT INTO child VALUES (14, 99, 'no parent')");
    assert.match(fk.stderr, /foreign key constraint fails/);
    // The database before the restore stays aside, out of the user's reach, until the next restore.
    assert.deepEqual(await databases(), [
      "information_schema",
      "my_db",
      "my_db_before_restore",
      "mysql",
      "performance_schema",
      "sys",
    ]);
  });

  it("a corrupt dump (garbage, cut short, failing half-way) changes nothing", async () => {
    const good = join(work, "now.sql.gz");
    await p.backup(id, good);
    const sql = gunzipSync(readFileSync(good)).toString();
    await ok("INSERT INTO parent VALUES (4, 'kept')");
    const state = await ok(`${STATE} SELECT GROUP_CONCAT(id) FROM parent;`);
    const compressed = readFileSync(good);
    const bad: [string, Buffer][] = [
      ["garbage", Buffer.from("this is not a backup\n".repeat(100))],
      ["a gzip stream cut short", compressed.subarray(0, Math.floor(compressed.length / 2))],
      ["a dump cut short", gzipSync(sql.slice(0, Math.floor(sql.length * 0.6)))],
      // Valid to its last line, but a statement in the middle fails: nothing of what loaded before it stays.
      [
        "a dump failing half-way",
        gzipSync(sql.replace("INSERT INTO `child` VALUES", "INSERT INTO `nope` VALUES")),
      ],
    ];
    for (const [what, bytes] of bad) {
      const file = join(work, "bad.sql.gz");
      writeFileSync(file, bytes);
      await assert.rejects(
        p.restore(id, file),
        /could not be restored; the mysql add-on's data is as it was/,
        what,
      );
      assert.equal(await ok(`${STATE} SELECT GROUP_CONCAT(id) FROM parent;`), state, what);
      assert.ok(!(await databases()).includes("my_db_restore"), `${what}: no staging database left`);
    }
    assert.equal((await p.status(id)).state, "running");
  });

  it("a database its user dropped is still running, and a restore brings it back", async () => {
    const file = join(work, "before-drop.sql.gz");
    await p.backup(id, file);
    const state = await ok(STATE);
    const drop = await client("DROP DATABASE my_db", { args: [] });
    assert.equal(drop.code, 0, drop.stderr);
    assert.equal((await p.status(id)).state, "running");
    await p.restore(id, file);
    assert.equal(await ok(STATE), state);
  });
});
