import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  configVersion,
  type EdgeLayout,
  layoutFor,
  type NginxConfigInput,
  nginxConfigVersion,
  planRuntimeSwitch,
  renderHaproxyConfig,
  renderHostsMap,
  renderNginxConfig,
  runtimeCommands,
} from "../../../src/core/edge-config.js";
import type { Route } from "../../../src/core/ports.js";

const t = (port: number) => ({ host: "127.0.0.1", port });
const route = (appId: string, hostname: string, ...ports: number[]): Route => ({
  appId,
  hostname,
  targets: ports.map(t),
});

describe("layoutFor", () => {
  test("gives each app twice its instance count in slots, at least two", () => {
    const l = layoutFor([
      route("app-a", "a.localhost", 1001),
      route("app-b", "b.localhost"),
      route("app-c", "c.localhost", 1, 2, 3),
    ]);
    assert.deepEqual(
      l.backends.map((b) => b.slots.length),
      [2, 2, 6],
    );
    assert.deepEqual(l.backends[0]?.slots, [t(1001), null]);
    assert.deepEqual(l.backends[1]?.slots, [null, null]);
  });
  test("keeps targets in the slots they had", () => {
    const prev: EdgeLayout = {
      backends: [{ appId: "app-a", hostname: "a.localhost", slots: [null, t(2), t(3), null] }],
    };
    const l = layoutFor([route("app-a", "a.localhost", 3, 4)], prev);
    assert.deepEqual(l.backends[0]?.slots, [t(4), null, t(3), null]);
  });
  const bad: [Route[], RegExp][] = [
    [[route("x", "Bad_Host", 1)], /not a valid DNS name/],
    [[route("x", "a.localhost", 1), route("y", "a.localhost", 2)], /routed twice/],
    [[{ appId: "x", hostname: "a.localhost", targets: [{ host: "10.0.0.1; evil", port: 1 }] }], /IPv4/],
    [[route("x", "a.localhost", 70000)], /port 70000/],
    [[route("x", "a.localhost\nbackend evil", 1)], /not a valid DNS name/],
  ];
  for (const [routes, message] of bad) {
    test(`refuses ${JSON.stringify(routes[routes.length - 1]?.hostname)} / ${message}`, () => {
      assert.throws(() => layoutFor(routes), message);
    });
  }
});

describe("planRuntimeSwitch", () => {
  const current = layoutFor([route("app-a", "a.localhost", 1001), route("app-b", "b.localhost", 2001)]);
  test("a deploy fills a free slot, then puts the old one in maintenance", () => {
    const plan = planRuntimeSwitch(current, [
      route("app-a", "a.localhost", 1002),
      route("app-b", "b.localhost", 2001),
    ]);
    assert.ok(plan);
    assert.deepEqual(plan.steps, [
      { backend: "app_app_a", slot: "s1", state: "ready", target: t(1002) },
      { backend: "app_app_a", slot: "s0", state: "maint", target: null },
    ]);
    assert.deepEqual(plan.layout.backends[0]?.slots, [null, t(1002)]);
    assert.deepEqual(plan.layout.backends[1], current.backends[1]);
  });
  test("unchanged routes need no step", () => {
    assert.deepEqual(
      planRuntimeSwitch(current, [route("app-a", "a.localhost", 1001), route("app-b", "b.localhost", 2001)])
        ?.steps,
      [],
    );
  });
  test("stopping an app empties its slots", () => {
    const plan = planRuntimeSwitch(current, [
      route("app-a", "a.localhost"),
      route("app-b", "b.localhost", 2001),
    ]);
    assert.deepEqual(plan?.steps, [{ backend: "app_app_a", slot: "s0", state: "maint", target: null }]);
  });
  const structural: [string, Route[]][] = [
    [
      "an app is added",
      [
        route("app-a", "a.localhost", 1001),
        route("app-b", "b.localhost", 2001),
        route("app-c", "c.localhost"),
      ],
    ],
    ["an app is removed", [route("app-a", "a.localhost", 1001)]],
    ["a hostname changes", [route("app-a", "z.localhost", 1001), route("app-b", "b.localhost", 2001)]],
    [
      "more instances than free slots",
      [route("app-a", "a.localhost", 1, 2, 3), route("app-b", "b.localhost", 2001)],
    ],
  ];
  for (const [why, routes] of structural) {
    test(`needs a reload when ${why}`, () => {
      assert.equal(planRuntimeSwitch(current, routes), null);
    });
  }
});

describe("renderHaproxyConfig", () => {
  const layout = layoutFor([route("app-a", "a.localhost", 1001), route("app-b", "b.localhost")]);
  const cfg = renderHaproxyConfig({
    layout,
    listenHost: "0.0.0.0",
    listenPort: 8000,
    dir: "/var/lib/pier/edge",
  });
  test("routes by Host through the hosts map, forwards the proto, answers unknown hosts 404", () => {
    assert.match(cfg, /bind 0\.0\.0\.0:8000/);
    assert.match(cfg, /map\(\/var\/lib\/pier\/edge\/hosts\.map\)/);
    assert.match(cfg, /option forwardfor/);
    assert.match(cfg, /set-header X-Forwarded-Proto http/);
    assert.match(cfg, /backend no_app\n {2}http-request return status 404/);
    assert.equal(renderHostsMap(layout), "a.localhost app_app_a\nb.localhost app_app_b\n");
  });
  test("empty slots are disabled; an app without instances answers 503", () => {
    assert.match(cfg, /server s0 127\.0\.0\.1:1001\n {2}server s1 127\.0\.0\.1:1 disabled/);
    assert.match(cfg, /backend app_app_b\n {2}balance roundrobin\n {2}http-request return status 503/);
  });
  test("the version changes with the structure, not with the addresses", () => {
    const moved = planRuntimeSwitch(layout, [
      route("app-a", "a.localhost", 1009),
      route("app-b", "b.localhost"),
    ]);
    assert.ok(moved);
    const v1 = configVersion(cfg);
    const v2 = configVersion(
      renderHaproxyConfig({ layout: moved.layout, listenHost: "0.0.0.0", listenPort: 8000, dir: "/d" }),
    );
    const v3 = configVersion(
      renderHaproxyConfig({
        layout: layoutFor([route("app-a", "a.localhost", 1)]),
        listenHost: "0.0.0.0",
        listenPort: 8000,
        dir: "/d",
      }),
    );
    assert.match(v1 ?? "", /^[0-9a-f]{16}$/);
    assert.equal(v1, v2);
    assert.notEqual(v1, v3);
  });
  test("deterministic", () => {
    assert.equal(
      cfg,
      renderHaproxyConfig({ layout, listenHost: "0.0.0.0", listenPort: 8000, dir: "/var/lib/pier/edge" }),
    );
  });
  test("refuses a listen host or directory that would inject configuration", () => {
    assert.throws(
      () => renderHaproxyConfig({ layout, listenHost: "0.0.0.0\nfrontend x", listenPort: 80, dir: "/d" }),
      /listen host/,
    );
    assert.throws(
      () => renderHaproxyConfig({ layout, listenHost: "0.0.0.0", listenPort: 80, dir: "/d e" }),
      /directory/,
    );
  });
});

test("runtime commands", () => {
  assert.deepEqual(runtimeCommands({ backend: "app_x", slot: "s1", state: "ready", target: t(5) }), [
    "set server app_x/s1 addr 127.0.0.1 port 5",
    "set server app_x/s1 state ready",
  ]);
  assert.deepEqual(runtimeCommands({ backend: "app_x", slot: "s0", state: "maint", target: null }), [
    "set server app_x/s0 state maint",
  ]);
});

describe("renderNginxConfig", () => {
  const base: NginxConfigInput = {
    routes: [route("app-a", "a.localhost", 1002, 1001), route("app-b", "b.localhost")],
    listenHost: "127.0.0.1",
    listenPort: 8000,
    prefix: "/var/lib/pier/edge",
  };
  const render = (patch: Partial<NginxConfigInput> = {}) => renderNginxConfig({ ...base, ...patch });
  const cfg = render();
  /** The text of the `server { ... }` block for `name`. */
  const serverBlock = (text: string, name: string) =>
    [...text.matchAll(/^ {2}server \{\n[\s\S]*?^ {2}\}$/gm)]
      .map((m) => m[0])
      .find((b) => b.includes(`    server_name ${name};\n`)) ?? "";

  test("a whole nginx.conf for Pier's own master: pid, log and temp paths under the prefix", () => {
    for (const line of [
      "daemon on;",
      "pid /var/lib/pier/edge/nginx.pid;",
      "error_log /var/lib/pier/edge/error.log warn;",
      "  client_body_temp_path /var/lib/pier/edge/tmp/client_body;",
      "  proxy_temp_path /var/lib/pier/edge/tmp/proxy;",
      "  worker_connections 4096;",
      "worker_processes auto;",
      "  access_log off;",
    ]) {
      assert.ok(cfg.includes(`${line}\n`), `missing: ${line}`);
    }
    assert.doesNotMatch(cfg, /\/etc\/nginx|\/var\/log\/nginx|include /);
    assert.match(render({ workerProcesses: 2 }), /^worker_processes 2;$/m);
  });

  test("forwards Host, X-Forwarded-*, X-Request-Id over HTTP/1.1 keep-alive, retrying a refused instance", () => {
    for (const line of [
      "proxy_http_version 1.1;",
      "proxy_set_header Host $host;",
      "proxy_set_header Connection $pier_connection;",
      "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
      "proxy_set_header X-Forwarded-Proto $scheme;",
      "proxy_set_header X-Forwarded-Host $http_host;",
      "proxy_set_header X-Request-Id $pier_request_id;",
      "proxy_next_upstream error timeout;",
      "proxy_connect_timeout 5s;",
    ]) {
      assert.ok(cfg.includes(`  ${line}\n`), `missing: ${line}`);
    }
    // No Upgrade header: no Connection header at all, so the connection to the instance stays alive.
    assert.match(cfg, /map \$http_upgrade \$pier_connection \{ default upgrade; "" ""; \}/);
  });

  test("one upstream per app, targets sorted, balanced, with keep-alive connections", () => {
    assert.ok(
      cfg.includes(
        [
          "  upstream app_app_a {",
          "    least_conn;",
          "    server 127.0.0.1:1001 max_fails=1 fail_timeout=5s;",
          "    server 127.0.0.1:1002 max_fails=1 fail_timeout=5s;",
          "    keepalive 64;",
        ].join("\n"),
      ),
    );
    assert.match(serverBlock(cfg, "a.localhost"), /listen 127\.0\.0\.1:8000;\n {4}server_name a\.localhost;/);
    assert.match(serverBlock(cfg, "a.localhost"), /location \/ \{ proxy_pass http:\/\/app_app_a; \}/);
  });

  test("an app without instances answers 503 with a page, and has no upstream", () => {
    const b = serverBlock(cfg, "b.localhost");
    assert.match(b, /return 503 "<!doctype html>.*has no running instance/);
    assert.match(b, /default_type text\/html;/);
    assert.doesNotMatch(cfg, /upstream app_app_b/);
  });

  test("unknown hosts reach the default server: 404 with a page naming the host", () => {
    const d = serverBlock(cfg, "_");
    assert.match(d, /listen 127\.0\.0\.1:8000 default_server/);
    assert.match(d, /default_type text\/html;/);
    assert.match(d, /return 404 "<!doctype html>.*No app is served at \$pier_host\./);
    // Only a plain host name is echoed into the page.
    assert.match(
      cfg,
      /map \$host \$pier_host \{ default "this address"; "~\^\[a-z0-9\.-\]\{1,253\}\$" \$host; \}/,
    );
  });

  test("the edge's version answers on its own host name", () => {
    const v = nginxConfigVersion(cfg);
    assert.match(v ?? "", /^[0-9a-f]{16}$/);
    assert.match(
      serverBlock(cfg, "pier-edge.invalid"),
      new RegExp(`/.pier/edge-version \\{ return 200 "${v}`),
    );
    assert.equal(nginxConfigVersion("worker_processes 1;"), null);
  });

  test("deterministic: the order of routes and targets, and duplicate targets, change nothing", () => {
    const shuffled = render({
      routes: [route("app-b", "b.localhost"), route("app-a", "a.localhost", 1001, 1002, 1001)],
    });
    assert.equal(shuffled, cfg);
    assert.equal(render(), cfg);
    const moved = render({ routes: [route("app-a", "a.localhost", 1003), route("app-b", "b.localhost")] });
    assert.notEqual(nginxConfigVersion(moved), nginxConfigVersion(cfg), "a new target is a new version");
  });

  test("upstream names: sanitized app ids, collisions told apart, one app at two hostnames shares one", () => {
    const text = render({
      routes: [
        route("a-b", "x.localhost", 1),
        route("a_b", "y.localhost", 2),
        route("a-b", "www.x.localhost", 1),
        route("app.1/x", "z.localhost", 3),
      ],
    });
    assert.deepEqual(
      [...text.matchAll(/^ {2}upstream (\S+) \{$/gm)].map((m) => m[1]),
      ["app_a_b", "app_a_b_1", "app_app_1_x"],
    );
    assert.match(serverBlock(text, "www.x.localhost"), /proxy_pass http:\/\/app_a_b;/);
    assert.match(serverBlock(text, "y.localhost"), /proxy_pass http:\/\/app_a_b_1;/);
  });

  test("a 253-character hostname is accepted", () => {
    const long = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`;
    assert.equal(long.length, 253);
    assert.match(render({ routes: [route("x", long, 1)] }), new RegExp(`server_name ${long};`));
  });

  const refused: [string, Partial<NginxConfigInput>, RegExp][] = [
    ["an upper-case hostname", { routes: [route("x", "Bad_Host", 1)] }, /not a valid DNS name/],
    ["a hostname with a space", { routes: [route("x", "a b", 1)] }, /not a valid DNS name/],
    ["a hostname ending a directive", { routes: [route("x", "a.localhost;", 1)] }, /not a valid DNS name/],
    ["a hostname with a variable", { routes: [route("x", "$host", 1)] }, /not a valid DNS name/],
    [
      "a hostname with a new line",
      { routes: [route("x", "a.localhost\n  server {", 1)] },
      /not a valid DNS name/,
    ],
    ["an empty label", { routes: [route("x", "a..b", 1)] }, /not a valid DNS name/],
    ["a label starting with -", { routes: [route("x", "-a.b", 1)] }, /not a valid DNS name/],
    ["a 64-character label", { routes: [route("x", `${"a".repeat(64)}.b`, 1)] }, /not a valid DNS name/],
    ["an empty hostname", { routes: [route("x", "", 1)] }, /not a valid DNS name/],
    ["the edge's own hostname", { routes: [route("x", "pier-edge.invalid", 1)] }, /edge's own/],
    [
      "a hostname routed twice",
      { routes: [route("x", "a.localhost", 1), route("y", "a.localhost", 2)] },
      /routed twice/,
    ],
    [
      "a target that is not an IP",
      { routes: [{ appId: "x", hostname: "a.localhost", targets: [{ host: "localhost", port: 1 }] }] },
      /IPv4/,
    ],
    [
      "a target with a directive",
      { routes: [{ appId: "x", hostname: "a.localhost", targets: [{ host: "10.0.0.1; evil", port: 1 }] }] },
      /IPv4/,
    ],
    [
      "a target out of range",
      { routes: [{ appId: "x", hostname: "a.localhost", targets: [{ host: "256.0.0.1", port: 1 }] }] },
      /IPv4/,
    ],
    ["port 0", { routes: [route("x", "a.localhost", 0)] }, /port 0/],
    ["port 70000", { routes: [route("x", "a.localhost", 70000)] }, /port 70000/],
    ["a fractional port", { routes: [route("x", "a.localhost", 80.5)] }, /port 80.5/],
    ["a relative prefix", { prefix: "edge" }, /prefix/],
    ["a prefix with a space", { prefix: "/var/lib/pier edge" }, /prefix/],
    ["a prefix with ..", { prefix: "/var/lib/../etc" }, /prefix/],
    ["a prefix with ;", { prefix: "/var/lib/pier;" }, /prefix/],
    ["a listen host with a directive", { listenHost: "127.0.0.1; x" }, /listen host/],
    ["listen port 0", { listenPort: 0 }, /listen port/],
    ["0 worker processes", { workerProcesses: 0 }, /worker processes/],
  ];
  for (const [what, patch, message] of refused) {
    test(`refuses ${what}`, () => {
      assert.throws(() => render(patch), message);
    });
  }
});
