import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Decision,
  decide,
  decideGit,
  type GitDecision,
  type KeyAccess,
  matchRoute,
  mayReveal,
  ROUTE_ACCESS,
  type TokenScope,
} from "../../../src/core/permissions.js";

const ADMIN: TokenScope = { app: null, readOnly: false };
const ADMIN_RO: TokenScope = { app: null, readOnly: true };
const WEB: TokenScope = { app: "app-web", readOnly: false };
const WEB_RO: TokenScope = { app: "app-web", readOnly: true };

describe("decide (API tokens)", () => {
  // [scope, method, path, app id the :app names, body fields, expected]
  const cases: [string, TokenScope, string, string, string | null, string[], Decision][] = [
    ["admin reads anything", ADMIN, "GET", "/v1/apps/other", "app-other", [], "allowed"],
    ["admin creates apps", ADMIN, "POST", "/v1/apps", null, ["name", "type"], "allowed"],
    ["admin creates tokens", ADMIN, "POST", "/v1/tokens", null, ["name"], "allowed"],
    [
      "admin sets allowDockerSocket",
      ADMIN,
      "PATCH",
      "/v1/apps/web",
      "app-web",
      ["allowDockerSocket"],
      "allowed",
    ],
    ["admin, a route not in the table", ADMIN, "POST", "/v1/new-thing", null, [], "allowed"],
    ["read-only admin reads keys", ADMIN_RO, "GET", "/v1/ssh-keys", null, [], "allowed"],
    ["read-only admin reads tokens", ADMIN_RO, "GET", "/v1/tokens", null, [], "allowed"],
    ["read-only admin cannot create apps", ADMIN_RO, "POST", "/v1/apps", null, ["name"], "forbidden"],
    [
      "read-only admin cannot set a variable",
      ADMIN_RO,
      "PUT",
      "/v1/apps/web/env/A",
      "app-web",
      [],
      "forbidden",
    ],
    ["read-only admin cannot delete", ADMIN_RO, "DELETE", "/v1/apps/web", "app-web", [], "forbidden"],
    ["app token lists apps (filtered)", WEB, "GET", "/v1/apps", null, [], "allowed"],
    ["app token reads its app", WEB, "GET", "/v1/apps/web", "app-web", [], "allowed"],
    ["app token reads its app by id", WEB, "GET", "/v1/apps/app-web/status", "app-web", [], "allowed"],
    ["app token sets its variables", WEB, "PATCH", "/v1/apps/web/env", "app-web", ["set"], "allowed"],
    ["app token scales its app", WEB, "PATCH", "/v1/apps/web", "app-web", ["instances"], "allowed"],
    ["app token restarts its app", WEB, "POST", "/v1/apps/web/deployments", "app-web", [], "allowed"],
    [
      "app token reads its deploy log",
      WEB,
      "GET",
      "/v1/apps/web/deployments/latest/log",
      "app-web",
      [],
      "allowed",
    ],
    ["app token sets its private key", WEB, "PUT", "/v1/apps/web/ssh-private-key", "app-web", [], "allowed"],
    ["app token lists its keys", WEB, "GET", "/v1/apps/web/ssh-keys", "app-web", [], "allowed"],
    ["app token reads runtimes", WEB, "GET", "/v1/runtimes/node", null, [], "allowed"],
    ["app token asks who it is", WEB, "GET", "/v1/whoami", null, [], "allowed"],
    ["app token: another app is not found", WEB, "GET", "/v1/apps/other", "app-other", [], "not found"],
    ["app token: another app's env", WEB, "GET", "/v1/apps/other/env", "app-other", [], "not found"],
    ["app token: write on another app", WEB, "DELETE", "/v1/apps/other", "app-other", [], "not found"],
    ["app token: an app that does not exist", WEB, "GET", "/v1/apps/nope", null, [], "not found"],
    ["app token cannot create apps", WEB, "POST", "/v1/apps", null, ["name"], "forbidden"],
    ["app token cannot create tokens", WEB, "POST", "/v1/tokens", null, ["name"], "forbidden"],
    ["app token cannot list tokens", WEB, "GET", "/v1/tokens", null, [], "forbidden"],
    ["app token cannot revoke tokens", WEB, "DELETE", "/v1/tokens/ci", null, [], "forbidden"],
    ["app token cannot list every key", WEB, "GET", "/v1/ssh-keys", null, [], "forbidden"],
    ["app token cannot add admin keys", WEB, "POST", "/v1/ssh-keys", null, ["publicKey"], "forbidden"],
    [
      "app token cannot grant keys on its app",
      WEB,
      "POST",
      "/v1/apps/web/ssh-keys",
      "app-web",
      [],
      "forbidden",
    ],
    ["app token cannot revoke a grant", WEB, "DELETE", "/v1/apps/web/ssh-keys/k", "app-web", [], "forbidden"],
    [
      "app token cannot set allowDockerSocket",
      WEB,
      "PATCH",
      "/v1/apps/web",
      "app-web",
      ["instances", "allowDockerSocket"],
      "forbidden",
    ],
    ["app token, a route not in the table", WEB, "GET", "/v1/new-thing", null, [], "forbidden"],
    ["read-only app token reads its app", WEB_RO, "GET", "/v1/apps/web/env", "app-web", [], "allowed"],
    ["read-only app token lists apps", WEB_RO, "GET", "/v1/apps", null, [], "allowed"],
    [
      "read-only app token cannot set variables",
      WEB_RO,
      "PATCH",
      "/v1/apps/web/env",
      "app-web",
      [],
      "forbidden",
    ],
    [
      "read-only app token cannot restart",
      WEB_RO,
      "POST",
      "/v1/apps/web/deployments",
      "app-web",
      [],
      "forbidden",
    ],
    ["read-only app token cannot stop", WEB_RO, "POST", "/v1/apps/web/stop", "app-web", [], "forbidden"],
    [
      "read-only app token cannot cancel",
      WEB_RO,
      "POST",
      "/v1/apps/web/deployments/current/cancel",
      "app-web",
      [],
      "forbidden",
    ],
    [
      "read-only app token: another app is not found, not forbidden",
      WEB_RO,
      "DELETE",
      "/v1/apps/x",
      "app-x",
      [],
      "not found",
    ],
  ];
  for (const [name, scope, method, path, appId, fields, want] of cases) {
    it(name, () => {
      const { route } = matchRoute(method, path);
      assert.equal(decide(scope, { method, route, appId, fields }), want);
    });
  }
});

describe("matchRoute", () => {
  const cases: [string, string, string | null, Record<string, string>][] = [
    ["GET", "/v1/apps", "GET /v1/apps", {}],
    ["GET", "/v1/apps/", "GET /v1/apps", {}],
    ["GET", "/v1/apps/web", "GET /v1/apps/:app", { app: "web" }],
    ["HEAD", "/v1/apps/web", "GET /v1/apps/:app", { app: "web" }],
    ["PUT", "/v1/apps/web/env/A_B", "PUT /v1/apps/:app/env/:name", { app: "web", name: "A_B" }],
    [
      "DELETE",
      "/v1/apps/web/ssh-keys/SHA256%3Aabc",
      "DELETE /v1/apps/:app/ssh-keys/:key",
      { app: "web", key: "SHA256:abc" },
    ],
    [
      "GET",
      "/v1/apps/web/deployments/latest/log",
      "GET /v1/apps/:app/deployments/:id/log",
      { app: "web", id: "latest" },
    ],
    ["POST", "/v1/apps/web", null, {}],
    ["GET", "/v1/apps//env", null, {}],
    ["GET", "/v1/apps/%E0%A4%A/env", null, {}],
  ];
  for (const [method, path, route, params] of cases) {
    it(`${method} ${path}`, () => {
      assert.deepEqual(matchRoute(method, path), { route, params });
    });
  }
  it("every pattern of the table is well formed", () => {
    for (const key of Object.keys(ROUTE_ACCESS))
      assert.match(key, /^(GET|POST|PUT|PATCH|DELETE) \/v1(\/[:a-z0-9.-]+)+$/);
  });
});

describe("decideGit (SSH keys)", () => {
  const admin: KeyAccess = { global: true, readOnly: false, apps: [] };
  const adminRo: KeyAccess = { global: true, readOnly: true, apps: [] };
  const onWeb: KeyAccess = {
    global: false,
    readOnly: false,
    apps: [{ id: "app-web", readOnly: false }],
  };
  const webRo: KeyAccess = {
    global: false,
    readOnly: false,
    apps: [
      { id: "app-web", readOnly: true },
      { id: "app-api", readOnly: false },
    ],
  };
  const cases: [string, KeyAccess, string | null, "fetch" | "push", GitDecision][] = [
    ["admin key pushes any app", admin, "app-other", "push", "allowed"],
    ["admin key fetches any app", admin, "app-other", "fetch", "allowed"],
    ["read-only admin key fetches", adminRo, "app-other", "fetch", "allowed"],
    ["read-only admin key cannot push", adminRo, "app-other", "push", "read-only"],
    ["app key pushes its app", onWeb, "app-web", "push", "allowed"],
    ["app key fetches its app", onWeb, "app-web", "fetch", "allowed"],
    ["app key cannot fetch another app", onWeb, "app-other", "fetch", "no access"],
    ["app key cannot push another app", onWeb, "app-other", "push", "no access"],
    ["app key, no such app", onWeb, null, "fetch", "no access"],
    ["read-only grant fetches", webRo, "app-web", "fetch", "allowed"],
    ["read-only grant cannot push", webRo, "app-web", "push", "read-only"],
    ["the same key pushes where it is granted push", webRo, "app-api", "push", "allowed"],
    [
      "a key with no grants reaches nothing",
      { global: false, readOnly: false, apps: [] },
      "app-web",
      "fetch",
      "no access",
    ],
  ];
  for (const [name, key, appId, op, want] of cases) {
    it(name, () => assert.equal(decideGit(key, appId, op), want));
  }
});

describe("mayReveal (ADR 0024)", () => {
  const cases: [string, { app: string | null; readOnly: boolean }, boolean][] = [
    ["admin", { app: null, readOnly: false }, true],
    ["read-only admin (auditor)", { app: null, readOnly: true }, false],
    ["app token", { app: "app-1", readOnly: false }, true],
    ["read-only app token", { app: "app-1", readOnly: true }, false],
  ];
  for (const [who, scope, want] of cases) it(`${who}: ${want}`, () => assert.equal(mayReveal(scope), want));
});
