// A call is typed by its route key (core/api/call.ts, ADR 0026): the URL comes from the table's key, and a
// wrong parameter, query field or body does not compile (each @ts-expect-error below fails the build the
// day the mistake it marks compiles).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type CallArgs, type ReplyOf, type RouteEvent, routeUrl } from "../../../src/core/api/call.js";
import type { RouteKey } from "../../../src/core/api/routes.js";

describe("routeUrl", () => {
  const cases: [RouteKey, Parameters<typeof routeUrl>[1], string, string][] = [
    ["GET /v1/info", {}, "GET", "/v1/info"],
    ["GET /v1/apps/:app/status", { params: { app: "web" } }, "GET", "/v1/apps/web/status"],
    [
      "DELETE /v1/apps/:app/ssh-keys/:key",
      { params: { app: "web", key: "SHA256:a/b+c" } },
      "DELETE",
      "/v1/apps/web/ssh-keys/SHA256%3Aa%2Fb%2Bc",
    ],
    [
      "GET /v1/apps/:app/logs",
      { params: { app: "web" }, query: { tail: 200, since: undefined, follow: true } },
      "GET",
      "/v1/apps/web/logs?tail=200&follow=true",
    ],
    ["GET /v1/addons/:addon/env", { params: { addon: "a b" }, query: {} }, "GET", "/v1/addons/a%20b/env"],
  ];
  for (const [key, opts, method, url] of cases) {
    it(`${key} -> ${url}`, () => assert.deepEqual(routeUrl(key, opts), { method, url }));
  }

  it("a parameter left out is the caller's bug, said at once", () => {
    assert.throws(
      () => routeUrl("GET /v1/apps/:app", {}),
      /GET \/v1\/apps\/:app: the parameter :app is missing/,
    );
  });
});

describe("a call's types come from its route", () => {
  const call = <K extends RouteKey>(_key: K, ..._args: CallArgs<K>): ReplyOf<K> | undefined => undefined;

  it("accepts what the route declares", () => {
    call("GET /v1/info");
    call("PUT /v1/apps/:app/env/:name", { params: { app: "web", name: "A" }, body: { value: "1" } });
    call("GET /v1/apps/:app/env", { params: { app: "web" }, query: { reveal: true } });
    call("POST /v1/apps", { body: { name: "web", type: "node", flavor: "S" } });
    const appOf = (s: ReplyOf<"GET /v1/apps/:app/status">): string => s.app.name;
    assert.equal(typeof appOf, "function");
    const gone: ReplyOf<"DELETE /v1/apps/:app"> = undefined;
    const log: ReplyOf<"GET /v1/apps/:app/deployments/:id/log"> = "text";
    const end: RouteEvent<"GET /v1/apps/:app/deployments/:id/log"> = {
      event: "data",
      data: { at: "", line: "Building" },
    };
    assert.deepEqual([gone, log, end.event], [undefined, "text", "data"]);
  });

  it("refuses what it does not", () => {
    // @ts-expect-error: no such route.
    call("GET /v1/app/:app");
    // @ts-expect-error: the path's parameter :name is missing.
    call("PUT /v1/apps/:app/env/:name", { params: { app: "web" }, body: { value: "1" } });
    // @ts-expect-error: the body's field is `value`.
    call("PUT /v1/apps/:app/env/:name", { params: { app: "web", name: "A" }, body: { val: "1" } });
    // @ts-expect-error: the route reads a body.
    call("POST /v1/apps/:app/domains", { params: { app: "web" } });
    // @ts-expect-error: the route reads no body.
    call("POST /v1/apps/:app/stop", { params: { app: "web" }, body: {} });
    // @ts-expect-error: the route reads no `tail`.
    call("GET /v1/apps/:app/env", { params: { app: "web" }, query: { tail: 1 } });
    // @ts-expect-error: not a flavor.
    call("POST /v1/apps", { body: { name: "web", type: "node", flavor: "huge" } });
    // @ts-expect-error: the runtime logs' stream has no end event.
    const end: RouteEvent<"GET /v1/apps/:app/logs"> = { event: "end", data: { at: "", line: "" } };
    assert.ok(end);
  });
});
