// The PHP application-server runtime (`--type phpserver`) end to end: real pushes built in pier/php:8.4,
// served by phpserver (nginx + php-fpm) through the edge; each bad input fails its deploy with a message
// that names it while the previous release keeps serving.
import assert from "node:assert/strict";
import { symlinkSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { httpRequest, Pier, run } from "./harness.js";
import { COMPOSER_APP, composerLock, INDEX } from "./php-fixtures.js";

const DOCKER = "/usr/bin/docker";

/** The extensions of the contract's section 2.5 that Debian does not package (docs/guide.md says why). */
const NOT_PACKAGED = ["parallel", "protobuf", "xlswriter"];
const CONTRACT_EXTENSIONS =
  "apcu bcmath bz2 calendar ctype curl dba dom exif fileinfo filter ftp gd gmp gettext iconv igbinary imagick intl ldap mbregex mbstring mysqli mysqlnd opcache openssl parallel pcntl pdo pdo_mysql pdo_pgsql pdo_sqlite pgsql phar posix protobuf readline redis session shmop simplexml soap sockets sodium sqlite3 ssh2 sysvmsg sysvsem sysvshm tidy tokenizer xlswriter xml xmlreader xmlwriter zip zlib yaml zstd".split(
    " ",
  );

function get(
  port: number,
  host: string,
  path = "/",
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((res, rej) => {
    const req = request(
      { host: "127.0.0.1", port, path, headers: { host, ...headers }, agent: false },
      (r) => {
        let body = "";
        r.on("data", (c: Buffer) => {
          body += c.toString("latin1");
        });
        r.on("end", () => res({ status: r.statusCode ?? 0, body, headers: r.headers }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", rej);
    req.end();
  });
}

const WORKER = `<?php
// Loaded once per worker: the bootstrap runs once, the handler per request.
$booted = microtime(true);
$bootWorker = $_SERVER['FRANKENPHP_WORKER'] ?? null;
$handler = function () use ($booted, $bootWorker) {
    static $served = 0;
    $served++;
    if (isset($_GET['stream'])) {
        header('Content-Type: text/plain');
        echo "first\n";
        flush();
        usleep(1000000);
        echo "second\n";
        return;
    }
    if (isset($_GET['login'])) {
        session_start();
        $_SESSION['user'] = $_GET['login'];
    } elseif (isset($_COOKIE[session_name()])) {
        session_start();
    }
    if (isset($_GET['created'])) http_response_code(201);
    setcookie('seen', 'yes');
    header('Content-Type: application/json');
    echo json_encode([
        'served' => $served,
        'booted' => $booted,
        'get' => $_GET,
        'post' => $_POST,
        'input' => file_get_contents('php://input'),
        'user' => $_SESSION['user'] ?? null,
        'method' => $_SERVER['REQUEST_METHOD'],
        'memory_limit' => ini_get('memory_limit'),
        'opcache' => is_array(opcache_get_status(false)),
        'frankenphp_worker' => $bootWorker,
        'frankenphp_worker_request' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
    ]);
};
while (frankenphp_handle_request($handler)) {
    gc_collect_cycles();
}
`;

interface WorkerBody {
  served: number;
  booted: number;
  get: Record<string, string>;
  post: Record<string, string>;
  input: string;
  user: string | null;
  method: string;
  memory_limit: string;
  opcache: boolean;
  frankenphp_worker: string | null;
  frankenphp_worker_request: string | null;
}

interface Body {
  php: string;
  greet: string;
  dev: boolean;
  memory_limit: string;
  extensions: string[];
  instance_type: string;
  forwarded_proto: string;
  rev: number;
}

describe("PHP runtime (phpserver)", { timeout: 600_000 }, () => {
  const pier = new Pier();
  let repo = "";
  let appId = "";
  const env = async (app: string, ...pairs: string[]) => {
    for (let i = 0; i < pairs.length; i += 2) {
      const value = pairs[i + 1]!;
      // A value that starts with '-' goes after '--' (pier env set --help).
      const r = await pier.cli(
        value.startsWith("-")
          ? ["env", "set", "--app", app, pairs[i]!, "--", value]
          : ["env", "set", pairs[i]!, value, "--app", app],
      );
      assert.equal(r.code, 0, r.stderr);
    }
  };
  const unset = async (app: string, ...names: string[]) => {
    const r = await pier.cli(["env", "rm", ...names, "--app", app]);
    assert.equal(r.code, 0, r.stderr);
  };
  const body = async () => JSON.parse((await pier.get("phpapp")).body) as Body;
  /** A bad input: the push fails with a message matching `message`, and release `rev` keeps serving. */
  const refused = async (files: Record<string, string>, message: RegExp, what: string) => {
    await pier.commit(repo, files, what);
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0, `${what}: the deploy must fail`);
    assert.match(push.stderr, message, what);
    assert.equal((await body()).greet, "hello pier", `${what}: the previous release keeps serving`);
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string; flavor: string }>([
      "create",
      "--type",
      "phpserver",
      "phpapp",
    ]);
    assert.equal(app.flavor, "XS", "XS is the default flavor of phpserver apps");
    appId = app.id;
    repo = await pier.repo("phpapp", COMPOSER_APP, app.id);
    await composerLock(repo);
    await pier.commit(repo, {}, "composer.lock");
  });
  after(async () => {
    await pier.destroy();
  });

  test("a composer app is built and served: webroot, php.ini, no dev dependencies, composer cache", async () => {
    await env("phpapp", "CC_WEBROOT", "/public");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(
      push.stderr,
      /Installing dependencies: composer install --no-interaction --no-progress --no-scripts --no-dev/,
    );
    assert.match(push.stderr, /Start command: phpserver php-server --listen 0\.0\.0\.0:8080/);
    const b = await body();
    assert.match(b.php, /^8\.4\./);
    assert.equal(b.greet, "hello pier", "composer's autoloader and the path package");
    assert.equal(b.dev, false, "--no-dev by default");
    assert.equal(b.memory_limit, "77M", "php.ini at the root applies to web requests");
    assert.equal(b.instance_type, "production");
    assert.equal(b.forwarded_proto, "http", "the edge's X-Forwarded-Proto reaches PHP");
    assert.equal((await pier.get("phpapp", "/robots.txt")).body, "User-agent: *\n", "static files");
    const volumes = await run([DOCKER, "volume", "ls", "-q", "--filter", `label=pier.app=${appId}`]);
    assert.notEqual(volumes.stdout.trim(), "", "the app has its cache volume (composer's cache)");
  });

  test("php -m in an instance has every extension of the contract that Debian packages", async () => {
    const ps = await run([
      DOCKER,
      "ps",
      "-q",
      "--filter",
      `label=pier.app=${appId}`,
      "--filter",
      "label=pier.instance",
    ]);
    const id = ps.stdout.trim().split("\n")[0]!;
    assert.ok(id, "an instance runs");
    // php-fpm's children follow the flavor's memory (XS: 1 GiB, 48 MiB each), nginx's workers its CPUs
    // (XS: 1), on cgroup v1 engines as on v2.
    const conf = await run([
      DOCKER,
      "exec",
      id,
      "grep",
      "-h",
      "-E",
      "^(pm.max_children|worker_processes)",
      "/tmp/phpserver/php-fpm.conf",
      "/tmp/phpserver/nginx.conf",
    ]);
    assert.deepEqual(conf.stdout.trim().split("\n"), ["pm.max_children = 21", "worker_processes 1;"]);
    const m = await run([DOCKER, "exec", id, "php", "-m"]);
    assert.equal(m.code, 0, m.stderr);
    const loaded = new Set(m.stdout.split("\n").map((l) => l.trim().toLowerCase()));
    if (loaded.has("zend opcache")) loaded.add("opcache");
    // mbregex is part of mbstring (mb_ereg), not a module of its own.
    const check = await run([
      DOCKER,
      "exec",
      id,
      "php",
      "-r",
      "echo function_exists('mb_ereg') ? 'yes' : 'no';",
    ]);
    if (check.stdout === "yes") loaded.add("mbregex");
    const missing = CONTRACT_EXTENSIONS.filter((e) => !loaded.has(e));
    assert.deepEqual(missing, NOT_PACKAGED, "only the extensions Debian does not package are missing (CLI)");
    const web = new Set((await body()).extensions);
    const webMissing = CONTRACT_EXTENSIONS.filter(
      (e) => !web.has(e) && !(e === "opcache" && web.has("zend opcache")) && e !== "mbregex",
    );
    // pcntl is for the CLI only: Debian builds php-fpm without it, as PHP advises for web servers.
    assert.deepEqual(webMissing, [...NOT_PACKAGED, "pcntl"].sort(), "the same through php-fpm, less pcntl");
  });

  test("a redeploy with an unchanged composer.lock does not reinstall; CC_PHP_DEV_DEPENDENCIES=install does", async () => {
    await pier.commit(repo, { "public/index.php": INDEX.replace("'rev' => 1", "'rev' => 2") }, "rev 2");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Dependencies unchanged .*vendor\/ reused from the current release/);
    assert.doesNotMatch(push.stderr, /Installing acme\/greeter/);
    const b = await body();
    assert.equal(b.rev, 2);
    assert.equal(b.greet, "hello pier");
    await env("phpapp", "CC_PHP_DEV_DEPENDENCIES", "install");
    await pier.commit(repo, {}, "dev");
    const dev = await pier.push(repo);
    assert.equal(dev.code, 0, dev.stderr);
    assert.match(dev.stderr, /composer install --no-interaction --no-progress --no-scripts\s*\n/);
    assert.equal((await body()).dev, true);
    await unset("phpapp", "CC_PHP_DEV_DEPENDENCIES");
    const rollback = await pier.cli(["rollback", "v1", "--app", "phpapp"]);
    assert.equal(rollback.code, 0, rollback.stderr);
    const v1 = await body();
    assert.equal(v1.rev, 1, "pier rollback v1 serves the first release's image");
    assert.equal(v1.dev, false);
  });

  test("bad inputs fail the deploy naming the problem; the previous release keeps serving", async () => {
    await run(["git", "-C", repo, "rm", "-q", "public/index.php"]);
    await refused({}, /No index\.php or index\.html in public\//, "no index file");
    await pier.commit(repo, { "public/index.php": INDEX }, "index back");
    await refused({ "composer.json": "{ nope" }, /composer\.json is not valid JSON/, "invalid composer.json");
    await refused(
      {
        "composer.json": COMPOSER_APP["composer.json"]!.replace(
          '"acme/greeter": "*"',
          '"acme/missing": "^1"',
        ),
      },
      /Installing dependencies: composer install .* failed: .*acme\/missing/,
      "a failing composer install shows its error",
    );
    await pier.commit(repo, { "composer.json": COMPOSER_APP["composer.json"]! }, "composer back");
    await refused(
      { "php.ini": "memory_limit = 77M\n[broken\nx = (\n" },
      /php\.ini is malformed/,
      "malformed php.ini",
    );
    await pier.commit(repo, { "php.ini": COMPOSER_APP["php.ini"]! }, "php.ini back");

    await env("phpapp", "CC_WEBROOT", "../etc");
    await refused({}, /CC_WEBROOT="\.\.\/etc" leaves the project/, "CC_WEBROOT outside");
    symlinkSync("/etc", join(repo, "escape"));
    await env("phpapp", "CC_WEBROOT", "/escape");
    await refused(
      {},
      /CC_WEBROOT="\/escape" leaves the project through a symlink/,
      "CC_WEBROOT through a symlink",
    );
    await env("phpapp", "CC_WEBROOT", "/public", "CC_PHPSERVER_WORKER", "../worker.php");
    await refused({}, /CC_PHPSERVER_WORKER="\.\.\/worker\.php" leaves the project/, "worker path outside");
    await unset("phpapp", "CC_PHPSERVER_WORKER");

    await env("phpapp", "CC_RUN_COMMAND", "php -S 0.0.0.0:8080");
    await refused(
      {},
      /CC_RUN_COMMAND must start with `phpserver php-server --listen 0\.0\.0\.0:8080` \(flags such as --debug, --mercure, --no-compress may follow\) or `phpserver run --config <path_to_config_file>`/,
      "CC_RUN_COMMAND breaking the rule",
    );
    await env("phpapp", "CC_RUN_COMMAND", "phpserver php-server --listen 0.0.0.0:8080 --mercure");
    await refused({}, /--mercure: this Pier's phpserver serves no Mercure hub/, "--mercure");
    await env("phpapp", "CC_RUN_COMMAND", "phpserver run --config Caddyfile");
    await refused(
      { Caddyfile: ":8080 {\n\troot * public\n\tphp_server\n\treverse_proxy localhost:9000\n}\n" },
      /Caddyfile:4: directive 'reverse_proxy' is not supported/,
      "a Caddyfile outside the subset, with its line",
    );
    await unset("phpapp", "CC_RUN_COMMAND");
    await run(["git", "-C", repo, "rm", "-q", "escape", "Caddyfile"]);
    await pier.commit(repo, {}, "clean");
  });

  test("CC_RUN_COMMAND: --no-compress turns compression off; run --config serves a Caddyfile", async () => {
    const gz = { "accept-encoding": "gzip" };
    const big = { "public/big.txt": "pier ".repeat(2000) };
    await pier.commit(repo, big, "big");
    assert.equal((await pier.push(repo)).code, 0);
    let r = await get(pier.httpPort, "phpapp.localhost", "/big.txt", gz);
    assert.equal(r.headers["content-encoding"], "gzip", "compression by default");
    await env("phpapp", "CC_RUN_COMMAND", "phpserver php-server --listen 0.0.0.0:8080 --no-compress --debug");
    await pier.commit(repo, {}, "no compress");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    r = await get(pier.httpPort, "phpapp.localhost", "/big.txt", gz);
    assert.equal(r.headers["content-encoding"], undefined, "--no-compress");
    await env("phpapp", "CC_RUN_COMMAND", "phpserver run --config Caddyfile");
    await pier.commit(
      repo,
      {
        Caddyfile:
          "{\n\tfrankenphp\n\tadmin off\n}\n\n:8080 {\n\troot * public\n\tencode zstd gzip\n\theader X-Served-By phpserver\n\tphp_server\n}\n",
      },
      "caddyfile",
    );
    const caddy = await pier.push(repo);
    assert.equal(caddy.code, 0, caddy.stderr);
    r = await get(pier.httpPort, "phpapp.localhost", "/", gz);
    assert.equal(r.headers["x-served-by"], "phpserver");
    await unset("phpapp", "CC_RUN_COMMAND");
  });

  test("hooks and background workers work as for Node.js apps; CC_PHPSERVER_PORT moves the port", async () => {
    await env(
      "phpapp",
      "CC_PRE_BUILD_HOOK",
      "echo pre-build > public/pre-build.txt",
      "CC_POST_BUILD_HOOK",
      "test -d vendor && echo post-build > public/post-build.txt",
      // At run time the app's folder is read-only and /tmp is where an app writes (docs/adr/0023).
      "CC_PRE_RUN_HOOK",
      "echo pre-run > /tmp/pre-run.txt",
      "CC_WORKER_COMMAND",
      'phpserver php-cli -r \'file_put_contents("/tmp/worker.txt", ini_get("memory_limit")); sleep(600);\'',
      "CC_PHPSERVER_PORT",
      "9090",
    );
    await pier.commit(
      repo,
      { "public/tmp.php": "<?php readfile('/tmp/' . basename($_GET['f']));\n" },
      "hooks",
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    for (const [f, text] of [
      ["pre-build.txt", "pre-build"],
      ["post-build.txt", "post-build"],
      ["tmp.php?f=pre-run.txt", "pre-run"],
    ] as const) {
      assert.equal((await pier.get("phpapp", `/${f}`)).body.trim(), text, f);
    }
    let worker = "";
    for (let i = 0; i < 50 && worker !== "77M"; i++) {
      worker = (await pier.get("phpapp", "/tmp.php?f=worker.txt")).body.trim();
      if (worker !== "77M") await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(worker, "77M", "the worker ran, with php.ini applied");
    await unset(
      "phpapp",
      "CC_PRE_BUILD_HOOK",
      "CC_POST_BUILD_HOOK",
      "CC_PRE_RUN_HOOK",
      "CC_WORKER_COMMAND",
      "CC_PHPSERVER_PORT",
    );
  });

  test("composer.phar at the root is used with CC_PHP_COMPOSER_FLAGS; --access-log logs each request", async () => {
    // A stand-in for composer.phar (php runs it as any script): it records how it was called, then runs
    // the image's composer with the same arguments.
    const phar =
      "<?php\n$args = array_slice($argv, 1);\nfile_put_contents('public/composer-phar.txt', implode(' ', $args));\npassthru('composer ' . implode(' ', array_map('escapeshellarg', $args)), $code);\nexit($code);\n";
    await env("phpapp", "CC_PHP_COMPOSER_FLAGS", "--no-interaction --no-scripts --optimize-autoloader");
    await pier.commit(repo, { "composer.phar": phar }, "composer.phar");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Composer: composer\.phar of the project\./);
    assert.match(
      push.stderr,
      /Composer flags: --no-interaction --no-scripts --optimize-autoloader \(CC_PHP_COMPOSER_FLAGS\)/,
    );
    assert.match(
      push.stderr,
      /Installing dependencies: php composer\.phar install --no-interaction --no-scripts --optimize-autoloader/,
    );
    assert.equal(
      (await pier.get("phpapp", "/composer-phar.txt")).body,
      "install --no-interaction --no-scripts --optimize-autoloader",
      "the project's composer.phar ran the install, with CC_PHP_COMPOSER_FLAGS",
    );
    assert.equal((await body()).dev, true, "flags without --no-dev install the development dependencies");

    const marker = `/robots.txt?access-${Date.now()}`;
    let lastLogs = "";
    const logged = async () => {
      const r = await pier.cli(["logs", "--app", "phpapp"]);
      assert.equal(r.code, 0, r.stderr);
      lastLogs = r.stdout;
      return r.stdout.includes(`"GET ${marker} HTTP/1.1" 200`);
    };
    assert.equal((await pier.get("phpapp", marker)).status, 200);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(await logged(), false, "no access log by default");
    await env("phpapp", "CC_RUN_COMMAND", "phpserver php-server --listen 0.0.0.0:8080 --access-log");
    await pier.commit(repo, {}, "access log");
    const withLog = await pier.push(repo);
    assert.equal(withLog.code, 0, withLog.stderr);
    assert.equal((await pier.get("phpapp", marker)).status, 200);
    let found = false;
    for (let i = 0; i < 25 && !found; i++) {
      found = await logged();
      if (!found) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(found, `--access-log: the request's line is in pier logs:\n${lastLogs.slice(-3000)}`);
    await unset("phpapp", "CC_RUN_COMMAND", "CC_PHP_COMPOSER_FLAGS");
    await run(["git", "-C", repo, "rm", "-q", "composer.phar"]);
    await pier.commit(repo, {}, "no composer.phar");
  });

  test("pico is refused at create and at scale", async () => {
    const c = await pier.cli(["create", "--type", "phpserver", "--flavor", "pico", "phppico"]);
    assert.notEqual(c.code, 0);
    assert.match(c.stderr, /phpserver app cannot run on pico/);
    const s = await pier.cli(["scale", "--flavor", "pico", "--app", "phpapp"]);
    assert.notEqual(s.code, 0);
    assert.match(s.stderr, /phpserver app cannot run on pico/);
  });

  test("a task app runs its script once with php.ini; its exit code decides the deployment", async () => {
    const app = await pier.cliJson<{ id: string }>([
      "create",
      "--type",
      "phpserver",
      "--task",
      "phpserver php-cli task.php",
      "phptask",
    ]);
    const task = await pier.repo(
      "phptask",
      {
        "php.ini": "memory_limit = 66M\n",
        "task.php": "<?php echo 'task ran with memory_limit=', ini_get('memory_limit'), \"\\n\";\n",
      },
      app.id,
    );
    const ok = await pier.push(task);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /task ran with memory_limit=66M/);
    assert.match(ok.stderr, /Task finished with exit code 0/);
    await pier.commit(task, { "task.php": '<?php echo "failing\\n"; exit(3);\n' }, "fail");
    const bad = await pier.push(task);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /The task exited with code 3/);
  });

  test("worker mode: the script stays loaded, each request has its own superglobals and session", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpworker"]);
    await env("phpworker", "CC_PHPSERVER_WORKER", "/worker.php", "CC_PHPSERVER_WORKER_NUM", "1");
    const wrepo = await pier.repo(
      "phpworker",
      { "index.php": "<?php echo 'classic';\n", "worker.php": WORKER, "php.ini": "memory_limit = 99M\n" },
      app.id,
    );
    const push = await pier.push(wrepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Worker mode: worker\.php is loaded once per worker/);
    const host = "phpworker.localhost";
    const call = async (method: string, path: string, headers: Record<string, string> = {}, body = "") => {
      const r = await httpRequest(pier.httpPort, host, method, path, headers, body);
      return { ...r, json: JSON.parse(r.body) as WorkerBody };
    };
    const a = await call("GET", "/?x=1");
    const b = await call("GET", "/anything?y=2");
    assert.equal(b.json.served, a.json.served + 1, "a static counter grows: the script is not run again");
    assert.equal(b.json.booted, a.json.booted, "the bootstrap ran once");
    assert.deepEqual(b.json.get, { y: "2" }, "$_GET is the request's own");
    assert.equal(b.json.memory_limit, "99M", "php.ini applies to workers");
    assert.equal(b.json.opcache, true, "OPcache caches the scripts in workers, as in php-fpm");
    assert.equal(
      b.json.frankenphp_worker,
      "1",
      "$_SERVER['FRANKENPHP_WORKER'] at boot, as Symfony Runtime expects",
    );
    assert.equal(b.json.frankenphp_worker_request, null, "and not during requests, as FrankenPHP");
    const post = await call(
      "POST",
      "/form",
      { "content-type": "application/x-www-form-urlencoded" },
      "name=pier&lang=php",
    );
    assert.deepEqual(post.json.post, { name: "pier", lang: "php" });
    assert.equal(post.json.input, "name=pier&lang=php", "php://input");
    const created = await call("GET", "/?created=1");
    assert.equal(created.status, 201, "http_response_code()");
    assert.match(String(created.headers["set-cookie"]), /seen=yes/, "setcookie()");
    // Sessions: alice logs in; a request without her cookie, served by the same worker, is anonymous.
    const login = await call("GET", "/?login=alice");
    const cookie = String(login.headers["set-cookie"]).match(/PHPSESSID=[^;]+/)?.[0];
    assert.ok(cookie, "the session cookie is set");
    assert.equal((await call("GET", "/")).json.user, null, "no session leaks into another client's request");
    assert.equal((await call("GET", "/", { cookie })).json.user, "alice", "her session with her cookie");
    assert.equal((await call("GET", "/")).json.user, null);

    // A response streams as the script flushes: the first part arrives while the script still runs.
    const chunks = await new Promise<{ at: number; text: string }[]>((res, rej) => {
      const t0 = Date.now();
      const got: { at: number; text: string }[] = [];
      const req = request(
        { host: "127.0.0.1", port: pier.httpPort, path: "/?stream=1", headers: { host }, agent: false },
        (r) => {
          r.on("data", (c: Buffer) => got.push({ at: Date.now() - t0, text: c.toString() }));
          r.on("end", () => res(got));
        },
      );
      req.on("error", rej);
      req.end();
    });
    assert.equal(chunks.map((c) => c.text).join(""), "first\nsecond\n");
    assert.equal(chunks[0]?.text, "first\n", "flush() sends what the script wrote so far");
    assert.ok(
      (chunks.at(-1)?.at ?? 0) - (chunks[0]?.at ?? 0) >= 400,
      `the first part came before the script ended: ${JSON.stringify(chunks)}`,
    );

    await env("phpworker", "CC_PHPSERVER_WORKER_MAX_REQUESTS", "2");
    await pier.commit(wrepo, {}, "max requests");
    assert.equal((await pier.push(wrepo)).code, 0);
    const served = [];
    for (let i = 0; i < 5; i++) served.push((await call("GET", "/")).json.served);
    // The health check was the new worker's first request.
    assert.deepEqual(served, [2, 1, 2, 1, 2], "a worker restarts after CC_PHPSERVER_WORKER_MAX_REQUESTS");

    await env("phpworker", "PHPSERVER_WORKER_READY_TIMEOUT", "3");
    await pier.commit(wrepo, { "worker.php": "<?php echo 'booting'; exit(4);\n" }, "exits");
    const exits = await pier.push(wrepo);
    assert.notEqual(exits.code, 0);
    assert.match(exits.stderr, /exited 6 times in a row without handling a request/);
    // The instance gives up, so the gate fails at once (not at the listen timeout), naming the exit.
    assert.match(exits.stderr, /Instance 0 exited with code \d+ before it listened on port 8080/);
    const still = await call("GET", "/");
    assert.equal(still.status, 200, "the previous release keeps serving");
    assert.ok(still.json.served <= 2, "with its CC_PHPSERVER_WORKER_MAX_REQUESTS");
    await pier.commit(wrepo, { "worker.php": "<?php while (true) sleep(1);\n" }, "never");
    const never = await pier.push(wrepo);
    assert.notEqual(never.code, 0);
    assert.match(never.stderr, /did not call frankenphp_handle_request\(\) within 3 s/);
  });
});
