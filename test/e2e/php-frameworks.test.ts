// Real frameworks on the PHP runtime (issue 17, item 2): a Symfony 6.4 and a Laravel 10 app built from
// Debian trixie's packages (test/e2e/php-framework-fixtures.ts), each pushed with git to two apps, one
// classic (nginx + php-fpm) and one in worker mode (Symfony Runtime with the FrankenPHP runner pattern;
// Octane's FrankenPHP loop for Laravel), health-gated, and asked for real pages through the edge.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { httpRequest, Pier, run } from "./harness.js";
import { laravelApp, symfonyApp } from "./php-framework-fixtures.js";

/** The cookies a client keeps (name -> value), sent back with each request, as a browser does. */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  get header(): Record<string, string> {
    const all = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    return all ? { cookie: all } : {};
  }

  keep(setCookie: string | string[] | undefined): void {
    for (const c of [setCookie ?? []].flat()) {
      const [pair = ""] = c.split(";");
      const at = pair.indexOf("=");
      if (at > 0) this.cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
  }
}

type Hello = { pid: number; hits: number; seen?: number; console?: boolean; web?: boolean };

const SYMFONY = { CC_WEBROOT: "/public", APP_CACHE_DIR: "/tmp/cache", APP_LOG_DIR: "/tmp/log" };
const SYMFONY_WORKER = {
  ...SYMFONY,
  CC_PHPSERVER_WORKER: "/public/index.php",
  CC_PHPSERVER_WORKER_NUM: "1",
  APP_RUNTIME: "App\\Runtime\\FrankenPhpRuntime",
};
const LARAVEL = {
  CC_WEBROOT: "/public",
  CC_PRE_RUN_HOOK: "sh prepare-storage.sh",
  LARAVEL_STORAGE_PATH: "/tmp/storage",
  APP_SERVICES_CACHE: "/tmp/bootstrap-cache/services.php",
  APP_PACKAGES_CACHE: "/tmp/bootstrap-cache/packages.php",
};
const LARAVEL_WORKER = {
  ...LARAVEL,
  CC_PHPSERVER_WORKER: "/public/worker.php",
  CC_PHPSERVER_WORKER_NUM: "1",
};

describe("Symfony 6.4 and Laravel 10 from Debian's packages, classic and in worker mode", {
  timeout: 900_000,
}, () => {
  const pier = new Pier();
  /** A request as a browser sends it: its Host names the edge's port. */
  const get = (app: string, path: string, headers: Record<string, string> = {}) =>
    httpRequest(pier.httpPort, `${app}.localhost:${pier.httpPort}`, "GET", path, headers, "", 20_000);
  const hello = async (app: string, jar?: CookieJar): Promise<Hello> => {
    const r = await get(app, "/hello/pier", jar?.header);
    assert.equal(r.status, 200, r.body);
    jar?.keep(r.headers["set-cookie"]);
    return JSON.parse(r.body) as Hello;
  };

  /** Creates the app, sets its variables, pushes the project in `dir` to it; the push is health-gated. */
  const deploy = async (name: string, dir: string, env: Record<string, string>) => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", name]);
    for (const [k, v] of Object.entries(env)) {
      const r = await pier.cli(["env", "set", k, v, "--app", name]);
      assert.equal(r.code, 0, r.stderr);
    }
    const url = `git+ssh://git@127.0.0.1:${pier.sshPort}/${app.id}.git`;
    const push = await run(["git", "-C", dir, "push", url, "master"], {
      env: pier.gitEnv(),
      timeoutMs: 600_000,
    });
    assert.equal(push.code, 0, `push to ${name}: ${push.stderr}`);
  };

  /** The app's project, built from Debian's packages, committed as a user commits it. */
  const project = async (name: string, build: (dir: string) => Promise<void>) => {
    const dir = join(pier.work, "projects", name);
    mkdirSync(dir, { recursive: true });
    await build(dir);
    const git = await run(["git", "init", "-q", "-b", "master", dir]);
    assert.equal(git.code, 0, git.stderr);
    await pier.commit(dir, {}, `a ${name} app from Debian's packages`);
    return dir;
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    const symfony = await project("symfony", symfonyApp);
    const laravel = await project("laravel", laravelApp);
    await deploy("sfclassic", symfony, SYMFONY);
    await deploy("sfworker", symfony, SYMFONY_WORKER);
    await deploy("lvclassic", laravel, LARAVEL);
    await deploy("lvworker", laravel, LARAVEL_WORKER);
  });
  after(async () => {
    await pier.destroy();
  });

  for (const app of ["sfclassic", "sfworker"]) {
    test(`Symfony (${app}): the Twig page and Symfony's own 404 page`, async () => {
      const home = await get(app, "/");
      assert.equal(home.status, 200, home.body);
      assert.match(home.body, /<h1>Hello from Symfony 6\.4\.\d+<\/h1>/);
      assert.match(home.body, /Rendered by Twig 3\.\d+\.\d+\./);
      const link = `href="http://${app}.localhost:${pier.httpPort}/hello/pier"`;
      assert.ok(
        home.body.includes(link),
        `an absolute URL keeps the host and port the client asked for: ${home.body}`,
      );
      const missing = await get(app, "/nope");
      assert.equal(missing.status, 404);
      assert.match(missing.body, /<title>An Error Occurred: Not Found<\/title>/);
    });
  }

  test("Symfony: the kernel is booted once in worker mode (its services keep their state), per request in classic mode", async () => {
    const classic = [await hello("sfclassic"), await hello("sfclassic"), await hello("sfclassic")];
    assert.deepEqual(
      classic.map((h) => h.hits),
      [1, 1, 1],
    );
    const worker = [await hello("sfworker"), await hello("sfworker"), await hello("sfworker")];
    const first = worker[0]!.hits;
    assert.deepEqual(
      worker.map((h) => h.hits),
      [first, first + 1, first + 2],
    );
    assert.equal(new Set(worker.map((h) => h.pid)).size, 1, "one worker process served them");
    assert.deepEqual(
      [...classic, ...worker].map((h) => h.web),
      [true, true, true, true, true, true],
      "Symfony's runtime mode is web in both (kernel.runtime_mode.web)",
    );
  });

  for (const app of ["lvclassic", "lvworker"]) {
    test(`Laravel (${app}): the Blade page, Laravel's 404 page, not taken for a console`, async () => {
      const home = await get(app, "/");
      assert.equal(home.status, 200, home.body);
      assert.match(home.body, /<h1>Hello from Laravel 10\.48\.\d+<\/h1>/);
      assert.match(home.body, /<title>PierLaravel<\/title>/);
      const go = await get(app, "/go");
      assert.equal(go.status, 302);
      assert.equal(
        go.headers.location,
        `http://${app}.localhost:${pier.httpPort}/hello/pier`,
        "url() keeps the port",
      );
      const missing = await get(app, "/nope");
      assert.equal(missing.status, 404);
      assert.match(missing.body, /<title>Not Found<\/title>/);
      assert.equal((await hello(app)).console, false, "runningInConsole()");
    });

    test(`Laravel (${app}): each client has its own session, in storage outside the release`, async () => {
      const alice = new CookieJar();
      const bob = new CookieJar();
      const seen = [
        (await hello(app, alice)).seen,
        (await hello(app, alice)).seen,
        (await hello(app, bob)).seen,
        (await hello(app, alice)).seen,
        (await hello(app, bob)).seen,
      ];
      assert.deepEqual(seen, [1, 2, 1, 3, 2]);
      assert.deepEqual((await hello(app)).seen, 1, "a client without a cookie starts a session of its own");
    });
  }

  test("Laravel: booted once in worker mode, per request in classic mode", async () => {
    const classic = [await hello("lvclassic"), await hello("lvclassic")];
    assert.deepEqual(
      classic.map((h) => h.hits),
      [1, 1],
    );
    const worker = [await hello("lvworker"), await hello("lvworker")];
    assert.equal(worker[1]!.hits, worker[0]!.hits + 1);
    assert.equal(worker[1]!.pid, worker[0]!.pid);
  });
});
