// Issue 15, end to end (docs/adr/0023): apps of Pier-built images (node, phpserver) run as the
// unprivileged user `pier` (uid 10000), may write in /tmp (their home) up to a quarter of the flavor's
// memory and nowhere else, and an app that writes past that bound gets ENOSPC while the engine's disk is
// untouched and the app keeps serving. A Dockerfile app keeps the USER its Dockerfile names.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const DOCKER = "/usr/bin/docker";
const MiB = 2 ** 20;
/** The bound on nano (512 MiB): a quarter of it. */
const NANO_BOUND = 128 * MiB;
/** Writes stop after this many MiB whatever happens (a missing bound must not fill the disk). */
const MAX_MIB = 400;

const NODE_SERVER = `
const fs = require("fs");
const os = require("os");
const attempt = (f) => { try { f(); return "ok"; } catch (e) { return e.code || String(e); } };
// A uid that /etc/passwd does not name (a Dockerfile's USER 4321) has no user name.
const who = () => { try { return os.userInfo().username; } catch { return null; } };
require("http").createServer((q, s) => {
  const url = new URL(q.url, "http://x");
  let body;
  if (url.pathname === "/fill") {
    // 1 MiB at a time into /tmp until the filesystem refuses, at most ${MAX_MIB} MiB.
    const chunk = Buffer.alloc(${MiB}, 7);
    const fd = fs.openSync("/tmp/fill", "w");
    let written = 0, error = null;
    try {
      for (let i = 0; i < ${MAX_MIB}; i++) written += fs.writeSync(fd, chunk);
    } catch (e) { error = e.code; }
    fs.closeSync(fd);
    body = { written, error };
  } else if (url.pathname === "/clean") {
    fs.rmSync("/tmp/fill", { force: true });
    body = { cleaned: true };
  } else {
    body = {
      uid: process.getuid(),
      gid: process.getgid(),
      user: who(),
      home: os.homedir(),
      tmp: attempt(() => fs.writeFileSync("/tmp/note.txt", "hello")),
      home_write: attempt(() => fs.writeFileSync(os.homedir() + "/.cache-note", "hello")),
      app: attempt(() => fs.writeFileSync("/app/note.txt", "hello")),
      root: attempt(() => fs.writeFileSync("/note.txt", "hello")),
    };
  }
  s.setHeader("content-type", "application/json");
  s.end(JSON.stringify(body));
}).listen(8080, "0.0.0.0");
`;

const PHP_INDEX = `<?php
header('Content-Type: application/json');
function attempt(string $file): string {
    if (@file_put_contents($file, 'hello') !== false) return 'ok';
    return error_get_last()['message'] ?? 'failed';
}
if (($_GET['do'] ?? '') === 'fill') {
    $chunk = str_repeat('x', ${MiB});
    $f = fopen('/tmp/fill', 'w');
    $written = 0; $error = null;
    for ($i = 0; $i < ${MAX_MIB}; $i++) {
        $n = @fwrite($f, $chunk);
        if ($n === false || $n < strlen($chunk)) { $written += (int) $n; $error = error_get_last()['message'] ?? 'short write'; break; }
        $written += $n;
    }
    fclose($f);
    echo json_encode(['written' => $written, 'error' => $error]);
    exit;
}
if (($_GET['do'] ?? '') === 'clean') { @unlink('/tmp/fill'); echo json_encode(['cleaned' => true]); exit; }
session_start();
$_SESSION['seen'] = true;
$sid = session_id();
session_write_close();
echo json_encode([
    'uid' => posix_getuid(),
    'user' => posix_getpwuid(posix_geteuid())['name'] ?? null,
    'tmp' => attempt('/tmp/note.txt'),
    'app' => attempt('/app/note.txt'),
    'session_saved' => is_file(session_save_path() . '/sess_' . $sid),
]);
`;

interface NodeBody {
  uid: number;
  gid: number;
  user: string;
  home: string;
  tmp: string;
  home_write: string;
  app: string;
  root: string;
}

describe("instance limits: unprivileged apps, bounded writable space", { timeout: 900_000 }, () => {
  const pier = new Pier();
  const ids: Record<string, string> = {};

  const create = async (type: string, name: string, flavor: string) => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", type, "--flavor", flavor, name]);
    ids[name] = app.id;
    return app.id;
  };
  const deploy = async (name: string, files: Record<string, string>) => {
    const repo = await pier.repo(name, files, ids[name] as string);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
  };
  const json = async <T>(name: string, path = "/") => {
    const r = await pier.get(name, path);
    assert.equal(r.status, 200, `${name} ${path}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as T;
  };
  /** The bytes the instance's writable layer takes on the engine's disk. */
  const writableLayer = async (name: string) => {
    const ps = await run([
      DOCKER,
      "ps",
      "-q",
      "--filter",
      `label=pier.app=${ids[name]}`,
      "--filter",
      "label=pier.instance",
    ]);
    const id = ps.stdout.trim().split("\n")[0] as string;
    assert.ok(id, `an instance of ${name} runs`);
    const size = await run([DOCKER, "inspect", "--size", "-f", "{{.SizeRw}}", id]);
    return Number(size.stdout.trim());
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier.destroy();
  });

  test("a Node.js app runs as pier (uid 10000) and may write only in /tmp, its home", async () => {
    await create("node", "limnode", "nano");
    await pier.cli(["env", "set", "NODE_ENV", "production", "--app", "limnode"]);
    await deploy("limnode", {
      "package.json": `${JSON.stringify({ name: "limnode", version: "1.0.0", main: "server.js" })}\n`,
      "server.js": NODE_SERVER,
      ".gitignore": "/node_modules\n",
    });
    const b = await json<NodeBody>("limnode");
    assert.notEqual(b.uid, 0, "not root");
    assert.deepEqual(
      { uid: b.uid, gid: b.gid, user: b.user, home: b.home },
      { uid: 10000, gid: 10000, user: "pier", home: "/tmp" },
    );
    assert.equal(b.tmp, "ok", "/tmp is writable");
    assert.equal(b.home_write, "ok", "the home (/tmp) is writable");
    assert.equal(b.app, "EROFS", "the app's folder is read-only");
    assert.equal(b.root, "EROFS", "the root filesystem is read-only");
  });

  test("a Node.js app writing past its bound gets ENOSPC, the engine's disk is untouched, the app serves on", async () => {
    const layerBefore = await writableLayer("limnode");
    const fill = await json<{ written: number; error: string | null }>("limnode", "/fill");
    assert.equal(fill.error, "ENOSPC", `writes stop at the bound: ${JSON.stringify(fill)}`);
    // The bound is a quarter of nano's 512 MiB, less what /tmp held already (a few KiB).
    assert.ok(
      fill.written <= NANO_BOUND && fill.written > NANO_BOUND - 2 * MiB,
      `wrote ${fill.written} bytes`,
    );
    const layerAfter = await writableLayer("limnode");
    assert.ok(layerAfter - layerBefore < MiB, `the writable layer grew by ${layerAfter - layerBefore} bytes`);
    // The app still answers, and frees its space.
    assert.equal((await json<NodeBody>("limnode")).uid, 10000);
    await json("limnode", "/clean");
    assert.equal((await json<NodeBody>("limnode")).tmp, "ok");
  });

  test("a PHP app (nginx + php-fpm) runs as pier, keeps its sessions in /tmp, and stops at its bound", async () => {
    await create("phpserver", "limphp", "nano");
    await deploy("limphp", { "index.php": PHP_INDEX });
    const b = await json<{ uid: number; user: string; tmp: string; app: string; session_saved: boolean }>(
      "limphp",
    );
    assert.notEqual(b.uid, 0, "not root");
    assert.equal(b.uid, 10000);
    assert.equal(b.user, "pier");
    assert.equal(b.tmp, "ok", "/tmp is writable");
    assert.match(b.app, /Read-only file system/, "the app's folder is read-only");
    assert.equal(b.session_saved, true, "sessions are saved (in /tmp/php-sessions)");

    const layerBefore = await writableLayer("limphp");
    const fill = await json<{ written: number; error: string | null }>("limphp", "/?do=fill");
    assert.match(fill.error ?? "", /No space left on device/, JSON.stringify(fill));
    assert.ok(
      fill.written <= NANO_BOUND && fill.written > NANO_BOUND - 2 * MiB,
      `wrote ${fill.written} bytes`,
    );
    const layerAfter = await writableLayer("limphp");
    assert.ok(layerAfter - layerBefore < MiB, `the writable layer grew by ${layerAfter - layerBefore} bytes`);
    // nginx and php-fpm serve on, with /tmp full (their sockets and configuration are there).
    assert.equal((await json<{ uid: number }>("limphp")).uid, 10000);
    await json("limphp", "/?do=clean");
    assert.equal((await json<{ tmp: string }>("limphp")).tmp, "ok");
  });

  test("a Dockerfile app keeps the USER its Dockerfile names, and its own filesystem", async () => {
    await create("docker", "limdocker", "nano");
    await deploy("limdocker", {
      Dockerfile: [
        "FROM pier/node:22",
        "WORKDIR /app",
        "COPY server.js .",
        "USER 4321:4321",
        'CMD ["node", "server.js"]',
        "",
      ].join("\n"),
      "server.js": NODE_SERVER,
    });
    const b = await json<NodeBody>("limdocker");
    assert.deepEqual({ uid: b.uid, gid: b.gid }, { uid: 4321, gid: 4321 });
    assert.equal(b.tmp, "ok");
    // Its image's own permissions: /app belongs to root there, and the root filesystem is writable.
    assert.equal(b.app, "EACCES");
  });
});
