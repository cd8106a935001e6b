import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  configVersion,
  type EdgeLayout,
  hostCommand,
  layoutFor,
  partitionRoutes,
  planRuntimeSwitch,
  renderHaproxyConfig,
  renderHostsMap,
  runtimeCommands,
  TLS12_CIPHERS,
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
    [[route("x", "a.localhost", 1), route("y", "a.localhost", 2)], /routed to x already/],
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

describe("partitionRoutes: one app's bad route never blocks the others", () => {
  const cases: [string, Route[], string[], RegExp | null][] = [
    ["all good", [route("a", "a.localhost", 1), route("b", "b.localhost", 2)], ["a", "b"], null],
    [
      "a trailing '-' label",
      [route("x", "x-.localhost", 1), route("b", "b.localhost", 2)],
      ["b"],
      /label 'x-'/,
    ],
    [
      "a leading '-' label",
      [route("x", "-x.localhost", 1), route("b", "b.localhost", 2)],
      ["b"],
      /label '-x'/,
    ],
    [
      "a 64-character label",
      [route("x", `${"a".repeat(64)}.localhost`, 1), route("b", "b.localhost", 2)],
      ["b"],
      /not a valid DNS/,
    ],
    [
      "a host name over 253",
      [route("x", `${"a.".repeat(127)}localhost`, 1), route("b", "b.localhost", 2)],
      ["b"],
      /1-253/,
    ],
    [
      "a duplicate host name",
      [route("a", "a.localhost", 1), route("y", "a.localhost", 2)],
      ["a"],
      /routed to a already/,
    ],
    [
      "a bad target",
      [
        { appId: "x", hostname: "x.localhost", targets: [{ host: "::1", port: 1 }] },
        route("b", "b.localhost", 2),
      ],
      ["b"],
      /IPv4/,
    ],
  ];
  for (const [name, routes, kept, reason] of cases) {
    test(name, () => {
      const { ok, skipped } = partitionRoutes(routes);
      assert.deepEqual(
        ok.map((r) => r.appId),
        kept,
      );
      if (reason) {
        assert.equal(skipped.length, 1);
        assert.match(skipped[0]?.reason ?? "", reason);
      } else assert.deepEqual(skipped, []);
      // What is kept, the edge takes.
      assert.doesNotThrow(() => layoutFor(ok));
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
  const tlsInput = () => ({
    layout,
    listenHost: "0.0.0.0",
    listenPort: 8000,
    dir: "/d",
    https: { host: "0.0.0.0", port: 8443 },
  });
  const cfg = renderHaproxyConfig({
    layout,
    listenHost: "0.0.0.0",
    listenPort: 8000,
    dir: "/var/lib/pier/edge",
  });
  test("routes by Host through the hosts map, forwards the proto, answers unknown hosts 404", () => {
    assert.match(cfg, /bind 0\.0\.0\.0:8000/);
    assert.match(cfg, /map\(\/var\/lib\/pier\/edge\/hosts\.map\)/);
    assert.doesNotMatch(cfg, /option forwardfor/, "it appended to a client's X-Forwarded-For");
    assert.match(cfg, /set-header X-Forwarded-Proto http/);
    assert.match(cfg, /backend no_app\n {2}http-request return status 404/);
    assert.equal(renderHostsMap(layout), "a.localhost app_app_a\nb.localhost app_app_b\n");
  });
  // Each frontend replaces what a client says about its address and scheme with what the edge saw (ADR 0024).
  const forwarded: [string, "http" | "https", RegExp][] = [
    ["X-Forwarded-For", "http", /http-request set-header X-Forwarded-For %\[src\]\n/],
    ["X-Real-IP", "http", /http-request set-header X-Real-IP %\[src\]\n/],
    ["Forwarded", "http", /http-request set-header Forwarded for=%\[src\];proto=http\n/],
    ["X-Forwarded-Proto", "http", /http-request set-header X-Forwarded-Proto http\n/],
    ["X-Forwarded-For", "https", /http-request set-header X-Forwarded-For %\[src\]\n/],
    ["X-Real-IP", "https", /http-request set-header X-Real-IP %\[src\]\n/],
    ["Forwarded", "https", /http-request set-header Forwarded for=%\[src\];proto=https\n/],
    ["X-Forwarded-Proto", "https", /http-request set-header X-Forwarded-Proto https\n/],
  ];
  const both = renderHaproxyConfig({
    layout,
    listenHost: "0.0.0.0",
    listenPort: 8000,
    dir: "/d",
    https: { host: "0.0.0.0", port: 8443 },
  });
  const frontend = (c: string, name: string) => {
    const start = c.indexOf(`frontend ${name}\n`);
    return c.slice(start, c.indexOf("\n\n", start));
  };
  for (const [header, proto, line] of forwarded) {
    test(`the ${proto} frontend sets ${header} itself, whatever the client sent`, () => {
      assert.match(frontend(both, proto === "http" ? "edge" : "edge_tls"), line);
    });
  }
  const limits: [string, number | undefined, string][] = [
    ["the default", undefined, "gt 256 }"],
    ["a setting of 50", 50, "gt 50 }"],
    ["a setting of 1", 1, "gt 1 }"],
  ];
  for (const [why, max, rule] of limits) {
    test(`both frontends count connections per source and refuse past the cap: ${why}`, () => {
      const c = renderHaproxyConfig({ ...tlsInput(), maxConnPerSource: max });
      for (const name of ["edge", "edge_tls"]) {
        const f = frontend(c, name);
        assert.match(f, /tcp-request connection track-sc0 src,ipmask\(32,64\) table per_source\n/);
        assert.ok(f.includes(`tcp-request connection reject if { sc0_conn_cur(per_source) ${rule}`), f);
        assert.ok(f.indexOf("track-sc0") < f.indexOf("http-request"), "counted before any request is read");
      }
      assert.match(c, /backend per_source\n {2}stick-table type ipv6 size 100k expire 60s store conn_cur\n/);
    });
  }
  const badLimits: [string, number][] = [
    ["zero", 0],
    ["negative", -1],
    ["fractional", 1.5],
  ];
  for (const [why, max] of badLimits) {
    test(`refuses a per-source cap that is ${why}`, () => {
      assert.throws(
        () => renderHaproxyConfig({ ...tlsInput(), maxConnPerSource: max }),
        /connections per source must be a positive integer/,
      );
    });
  }
  test("changing the per-source cap changes the served version (a reload applies it)", () => {
    const v = (max: number) => configVersion(renderHaproxyConfig({ ...tlsInput(), maxConnPerSource: max }));
    assert.notEqual(v(50), v(51));
    assert.equal(v(50), v(50));
  });
  test("new client connections take idle connections to the app; only idempotent requests are retried", () => {
    assert.match(cfg, /\n {2}http-reuse always\n {2}retry-on conn-failure empty-response\n/);
    assert.match(
      cfg,
      /frontend edge\n(.*\n)* {2}http-request disable-l7-retry unless \{ method GET HEAD OPTIONS PUT DELETE \}\n/,
    );
  });
  test("TLS 1.2 ciphers: ECDHE with AEAD only, and only with the HTTPS frontend", () => {
    assert.doesNotMatch(cfg, /ssl-default-bind-ciphers/);
    const tls = renderHaproxyConfig({
      layout,
      listenHost: "0.0.0.0",
      listenPort: 8000,
      dir: "/d",
      https: { host: "0.0.0.0", port: 8443 },
    });
    const list = /ssl-default-bind-ciphers (\S+)/.exec(tls)?.[1] ?? "";
    assert.equal(list, TLS12_CIPHERS);
    for (const c of list.split(":"))
      assert.match(c, /^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/);
  });
  test("empty slots are disabled; an app without instances answers 503", () => {
    assert.match(cfg, /server s0 127\.0\.0\.1:1001\n {2}server s1 127\.0\.0\.1:1 disabled/);
    assert.match(
      cfg,
      /backend app_app_b\n {2}balance roundrobin\n {2}http-error status 503 content-type text\/html string "[^"]*App not running/,
    );
    assert.doesNotMatch(cfg, /nbsrv/, "no rule on nbsrv: the old process of a reload counts 0 servers");
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

describe("custom domains and HTTPS (ADR 0018)", () => {
  const withDomains = (
    appId: string,
    hostname: string,
    aliases: string[],
    forceHttps = false,
    ...ports: number[]
  ) => ({
    ...route(appId, hostname, ...ports),
    aliases,
    forceHttps,
  });
  const https = { host: "0.0.0.0", port: 8443 };
  const render = (routes: Route[], tls: { host: string; port: number } | null = https) =>
    renderHaproxyConfig({
      layout: layoutFor(routes),
      listenHost: "0.0.0.0",
      listenPort: 8000,
      dir: "/e",
      https: tls ?? undefined,
    });

  test("the hosts map routes every domain of an app to its backend, sorted", () => {
    const l = layoutFor([withDomains("app-a", "a.localhost", ["www.z.test", "a.test"], false, 1)]);
    assert.equal(renderHostsMap(l), "a.localhost app_app_a\na.test app_app_a\nwww.z.test app_app_a\n");
  });
  test("the HTTPS frontend: crt-list after a default certificate, HTTP/2 by ALPN, TLS 1.2 and up, proto https", () => {
    const cfg = render([withDomains("app-a", "a.localhost", ["www.a.test"], false, 1)]);
    const tls = cfg.slice(cfg.indexOf("frontend edge_tls"), cfg.indexOf("\nbackend no_app"));
    assert.match(
      tls,
      /bind 0\.0\.0\.0:8443 ssl crt \/e\/tls\/default\.pem crt-list \/e\/tls\/certs\.list alpn h2,http\/1\.1 ssl-min-ver TLSv1\.2\n/,
    );
    assert.match(tls, /set-header X-Forwarded-Proto https\n/);
    assert.match(tls, /use_backend %\[req\.hdr\(host\),field\(1,:\),lower,map\(\/e\/hosts\.map\)\]/);
    const http = cfg.slice(cfg.indexOf("frontend edge\n"), cfg.indexOf("frontend edge_tls"));
    assert.match(http, /set-header X-Forwarded-Proto http\n/);
    // HTTP-01 answers come from the runtime-updated map, before any routing or redirect.
    assert.match(
      http,
      /http-request return status 200 content-type text\/plain lf-string "%\[path,field\(4,\/\),map\(\/e\/acme\.map\)\]" if \{ path_beg \/\.well-known\/acme-challenge\/ \}/,
    );
    assert.ok(http.indexOf("acme-challenge") < http.indexOf("use_backend"));
  });
  test("without HTTPS settings: no TLS frontend, no ACME map", () => {
    const cfg = render([withDomains("app-a", "a.localhost", [], true, 1)], null);
    assert.doesNotMatch(cfg, /edge_tls|acme\.map|redirect/);
  });
  test("CC_FORCE_HTTPS: the app's backend redirects plain HTTP, with the HTTPS port unless 443", () => {
    const cfg = render([
      withDomains("app-a", "a.localhost", [], true, 1),
      withDomains("app-b", "b.localhost", [], false, 2),
    ]);
    const a = cfg.slice(cfg.indexOf("backend app_app_a"), cfg.indexOf("backend app_app_b"));
    assert.match(
      a,
      /http-request redirect location https:\/\/%\[req\.hdr\(host\),field\(1,:\)\]:8443%\[capture\.req\.uri\] code 301 unless \{ ssl_fc \}/,
    );
    assert.doesNotMatch(cfg.slice(cfg.indexOf("backend app_app_b")), /redirect/);
    const on443 = render([withDomains("app-a", "a.localhost", [], true, 1)], { host: "0.0.0.0", port: 443 });
    assert.match(on443, /location https:\/\/%\[req\.hdr\(host\),field\(1,:\)\]%\[capture\.req\.uri\]/);
  });
  test("the served version changes with the redirect and the HTTPS port, not with the domains", () => {
    const v = (routes: Route[], tls = https) => configVersion(render(routes, tls));
    const base = v([withDomains("app-a", "a.localhost", [], false, 1)]);
    assert.equal(
      v([withDomains("app-a", "a.localhost", ["a.test"], false, 1)]),
      base,
      "domains are map lines",
    );
    assert.notEqual(v([withDomains("app-a", "a.localhost", [], true, 1)]), base);
    assert.notEqual(
      v([withDomains("app-a", "a.localhost", [], false, 1)], { host: "0.0.0.0", port: 9443 }),
      base,
    );
    assert.equal(v([withDomains("app-a", "a.localhost", [], false, 9)]), base, "instances are not structure");
  });
  test("a change of domains is a few map lines at runtime, whatever the number of apps; a redirect is a reload", () => {
    const others = Array.from({ length: 300 }, (_, i) =>
      withDomains(`app-x${i}`, `x${i}.localhost`, [`x${i}.test`], false, 5000 + i),
    );
    const current = layoutFor([withDomains("app-a", "a.localhost", ["a.test"], false, 1), ...others]);
    const added = planRuntimeSwitch(current, [
      withDomains("app-a", "a.localhost", ["a.test", "b.test"], false, 1),
      ...others,
    ]);
    assert.deepEqual(added?.hosts, [{ op: "add", host: "b.test", backend: "app_app_a" }]);
    assert.deepEqual(added?.steps, []);
    assert.deepEqual(
      added?.hosts.map((h) => hostCommand(h, "/e/hosts.map")),
      ["add map /e/hosts.map b.test app_app_a"],
    );
    assert.deepEqual(
      added?.layout.backends.find((b) => b.appId === "app-a")?.aliases,
      ["a.test", "b.test"],
      "the layout (and the hosts map file written from it) has the new domain",
    );
    const removed = planRuntimeSwitch(current, [
      withDomains("app-a", "a.localhost", [], false, 1),
      ...others,
    ]);
    assert.deepEqual(removed?.hosts, [{ op: "del", host: "a.test", backend: "app_app_a" }]);
    // A domain moving from one app to another: taken out first, then put in.
    const moved = planRuntimeSwitch(current, [
      withDomains("app-a", "a.localhost", ["x0.test", "a.test"], false, 1),
      withDomains("app-x0", "x0.localhost", [], false, 5000),
      ...others.slice(1),
    ]);
    assert.deepEqual(
      moved?.hosts.map((h) => hostCommand(h, "m")),
      ["del map m x0.test", "add map m x0.test app_app_a"],
    );
    assert.equal(
      planRuntimeSwitch(current, [withDomains("app-a", "a.localhost", ["a.test"], true, 1), ...others]),
      null,
    );
    assert.notEqual(
      planRuntimeSwitch(current, [withDomains("app-a", "a.localhost", ["a.test"], false, 2), ...others]),
      null,
    );
    // A layout written before domains existed (no aliases field) equals one without domains.
    const old: EdgeLayout = { backends: [{ appId: "app-a", hostname: "a.localhost", slots: [t(1), null] }] };
    assert.notEqual(planRuntimeSwitch(old, [route("app-a", "a.localhost", 2)]), null);
  });
  test("a domain routed twice, or invalid, skips that app's route only", () => {
    const { ok, skipped } = partitionRoutes([
      withDomains("app-a", "a.localhost", ["x.test"], false, 1),
      withDomains("app-b", "b.localhost", ["x.test"], false, 2),
      withDomains("app-c", "c.localhost", ["bad_name.test"], false, 3),
      withDomains("app-d", "d.localhost", ["a.localhost"], false, 4),
    ]);
    assert.deepEqual(
      ok.map((r) => r.appId),
      ["app-a"],
    );
    assert.deepEqual(
      skipped.map((s) => [s.appId, s.reason]),
      [
        ["app-b", "hostname 'x.test' is routed to app-a already"],
        ["app-c", "hostname 'bad_name.test' is not a valid DNS name (label 'bad_name')"],
        ["app-d", "hostname 'a.localhost' is routed to app-a already"],
      ],
    );
  });
  test("the HTTPS port must differ from the HTTP port", () => {
    assert.throws(
      () => render([route("app-a", "a.localhost")], { host: "0.0.0.0", port: 8000 }),
      /https port/,
    );
  });
});
