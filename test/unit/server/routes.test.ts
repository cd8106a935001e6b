// The one route table (ADR 0026): the server registers exactly its routes, the permission table and the
// OpenAPI document are its, and docs/api.md lists exactly them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ROUTE_KEYS } from "../../../src/core/api/routes.js";
import { ROUTE_ACCESS } from "../../../src/core/permissions.js";
import type { buildOpenApi } from "../../../src/server/openapi.js";
import { type ApiOverFakes, apiOverFakes } from "./api-setup.js";

const PUBLIC = new Set(["GET /v1/info", "GET /v1/openapi.json"]);
const API_MD = fileURLToPath(new URL("../../../../docs/api.md", import.meta.url));

/** `METHOD /v1/path` of each row of docs/api.md's Routes table. */
function documented(): string[] {
  const md = readFileSync(API_MD, "utf8");
  const section = md.slice(md.indexOf("## Routes"));
  return [...section.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| (\S+) \|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

describe("the API's routes", () => {
  let s: ApiOverFakes;
  let registered: string[] = [];
  before(async () => {
    s = await apiOverFakes();
    registered = [
      ...new Set(
        s.api.routes
          .filter((r) => r.method !== "ALL" && r.path.startsWith("/v1/"))
          .map((r) => `${r.method} ${r.path}`),
      ),
    ];
  });
  after(() => s.close());

  it("the server registers exactly the table's routes", () => {
    assert.ok(registered.length > 50, "the routes were read");
    assert.deepEqual([...registered].sort(), [...ROUTE_KEYS].sort());
  });

  it("every route that needs a token is in the permission table, and the table has no stale entry", () => {
    const guarded = registered.filter((r) => !PUBLIC.has(r)).sort();
    assert.deepEqual(guarded, Object.keys(ROUTE_ACCESS).sort());
  });

  it("docs/api.md lists exactly the table's routes, each once", () => {
    const rows = documented();
    assert.equal(new Set(rows).size, rows.length, "no route is listed twice");
    assert.deepEqual([...rows].sort(), [...ROUTE_KEYS].sort());
  });

  it("the OpenAPI document has every route, with the schema of its answers", async () => {
    const r = await s.api.request("/v1/openapi.json");
    assert.equal(r.status, 200);
    const doc = (await r.json()) as ReturnType<typeof buildOpenApi> & {
      paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
    };
    const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    assert.deepEqual(ops.sort(), [...ROUTE_KEYS].sort());
    const app = doc.paths["/v1/apps/{app}"]?.get?.responses["200"]?.content as {
      "application/json": { schema: { properties: Record<string, unknown>; required: string[] } };
    };
    assert.ok(
      app["application/json"].schema.required.includes("gitUrl"),
      "GET /v1/apps/{app} names App's fields",
    );
    assert.deepEqual(Object.keys(doc.paths["/v1/apps/{app}"]?.delete?.responses ?? {}), ["204", "default"]);
  });
});
