// Every API route is guarded on purpose: each one the server registers has its entry in the permission
// table (src/core/permissions.ts) and in the OpenAPI document, and the table holds no route that is gone.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { ROUTE_ACCESS } from "../../../src/core/permissions.js";
import type { Store } from "../../../src/core/ports.js";
import type { AddonService } from "../../../src/server/addons.js";
import { createApi } from "../../../src/server/api.js";
import type { AppService } from "../../../src/server/apps.js";
import type { DeployLogs } from "../../../src/server/deploy-logs.js";
import type { DomainService } from "../../../src/server/domains.js";
import type { AppLimits } from "../../../src/server/limits.js";
import { documentedRoutes } from "../../../src/server/openapi.js";

const PUBLIC = new Set(["GET /v1/info", "GET /v1/openapi.json"]);

describe("the API's routes", () => {
  // Registering routes calls none of the dependencies.
  const api = createApi({
    store: {} as Store,
    apps: {} as AppService,
    addons: {} as AddonService,
    domains: {} as DomainService,
    logs: {} as DeployLogs,
    limits: {} as AppLimits,
    logger: pino({ level: "silent" }),
    nodeVersions: async () => [],
    info: {
      version: "0",
      domain: "localhost",
      httpPort: 80,
      httpsPort: 443,
      sshPort: 22,
      gitHost: "localhost",
    },
    maxBodyBytes: 2 ** 20,
  });
  const registered = [
    ...new Set(
      api.routes
        .filter((r) => r.method !== "ALL" && r.path.startsWith("/v1/"))
        .map((r) => `${r.method} ${r.path}`),
    ),
  ];

  it("every route that needs a token is in the permission table, and the table has no stale entry", () => {
    assert.ok(registered.length > 30, "the routes were read");
    const guarded = registered.filter((r) => !PUBLIC.has(r)).sort();
    assert.deepEqual(guarded, Object.keys(ROUTE_ACCESS).sort());
  });

  it("every route is in the OpenAPI document", () => {
    assert.deepEqual([...registered].sort(), [...documentedRoutes()].sort());
  });
});
