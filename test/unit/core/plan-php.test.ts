import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRunCommand, projectPath } from "../../../src/core/php-run-command.js";
import { type PathFact, phpProjectPaths, phpSettings, planPhpBuild } from "../../../src/core/plan-php.js";

/** A project with index.php at its root unless `paths` says otherwise. */
function plan(
  vars: Record<string, string> = {},
  paths: Record<string, PathFact> = {},
  composerJson: string | null = null,
  task = false,
) {
  return planPhpBuild({
    vars,
    paths: { ".": "dir", "index.php": "file", ...paths },
    composerJson,
    task,
  });
}

function ok(r: ReturnType<typeof plan>) {
  if (!r.ok) assert.fail(`expected a plan, got: ${r.errors.join(" ")}`);
  return r.plan;
}

function errors(r: ReturnType<typeof plan>): string {
  assert.equal(r.ok, false, "expected errors");
  return r.ok ? "" : r.errors.join("\n");
}

describe("projectPath", () => {
  const cases: [string, string | RegExp][] = [
    ["/", "."],
    ["", "."],
    ["public", "public"],
    ["/public/", "public"],
    ["./web//root", "web/root"],
    ["a/../b", "b"],
    ["..", /leaves the project/],
    ["/../etc", /leaves the project/],
    ["public/../../x", /leaves the project/],
    ["a\nb", /control characters/],
  ];
  for (const [raw, want] of cases) {
    it(JSON.stringify(raw), () => {
      const r = projectPath(raw);
      if (typeof want === "string") assert.deepEqual(r, { path: want });
      else assert.match("error" in r ? r.error : "", want);
    });
  }
});

describe("phpSettings", () => {
  const cases: [Record<string, string>, number, boolean][] = [
    [{}, 8080, true],
    [{ CC_PHPSERVER_PORT: "9000" }, 9000, true],
    [{ CC_PHPSERVER_PORT: " " }, 8080, true],
    [{ CC_PHPSERVER_PORT: "0" }, 8080, false],
    [{ CC_PHPSERVER_PORT: "65536" }, 8080, false],
    [{ CC_PHPSERVER_PORT: "80a" }, 8080, false],
  ];
  for (const [vars, port, valid] of cases) {
    it(JSON.stringify(vars), () => {
      const r = phpSettings(vars);
      assert.equal(r.port, port);
      assert.equal(r.errors.length === 0, valid);
    });
  }
});

describe("parseRunCommand (contract section 4.4)", () => {
  const accepted: [string, string[]][] = [
    ["phpserver php-server --listen 0.0.0.0:8080", ["phpserver", "php-server", "--listen", "0.0.0.0:8080"]],
    [
      "phpserver php-server --listen 0.0.0.0:8080 --debug --no-compress",
      ["phpserver", "php-server", "--listen", "0.0.0.0:8080", "--debug", "--no-compress"],
    ],
    [
      "  phpserver   php-server --listen 0.0.0.0:8080 --access-log --root /public ",
      ["phpserver", "php-server", "--listen", "0.0.0.0:8080", "--access-log", "--root", "public"],
    ],
    ["phpserver run --config Caddyfile", ["phpserver", "run", "--config", "Caddyfile"]],
    [
      "phpserver php-server --listen 0.0.0.0:8080 --worker /worker.php,4",
      ["phpserver", "php-server", "--listen", "0.0.0.0:8080", "--worker", "worker.php,4"],
    ],
    ["phpserver run --config /conf/Caddyfile", ["phpserver", "run", "--config", "conf/Caddyfile"]],
  ];
  for (const [raw, argv] of accepted) {
    it(`accepts ${raw}`, () => {
      const r = parseRunCommand(raw, 8080);
      assert.ok(r.ok, r.ok ? "" : r.error);
      assert.deepEqual(r.cmd.argv, argv);
    });
  }
  const refused: [string, RegExp][] = [
    ["php -S 0.0.0.0:8080", /does not start with phpserver/],
    [
      "phpserver php-server --listen 127.0.0.1:8080",
      /does not start with `phpserver php-server --listen 0\.0\.0\.0:8080`/,
    ],
    ["phpserver php-server --listen 0.0.0.0:9000", /does not start with/],
    ["phpserver php-server", /does not start with/],
    ["phpserver php-server --listen 0.0.0.0:8080 && rm -rf /", /"&&", which is not a flag/],
    ["phpserver php-server --listen 0.0.0.0:8080 --mercure", /serves no Mercure hub/],
    [
      "phpserver php-server --listen 0.0.0.0:8080 --worker ../w.php",
      /--worker script that leaves the project/,
    ],
    ["phpserver php-server --listen 0.0.0.0:8080 --worker", /--worker without FILE\[,N\]/],
    ["phpserver php-server --listen 0.0.0.0:8080 --worker w.php,x", /--worker without FILE\[,N\]/],
    ["phpserver php-server --listen 0.0.0.0:8080 --root ../x", /--root that leaves the project/],
    ["phpserver run --config", /missing --config/],
    ["phpserver run --config ../Caddyfile", /config file that leaves the project/],
    ["phpserver run --config Caddyfile --watch", /has more after the config file/],
    ["phpserver run Caddyfile", /missing --config/],
  ];
  for (const [raw, why] of refused) {
    it(`refuses ${raw}, quoting the rule`, () => {
      const r = parseRunCommand(raw, 8080);
      assert.equal(r.ok, false);
      const e = r.ok ? "" : r.error;
      assert.match(e, /^CC_RUN_COMMAND must start with `phpserver php-server --listen 0\.0\.0\.0:8080`/);
      assert.match(e, /`phpserver run --config <path_to_config_file>`/);
      assert.match(e, why);
    });
  }
  it("the port of the rule is CC_PHPSERVER_PORT", () => {
    assert.ok(parseRunCommand("phpserver php-server --listen 0.0.0.0:9000", 9000).ok);
  });
});

describe("phpProjectPaths", () => {
  it("names the files, the webroot and its index files", () => {
    const r = phpProjectPaths({ CC_WEBROOT: "/public" });
    assert.equal(r.webroot, "public");
    for (const p of [
      "composer.json",
      "composer.lock",
      "composer.phar",
      "php.ini",
      "public",
      "public/index.php",
    ])
      assert.ok(r.paths.includes(p), p);
  });
  it("the config file of CC_RUN_COMMAND and the --root that replaces the webroot", () => {
    assert.ok(
      phpProjectPaths({ CC_RUN_COMMAND: "phpserver run --config conf/Caddyfile" }).paths.includes(
        "conf/Caddyfile",
      ),
    );
    const r = phpProjectPaths({ CC_RUN_COMMAND: "phpserver php-server --listen 0.0.0.0:8080 --root web" });
    assert.equal(r.webroot, "web");
  });
});

describe("planPhpBuild", () => {
  it("index.php alone: the default start, no composer, the root as webroot", () => {
    const p = ok(plan());
    assert.deepEqual(p.start, ["phpserver", "php-server", "--listen", "0.0.0.0:8080"]);
    assert.equal(p.composer, null);
    assert.equal(p.webroot, "/app");
    assert.deepEqual(p.runEnv, { PHPSERVER_ROOT: "/app", PHPSERVER_PORT: "8080" });
    assert.deepEqual(p.buildSteps, []);
    assert.equal(p.port, 8080);
    assert.equal(p.buildEnv.INSTANCE_TYPE, "build");
    assert.equal(p.buildEnv.COMPOSER_CACHE_DIR, "/cache/composer");
  });

  it("index.html is enough; CC_PHPSERVER_PORT is the listen port", () => {
    const p = ok(plan({ CC_PHPSERVER_PORT: "9090" }, { "index.php": "missing", "index.html": "file" }));
    assert.deepEqual(p.start, ["phpserver", "php-server", "--listen", "0.0.0.0:9090"]);
  });

  const refusals: [string, Record<string, string>, Record<string, PathFact>, string | null, RegExp][] = [
    [
      "no index file",
      {},
      { "index.php": "missing" },
      null,
      /No index\.php or index\.html in the project root: one is required \(set CC_WEBROOT/,
    ],
    [
      "no index file in the webroot",
      { CC_WEBROOT: "/public" },
      { public: "dir" },
      null,
      /No index\.php or index\.html in public\//,
    ],
    [
      "a webroot that is not there",
      { CC_WEBROOT: "web" },
      {},
      null,
      /CC_WEBROOT="web": web\/ is not a folder/,
    ],
    [
      "a webroot above the project",
      { CC_WEBROOT: "../x" },
      {},
      null,
      /CC_WEBROOT="\.\.\/x" leaves the project/,
    ],
    [
      "a webroot through a symlink",
      { CC_WEBROOT: "/out" },
      { out: "outside" },
      null,
      /leaves the project through a symlink/,
    ],
    [
      "an index file through a symlink",
      {},
      { "index.php": "outside" },
      null,
      /points outside of the project/,
    ],
    ["invalid composer.json", {}, { "composer.json": "file" }, "{ nope", /composer\.json is not valid JSON/],
    [
      "composer.json not an object",
      {},
      { "composer.json": "file" },
      "[]",
      /composer\.json must hold a JSON object/,
    ],
    [
      "CC_PHP_DEV_DEPENDENCIES other than install",
      { CC_PHP_DEV_DEPENDENCIES: "ignore" },
      {},
      "{}",
      /CC_PHP_DEV_DEPENDENCIES="ignore" is not a choice/,
    ],
    ["php.ini through a symlink", {}, { "php.ini": "outside" }, null, /php\.ini points outside/],
    [
      "a worker path above the project",
      { CC_PHPSERVER_WORKER: "../w.php" },
      {},
      null,
      /CC_PHPSERVER_WORKER="\.\.\/w\.php" leaves the project/,
    ],
    ["a worker script that is not there", { CC_PHPSERVER_WORKER: "w.php" }, {}, null, /no such file/],
    [
      "a run command breaking the rule",
      { CC_RUN_COMMAND: "php -S 0.0.0.0:8080" },
      {},
      null,
      /CC_RUN_COMMAND must start with/,
    ],
    [
      "a missing config file",
      { CC_RUN_COMMAND: "phpserver run --config Caddyfile" },
      {},
      null,
      /no config file Caddyfile/,
    ],
    ["a bad port", { CC_PHPSERVER_PORT: "http" }, {}, null, /CC_PHPSERVER_PORT="http" is not a port/],
    [
      "a bad worker restart policy",
      { CC_WORKER_COMMAND: "x", CC_WORKER_RESTART: "sometimes" },
      {},
      null,
      /CC_WORKER_RESTART/,
    ],
  ];
  for (const [name, vars, paths, composer, want] of refusals) {
    it(`refuses ${name}`, () => assert.match(errors(plan(vars, paths, composer)), want));
  }

  it("lists every problem at once", () => {
    const e = errors(
      plan({ CC_PHPSERVER_PORT: "x", CC_RUN_COMMAND: "php" }, { "index.php": "missing" }, null),
    );
    assert.match(e, /CC_PHPSERVER_PORT/);
    assert.match(e, /CC_RUN_COMMAND/);
    assert.match(e, /No index\.php/);
  });

  it("a task needs no index file", () => {
    ok(plan({}, { "index.php": "missing" }, null, true));
  });

  const composer: [string, Record<string, string>, Record<string, PathFact>, string, boolean][] = [
    [
      "the default flags",
      {},
      {},
      "composer install --no-interaction --no-progress --no-scripts --no-dev",
      false,
    ],
    [
      "CC_PHP_DEV_DEPENDENCIES=install drops --no-dev",
      { CC_PHP_DEV_DEPENDENCIES: "install" },
      {},
      "composer install --no-interaction --no-progress --no-scripts",
      true,
    ],
    [
      "CC_PHP_COMPOSER_FLAGS replaces the flags",
      { CC_PHP_COMPOSER_FLAGS: "--no-dev --optimize-autoloader" },
      {},
      "composer install --no-dev --optimize-autoloader",
      false,
    ],
    [
      "a flag a shell would read is quoted",
      { CC_PHP_COMPOSER_FLAGS: "--no-dev $(reboot)" },
      {},
      "composer install --no-dev '$(reboot)'",
      false,
    ],
    [
      "composer.phar at the root is used",
      {},
      { "composer.phar": "file" },
      "php composer.phar install --no-interaction --no-progress --no-scripts --no-dev",
      false,
    ],
  ];
  for (const [name, vars, paths, install, dev] of composer) {
    it(`composer: ${name}`, () => {
      const p = ok(plan(vars, { "composer.json": "file", ...paths }, "{}"));
      assert.equal(p.composer?.install, install);
      assert.equal(p.composer?.devDependencies, dev);
      const step = p.buildSteps.find((s) => s.install);
      assert.equal(step?.command, install);
    });
  }

  const dumps: [string, string, Record<string, string>, string | null][] = [
    ["psr-4 only", '{"autoload": {"psr-4": {"App\\\\": "src/"}}}', {}, null],
    [
      "a classmap",
      '{"autoload": {"classmap": ["lib/"]}}',
      {},
      "composer dump-autoload --no-interaction --no-dev",
    ],
    [
      "a dev classmap",
      '{"autoload-dev": {"classmap": ["tests/"]}}',
      {},
      "composer dump-autoload --no-interaction --no-dev",
    ],
    [
      "config optimize-autoloader",
      '{"config": {"optimize-autoloader": true}}',
      {},
      "composer dump-autoload --no-interaction --no-dev",
    ],
    ["config optimize-autoloader false", '{"config": {"optimize-autoloader": false}}', {}, null],
    [
      "an optimizing flag",
      "{}",
      { CC_PHP_COMPOSER_FLAGS: "--no-dev -o" },
      "composer dump-autoload --no-interaction --no-dev",
    ],
    [
      "dev dependencies",
      '{"autoload": {"classmap": ["lib/"]}}',
      { CC_PHP_DEV_DEPENDENCIES: "install" },
      "composer dump-autoload --no-interaction",
    ],
  ];
  for (const [name, json, vars, dump] of dumps) {
    it(`vendor/ reused: dump-autoload with ${name}? ${dump !== null}`, () => {
      assert.equal(ok(plan(vars, { "composer.json": "file" }, json)).composer?.dumpAutoload, dump);
    });
  }

  it("the steps: pre-build hook, php.ini (checked, then applied to the CLI and php-fpm), composer, post-build hook", () => {
    const p = ok(
      plan(
        { CC_PRE_BUILD_HOOK: "echo pre", CC_POST_BUILD_HOOK: "echo post" },
        { "php.ini": "file", "composer.json": "file" },
        "{}",
      ),
    );
    assert.deepEqual(
      p.buildSteps.map((s) => s.label),
      [
        "Running CC_PRE_BUILD_HOOK",
        "Applying php.ini (web requests, workers and tasks)",
        "Installing dependencies: composer install --no-interaction --no-progress --no-scripts --no-dev",
        "Running CC_POST_BUILD_HOOK",
      ],
    );
    const ini = p.buildSteps[1]?.command ?? "";
    assert.match(ini, /parse_ini_file/);
    assert.match(ini, /\/etc\/php\/8\.4\/cli\/conf\.d \/etc\/php\/8\.4\/fpm\/conf\.d/);
  });

  it("CC_RUN_COMMAND run --config: its file is checked in the build", () => {
    const p = ok(plan({ CC_RUN_COMMAND: "phpserver run --config Caddyfile" }, { Caddyfile: "file" }));
    assert.deepEqual(p.start, ["phpserver", "run", "--config", "Caddyfile"]);
    assert.equal(p.buildSteps.at(-1)?.command, "phpserver run --config Caddyfile --check");
  });

  it("CC_PRE_RUN_HOOK wraps the start command; workers are those of CC_WORKER_COMMAND*", () => {
    const p = ok(
      plan({ CC_PRE_RUN_HOOK: "echo hi", CC_WORKER_COMMAND: "php w.php", CC_WORKER_COMMAND_1: "php x.php" }),
    );
    assert.deepEqual(p.start.slice(0, 5), [
      "/bin/sh",
      "-c",
      '/bin/sh -ec "$1" && shift && exec "$@"',
      "pier-pre-run",
      "echo hi",
    ]);
    assert.deepEqual(p.start.slice(5), ["phpserver", "php-server", "--listen", "0.0.0.0:8080"]);
    assert.deepEqual(
      p.workers.map((w) => w.command),
      ["php w.php", "php x.php"],
    );
  });

  it("CC_PHPSERVER_WORKER: the worker's absolute path for phpserver", () => {
    const p = ok(
      plan(
        { CC_PHPSERVER_WORKER: "/bin/worker.php", CC_PHPSERVER_WORKER_MAX_REQUESTS: "500" },
        { "bin/worker.php": "file" },
      ),
    );
    assert.equal(p.runEnv.PHPSERVER_WORKER, "/app/bin/worker.php");
    assert.deepEqual(p.start, ["phpserver", "php-server", "--listen", "0.0.0.0:8080"]);
  });

  it("CC_WEBROOT=/public serves public/", () => {
    const p = ok(plan({ CC_WEBROOT: "/public" }, { public: "dir", "public/index.php": "file" }));
    assert.equal(p.webroot, "/app/public");
    assert.equal(p.runEnv.PHPSERVER_ROOT, "/app/public");
  });
});
