// The fs add-on end to end (issue 17, item 4): a file-system bucket mounted where the app's CC_FS_BUCKET says,
// at a path its commit lacks (under the read-only root of Pier-built instances). A Node.js app of two
// instances writes a file over HTTP and both serve it; a redeploy, a restart, a rollback and a restart of
// pier server keep it; backup, write, restore brings the old files back; a corrupt backup changes nothing; a
// PHP app mounts the same bucket (its /app read-only too); a Dockerfile app is refused; a bucket that is not
// linked is refused at `env set` and at deploy (nothing changed, the log naming it); the bucket goes with the
// add-on only, never from under running instances.
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const PKG = `${JSON.stringify({ name: "files", version: "1.0.0", scripts: { start: "node server.js" } }, null, 2)}\n`;

// Writes and reads files of the bucket mounted at /app/uploads (not in the commit); says which instance answers.
const SERVER = `
const http = require("http");
const fs = require("fs");
const path = require("path");
const dir = path.join(__dirname, "uploads");
http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  const name = path.basename(u.searchParams.get("name") || "a.txt");
  const who = process.env.INSTANCE_NUMBER + ":";
  try {
    if (u.pathname === "/write") {
      fs.writeFileSync(path.join(dir, name), u.searchParams.get("v") || "");
      return res.end(who + "ok");
    }
    if (u.pathname === "/read") {
      const f = path.join(dir, name);
      return res.end(who + (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "(none)"));
    }
    res.end(who + "v" + (process.env.VERSION || "1"));
  } catch (e) {
    res.end(who + "ERR " + e.code);
  }
}).listen(8080, "0.0.0.0");
`;

const FILES = { "package.json": PKG, "server.js": SERVER, ".gitignore": "/node_modules\n" };

// The same bucket in a PHP app, at a path its commit lacks under its read-only /app.
const PHP = `<?php
$dir = __DIR__ . '/wp-content/uploads';
$f = $dir . '/' . basename($_GET['name'] ?? 'a.txt');
if (isset($_GET['v'])) { file_put_contents($f, $_GET['v']); }
echo is_file($f) ? file_get_contents($f) : '(none)';
`;

describe("the fs add-on", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let bucket = "";
  let appId = "";
  let dir = "";
  const ok = async (args: string[]) => {
    const r = await pier.cli(args);
    assert.equal(r.code, 0, `pier ${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  /** What the app answers at `path`, and which instance answered (`0:...`). */
  const get = async (path: string, app = "files") => {
    const r = await pier.get(app, path);
    assert.equal(r.status, 200, `${app}${path}: ${r.status} ${r.body.slice(0, 200)}`);
    return r.body;
  };
  /** The file as each of the app's instances reads it: asked until both answered (the edge balances). */
  const readEverywhere = async (name: string): Promise<Record<string, string>> => {
    const seen: Record<string, string> = {};
    for (let i = 0; i < 40 && Object.keys(seen).length < 2; i++) {
      const [who, ...rest] = (await get(`/read?name=${name}`)).split(":");
      seen[who as string] = rest.join(":");
    }
    return seen;
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier.destroy();
  });

  test("a bucket linked to a two-instance app, mounted at a path its commit lacks: both instances share its files", async () => {
    appId = (await pier.cliJson<{ id: string }>(["create", "--type", "node", "--instances", "2", "files"]))
      .id;
    const created = await pier.cliJson<{ kind: string; apps: string[] }>([
      ...["addon", "create", "fs", "uploads", "--link", "files", "--flavor", "pico"],
    ]);
    assert.deepEqual([created.kind, created.apps], ["fs", ["files"]]);
    const vars = await pier.cliJson<Record<string, string>>(["addon", "env", "uploads"]);
    bucket = vars.BUCKET_HOST ?? "";
    assert.match(bucket, /^pier-addon-adn-[0-9a-f]+$/);
    await ok(["env", "set", "CC_FS_BUCKET", `/uploads:${bucket}`, "--app", "files"]);
    dir = await pier.repo("files", FILES, appId);
    const push = await pier.push(dir);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Linked variables from add-on uploads: BUCKET_HOST/);
    assert.ok(push.stderr.includes(`The fs add-on uploads (bucket ${bucket}) is mounted at /app/uploads.`));
    assert.match(await get("/write?name=a.txt&v=one"), /^[01]:ok$/);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
  });

  test("a redeploy, a restart, a rollback and a restart of pier server keep the files", async () => {
    await pier.commit(dir, { "server.js": SERVER.replace('|| "1"', '|| "2"') }, "v2");
    const push = await pier.push(dir);
    assert.equal(push.code, 0, push.stderr);
    assert.match(await get("/"), /:v2$/);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
    await ok(["restart", "--app", "files"]);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
    await ok(["rollback", "v1", "--app", "files"]);
    assert.match(await get("/"), /:v1$/);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
    await pier.restartServer();
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
  });

  test("a backup restored brings back exactly its files; a corrupt one is refused and changes nothing", async () => {
    const b = await pier.cliJson<{ id: string; file: string; bytes: number }>([
      ...["addon", "backup", "create", "uploads"],
    ]);
    assert.match(b.file, /\.tar\.gz$/);
    assert.ok(b.bytes > 0);
    const list = await pier.cliJson<{ id: string }[]>(["addon", "backup", "list", "uploads"]);
    assert.ok(list.some((x) => x.id === b.id));
    await get("/write?name=a.txt&v=two");
    await get("/write?name=b.txt&v=new");
    await ok(["addon", "backup", "restore", "uploads", b.id, "--yes"]);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "one", "1": "one" });
    assert.deepEqual(await readEverywhere("b.txt"), { "0": "(none)", "1": "(none)" });

    // A backup whose file was damaged on disk (cut short, then garbage): refused, the files as they were.
    const bad = await pier.cliJson<{ id: string; file: string }>(["addon", "backup", "create", "uploads"]);
    const folder = join(pier.dataDir, "backups");
    const where = readdirSync(folder).find((d) => readdirSync(join(folder, d)).includes(bad.file));
    assert.ok(where, "the backup's file is in the add-on's backup folder");
    await get("/write?name=a.txt&v=three");
    writeFileSync(join(folder, where, bad.file), Buffer.from("\x1f\x8bnot really a gzip'ed tar".repeat(50)));
    const refused = await pier.cli(["addon", "backup", "restore", "uploads", bad.id, "--yes"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /could not be restored; the fs add-on's data is as it was/);
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "three", "1": "three" });
  });

  test("a PHP app mounts the same bucket under its read-only /app, at a path its commit lacks", async () => {
    const php = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "blog"]);
    await ok(["service", "link-addon", "uploads", "--app", "blog"]);
    await ok(["env", "set", "CC_FS_BUCKET", `/wp-content/uploads:${bucket}`, "--app", "blog"]);
    const push = await pier.push(await pier.repo("blog", { "index.php": PHP }, php.id));
    assert.equal(push.code, 0, push.stderr);
    assert.equal(await get("/?name=a.txt", "blog"), "three");
    assert.equal(await get("/?name=php.txt&v=from-php", "blog"), "from-php");
    assert.deepEqual(await readEverywhere("php.txt"), { "0": "from-php", "1": "from-php" });
  });

  test("a Dockerfile app gets no bucket: linking is refused, and so is CC_FS_BUCKET", async () => {
    await ok(["create", "--type", "docker", "dock"]);
    const link = await pier.cli(["service", "link-addon", "uploads", "--app", "dock"]);
    assert.notEqual(link.code, 0);
    assert.match(link.stderr, /dock is a docker app, and the docker runtime has no file-system buckets/);
    const created = await pier.cli(["addon", "create", "fs", "more", "--link", "dock"]);
    assert.notEqual(created.code, 0);
    assert.match(created.stderr, /docker runtime has no file-system buckets/);
    assert.notEqual((await pier.cli(["addon", "status", "more"])).code, 0, "nothing was made");
    const env = await pier.cli(["env", "set", "CC_FS_BUCKET", `/up:${bucket}`, "--app", "dock"]);
    assert.notEqual(env.code, 0);
    assert.match(env.stderr, /CC_FS_BUCKET: the docker runtime has no file-system buckets/);
  });

  test("a bucket not linked is refused: at env set (another app's too), and at deploy once unlinked, nothing changed", async () => {
    const bad = [
      [
        "/up:pier-addon-adn-0000",
        /names the bucket 'pier-addon-adn-0000', which is not an fs add-on linked to files/,
      ],
      ["/../etc:uploads", /CC_FS_BUCKET_1: the path '\/..\/etc' must stay inside the app's folder/],
      ["uploads", /CC_FS_BUCKET_1 must be <path>:<bucket>/],
    ] as const;
    for (const [value, message] of bad) {
      const r = await pier.cli(["env", "set", "CC_FS_BUCKET_1", value, "--app", "files"]);
      assert.notEqual(r.code, 0, value);
      assert.match(r.stderr, message);
    }
    const env = await pier.cliJson<Record<string, string>>(["env", "--app", "files"]);
    assert.equal(env.CC_FS_BUCKET_1, undefined, "nothing was changed");
    // An app that is not linked never reaches the bucket, even by its name.
    await ok(["create", "--type", "node", "other"]);
    const other = await pier.cli(["env", "set", "CC_FS_BUCKET", `/x:${bucket}`, "--app", "other"]);
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /which is not an fs add-on linked to other/);

    // Unlinked after the variable was set: the next deploy fails before anything changes, naming it.
    await ok(["service", "unlink-addon", "uploads", "--app", "files"]);
    const restart = await pier.cli(["restart", "--app", "files"]);
    assert.notEqual(restart.code, 0);
    assert.ok(
      `${restart.stdout}${restart.stderr}`.includes(
        `CC_FS_BUCKET names the bucket '${bucket}', which is not an fs add-on linked to files.`,
      ),
      restart.stderr,
    );
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "three", "1": "three" });
    await ok(["service", "link-addon", "uploads", "--app", "files"]);
  });

  test("the bucket goes only with the add-on, and not while running instances mount it", async () => {
    const refused = await pier.cli(["addon", "delete", "uploads", "--yes", "--force"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, new RegExp(`The bucket ${bucket} is mounted by running instances \\(pier-`));
    assert.deepEqual(await readEverywhere("a.txt"), { "0": "three", "1": "three" });
    assert.equal((await pier.cliJson<{ state: string }>(["addon", "status", "uploads"])).state, "running");
    for (const app of ["files", "blog"]) {
      await ok(["env", "rm", "CC_FS_BUCKET", "--app", app]);
      await ok(["restart", "--app", app]);
    }
    await ok(["addon", "delete", "uploads", "--yes", "--force"]);
    const volume = await run(["/usr/bin/docker", "volume", "inspect", `${bucket}-data`]);
    assert.notEqual(volume.code, 0, "the bucket's volume is gone with the add-on");
  });
});
