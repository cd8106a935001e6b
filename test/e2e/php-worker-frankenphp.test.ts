// Worker mode as FrankenPHP's (issue 17, item 1; docs/adr/0013-php-worker-mode.md): scripts written the way
// FrankenPHP's own tests write theirs (a runner that serves the handler once, or in a loop when
// $_SERVER['FRANKENPHP_WORKER'] says so at boot), pushed to two apps, one classic and one in worker mode, and
// asked what FrankenPHP's tests ask: the boot request, $_SERVER, uncaught exceptions, exit(), headers, a
// client that leaves, and the FrankenPHP functions Pier answers in its own way.
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import { httpRequest, Pier } from "./harness.js";
import { FRANKENPHP_APP } from "./php-fixtures.js";

/** A request through the edge (15 s: some scripts here wait on purpose). */
const send = (
  port: number,
  host: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = "",
) => httpRequest(port, host, method, path, headers, body, 15_000);

/** Reads a server-sent-events stream until `events` have come, then leaves (closes the connection). */
function readEventsAndLeave(port: number, host: string, path: string, events: number): Promise<string[]> {
  return new Promise((res, rej) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host }, agent: false }, (r) => {
      let text = "";
      r.on("data", (c: Buffer) => {
        text += c.toString();
        const got = text.split("\n\n").filter((e) => e.startsWith("data: "));
        if (got.length >= events) {
          req.destroy();
          res(got.slice(0, events));
        }
      });
    });
    req.setTimeout(15_000, () => req.destroy(new Error("timeout")));
    req.on("error", (e) => {
      if (!req.destroyed) rej(e);
    });
    req.end();
  });
}

type Server = Record<string, string | number>;

describe("PHP worker mode as FrankenPHP's", { timeout: 600_000 }, () => {
  const pier = new Pier();
  const modes = { classic: "fpclassic", worker: "fpworker" } as const;
  const call = (app: string, path: string, headers: Record<string, string> = {}, method = "GET", body = "") =>
    send(pier.httpPort, `${app}.localhost`, method, path, headers, body);
  const server = async (
    app: string,
    path: string,
    headers: Record<string, string> = {},
    method = "GET",
    body = "",
  ) => {
    const r = await call(app, path, headers, method, body);
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as { server: Server; env: string | false; served: number };
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    for (const [mode, name] of Object.entries(modes)) {
      const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", name]);
      const env =
        mode === "worker"
          ? [
              "CC_WEBROOT",
              "/public",
              "CC_PHPSERVER_WORKER",
              "/public/index.php",
              "CC_PHPSERVER_WORKER_NUM",
              "1",
            ]
          : ["CC_WEBROOT", "/public"];
      for (let i = 0; i < env.length; i += 2) {
        const r = await pier.cli(["env", "set", env[i]!, env[i + 1]!, "--app", name]);
        assert.equal(r.code, 0, r.stderr);
      }
      const repo = await pier.repo(name, FRANKENPHP_APP, app.id);
      const push = await pier.push(repo);
      assert.equal(push.code, 0, push.stderr);
    }
  });
  after(async () => {
    await pier.destroy();
  });

  test("the worker script boots inside a request whose SCRIPT_FILENAME is the script (a runner that needs it, as Symfony Runtime's, serves)", async () => {
    const boot = await server(modes.worker, "/?t=boot");
    const s = boot.server;
    assert.equal(s.SCRIPT_FILENAME, "/app/public/index.php");
    assert.equal(s.SCRIPT_NAME, "/index.php");
    assert.equal(s.PHP_SELF, "/index.php");
    assert.equal(s.DOCUMENT_ROOT, "/app/public");
    assert.equal(s.REQUEST_METHOD, "GET");
    assert.equal(s.FRANKENPHP_WORKER, "1", "FRANKENPHP_WORKER at boot");
    assert.equal(boot.env, "1", "and in getenv() at boot");
    const req = await server(modes.worker, "/?t=server");
    assert.equal(
      req.server.FRANKENPHP_WORKER,
      undefined,
      "not during requests (FrankenPHP sets it at boot only)",
    );
    assert.equal(req.env, false);
    assert.equal((await server(modes.classic, "/?t=server")).server.FRANKENPHP_WORKER, undefined);
  });

  test("$_SERVER has what FrankenPHP and php-fpm set: Basic auth, path info, CGI/1.1", async () => {
    const auth = {
      authorization: `Basic ${Buffer.from("kevin:pass:word").toString("base64")}`,
      "content-type": "text/plain",
    };
    for (const [mode, app] of Object.entries(modes)) {
      const s = (await server(app, "/index.php/baz/bat?t=server&foo=a&i=1", auth, "POST", "foo")).server;
      const expect: Server = {
        PHP_AUTH_USER: "kevin",
        PHP_AUTH_PW: "pass:word",
        REMOTE_USER: "kevin",
        HTTP_AUTHORIZATION: auth.authorization,
        PATH_INFO: "/baz/bat",
        PATH_TRANSLATED: "/app/public/baz/bat",
        PHP_SELF: "/index.php/baz/bat",
        SCRIPT_NAME: "/index.php",
        SCRIPT_FILENAME: "/app/public/index.php",
        DOCUMENT_ROOT: "/app/public",
        DOCUMENT_URI: "/index.php",
        REQUEST_URI: "/index.php/baz/bat?t=server&foo=a&i=1",
        QUERY_STRING: "t=server&foo=a&i=1",
        REQUEST_METHOD: "POST",
        CONTENT_TYPE: "text/plain",
        CONTENT_LENGTH: "3",
        REQUEST_SCHEME: "http",
        SERVER_NAME: `${app}.localhost`,
        SERVER_PROTOCOL: "HTTP/1.1",
        GATEWAY_INTERFACE: "CGI/1.1",
        HTTP_HOST: `${app}.localhost`,
      };
      for (const [k, v] of Object.entries(expect)) assert.equal(s[k], v, `${mode}: $_SERVER['${k}']`);
      for (const k of [
        "REMOTE_ADDR",
        "REMOTE_PORT",
        "SERVER_PORT",
        "SERVER_SOFTWARE",
        "REQUEST_TIME",
        "REQUEST_TIME_FLOAT",
      ]) {
        assert.ok(s[k] !== undefined && s[k] !== "", `${mode}: $_SERVER['${k}'] is set`);
      }
    }
    // A Host with a port (an app whose URL names one, as WordPress's home may): HTTP_HOST keeps it in both
    // modes (Debian's fastcgi_params passed nginx's $host, without it), SERVER_NAME does not.
    for (const [mode, app] of Object.entries(modes)) {
      const host = `${app}.localhost:${pier.httpPort}`;
      const r = await send(pier.httpPort, host, "GET", "/?t=server", {}, "");
      assert.equal(r.status, 200, r.body);
      const s = (JSON.parse(r.body) as { server: Server }).server;
      assert.equal(s.HTTP_HOST, host, `${mode}: $_SERVER['HTTP_HOST'] keeps the port`);
      assert.equal(s.SERVER_NAME, `${app}.localhost`, `${mode}: $_SERVER['SERVER_NAME']`);
    }
    // FrankenPHP's own: the entries it always sets, empty when they do not apply.
    const s = (await server(modes.worker, "/blog/1?t=server")).server;
    for (const k of ["AUTH_TYPE", "REMOTE_IDENT", "HTTPS", "SSL_PROTOCOL", "PATH_INFO"])
      assert.equal(s[k], "", k);
    assert.equal(
      s.PHP_SELF,
      "/index.php",
      "a path that is not the script's is served by it as a front controller",
    );
    assert.equal(s.REMOTE_HOST, s.REMOTE_ADDR);
  });

  test("an uncaught exception keeps the output before it and is shown as display_errors says; the worker goes on", async () => {
    for (const [mode, app] of Object.entries(modes)) {
      const shown = await call(app, "/?t=exception&i=7");
      assert.equal(shown.status, 200, mode);
      assert.match(
        shown.body,
        /^hello<br \/>\n<b>Fatal error<\/b>: {2}Uncaught Exception: request 7 in \/app\/public\/index\.php:\d+/,
        mode,
      );
      const hidden = await call(app, "/?t=exception&i=8&display=0");
      assert.equal(hidden.status, 500, `${mode}: a 500 when the error is not shown`);
      assert.equal(hidden.body, "hello", `${mode}: the output before it is kept`);
    }
    const before = (await server(modes.worker, "/?t=server")).served;
    await call(modes.worker, "/?t=exception&i=9");
    assert.equal((await server(modes.worker, "/?t=server")).served, before + 2, "the same worker served on");
    const logs = await pier.cli(["logs", "--app", modes.worker]);
    assert.match(
      logs.stdout,
      /PHP Fatal error: {2}Uncaught Exception: request 8 in \/app\/public\/index\.php:\d+/,
    );
  });

  test("a fatal error in a handler is shown as display_errors says, after the output before it (worker mode); a new worker serves on", async () => {
    const message =
      /<br \/>\n<b>Fatal error<\/b>: {2}Allowed memory size of \d+ bytes exhausted .* in <b>\/app\/public\/index\.php<\/b> on line <b>\d+<\/b><br \/>\n$/;
    for (const [mode, app] of Object.entries(modes)) {
      const shown = await call(app, "/?t=fatal");
      assert.equal(shown.status, 200, mode);
      assert.match(shown.body, message, mode);
      assert.equal((await call(app, "/?t=fatal&display=0")).status, 500, mode);
    }
    // php-fpm drops what sat in its output buffer (output_buffering = 4096) when memory runs out: PHP shuts
    // its output layer down. A worker keeps it, as PHP does with no buffer (FrankenPHP's default ini).
    assert.match((await call(modes.worker, "/?t=fatal")).body, /^before<br \/>/);
    assert.equal((await call(modes.worker, "/?t=fatal&display=0")).body, "before");
    assert.equal((await server(modes.worker, "/?t=server")).served, 1, "a fresh worker");
  });

  test("exit() in a handler answers what was written, and a new worker serves the next request", async () => {
    const r = await call(modes.worker, "/?t=exit&i=3");
    assert.equal(r.status, 200);
    assert.equal(r.body, "bye 3");
    assert.equal((await server(modes.worker, "/?t=server")).served, 1, "a fresh worker");
  });

  test("headers: header(), http_response_code(), apache_response_headers(); headers_send(103) is dropped, the final response stands", async () => {
    // FrankenPHP's script answers i + 100 when i % 3: a final status of the 2xx range here (nginx refuses a 1xx).
    for (const i of [3, 101]) {
      const r = await call(modes.worker, `/?t=headers&i=${i}`);
      assert.equal(r.status, i % 3 ? i + 100 : 200);
      assert.equal(r.headers.foo, "bar");
      assert.equal(r.headers.foo2, "bar2");
      assert.equal(r.headers.invalid, undefined);
      assert.match(r.body, /'Foo' => 'bar',\n {2}'Foo2' => 'bar2',\n {2}'I' => '\d+',/);
    }
    const hints = await call(modes.worker, "/?t=hints&i=5");
    assert.equal(hints.status, 200);
    assert.equal(hints.body, "Hello");
    assert.equal(hints.headers.request, "5");
    assert.equal(hints.headers.link, undefined);
  });

  test("the header functions take PHP's named arguments, and the app's disable_functions holds, in both modes", async () => {
    for (const app of Object.values(modes)) {
      const r = await call(app, "/?t=functions");
      assert.equal(r.status, 200, `${app}: ${r.body}`);
      assert.equal(r.headers["x-named"], "yes", app);
      assert.deepEqual(r.headers["set-cookie"], ["c=v%201; path=/; HttpOnly"], app);
      assert.deepEqual(JSON.parse(r.body), { exec: false, sent: false, code: 200 }, app);
    }
  });

  test("frankenphp_finish_request() answers at once, the handler goes on; frankenphp_log() writes to the app's log", async () => {
    for (const app of Object.values(modes)) {
      const r = await call(app, "/?t=finish&i=11");
      assert.equal(r.body, "This is output 11\n", app);
    }
    assert.equal((await call(modes.worker, "/?t=log&i=12")).body, "logged");
    let logs = "";
    for (let i = 0; i < 25 && !/reached after finish_request 11[\s\S]*warn message 12/.test(logs); i++) {
      logs = (await pier.cli(["logs", "--app", modes.worker])).stdout;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(logs, /reached after finish_request 11/);
    assert.match(logs, /level=WARN msg="warn message 12" "key int"=1 err="\[a v\]"/);
  });

  test("mercure_publish() fails naming itself: this phpserver serves no Mercure hub", async () => {
    const r = await call(modes.worker, "/?t=mercure");
    assert.match(
      r.body,
      /Uncaught RuntimeException: mercure_publish\(\): this phpserver serves no Mercure hub/,
    );
  });

  test("connection_aborted() sees a client that left, in both modes (through the edge)", async () => {
    for (const [mode, app] of Object.entries(modes)) {
      const events = await readEventsAndLeave(pier.httpPort, `${app}.localhost`, "/?t=sse&i=1", 3);
      assert.deepEqual(
        events,
        ["data: 0", "data: 1", "data: 2"],
        `${mode}: each event arrives as it is flushed`,
      );
      let result = "";
      for (let i = 0; i < 100 && result === ""; i++) {
        result = (await call(app, "/?t=sse-result&i=1")).body;
        if (result === "") await new Promise((r) => setTimeout(r, 200));
      }
      const m = result.match(/^events (\d+), status (\d)$/);
      assert.ok(m, `${mode}: the stream ended (${result})`);
      assert.equal(m[2], "1", `${mode}: connection_status() is CONNECTION_ABORTED`);
      assert.ok(
        Number(m[1]) < 300,
        `${mode}: the loop stopped because the client left, not at its end (${result})`,
      );
    }
  });
});
