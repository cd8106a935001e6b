import { z } from "zod";
import { ErrorBody } from "../core/api/records.js";
import { type Answer, ROUTE_KEYS, ROUTES, type RouteSpec, splitKey } from "../core/api/routes.js";

/** `METHOD /v1/path/:param` of every route the document describes (the table's keys). */
export const documentedRoutes = (): string[] => [...ROUTE_KEYS];

const schemaOf = (s: z.core.$ZodType) => z.toJSONSchema(s, { unrepresentable: "any" });

/** The content of one answer: JSON, text, or an event stream whose `data:` is described. */
function content(a: Answer): Record<string, object> | undefined {
  const out: Record<string, object> = {};
  if (a.json) out["application/json"] = { schema: schemaOf(a.json) };
  if (a.text) out["text/plain"] = { schema: { type: "string" } };
  if (a.sse)
    out["text/event-stream"] = {
      schema: { type: "string", description: "Server-sent events; each `data:` is x-event-data" },
      "x-event-data": schemaOf(a.sse),
    };
  return Object.keys(out).length > 0 ? out : undefined;
}

function operation(spec: RouteSpec, path: string): object {
  const params = [...path.matchAll(/:(\w+)/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const query = Object.entries(spec.query?.shape ?? {}).map(([name, s]) => ({
    name,
    in: "query",
    required: false,
    schema: schemaOf(s),
  }));
  const responses: Record<string, object> = {};
  for (const [status, a] of Object.entries(spec.responses)) {
    const c = content(a);
    responses[status] = {
      description: status === "204" ? "No content" : "Success",
      ...(c ? { content: c } : {}),
    };
  }
  responses.default = {
    description: "Error",
    content: { "application/json": { schema: schemaOf(ErrorBody) } },
  };
  return {
    summary: spec.summary,
    parameters: [...params, ...query],
    responses,
    ...(spec.body
      ? { requestBody: { required: true, content: { "application/json": { schema: schemaOf(spec.body) } } } }
      : {}),
    ...(spec.access === "public" ? { security: [] } : {}),
  };
}

/** The OpenAPI 3.1 document of the route table (`GET /v1/openapi.json`). */
export function buildOpenApi(version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const key of ROUTE_KEYS) {
    const { method, path } = splitKey(key);
    const oaPath = path.replace(/:(\w+)/g, "{$1}");
    paths[oaPath] = { ...(paths[oaPath] ?? {}), [method.toLowerCase()]: operation(ROUTES[key], path) };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Pier management API", version },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    paths,
  };
}
