import { z } from "zod";
import { addonSchemas } from "./addon-routes.js";
import { domainSchemas } from "./domain-routes.js";
import { schemas } from "./schemas.js";

type Method = "get" | "post" | "put" | "patch" | "delete";
interface RouteDoc {
  method: Method;
  path: string;
  summary: string;
  body?: z.ZodType;
  status?: number;
  query?: string[];
  auth?: false;
}

/** Every route of the API, in the order of docs/api.md. Kept next to the schemas the server validates with. */
const ROUTES: RouteDoc[] = [
  { method: "get", path: "/v1/info", summary: "Server facts: version, domain, ports", auth: false },
  { method: "get", path: "/v1/openapi.json", summary: "This document", auth: false },
  { method: "get", path: "/v1/apps", summary: "List apps, each with its status (state, release, instances)" },
  { method: "post", path: "/v1/apps", summary: "Create an app", body: schemas.createApp, status: 201 },
  { method: "get", path: "/v1/apps/{app}", summary: "One app, by name or id" },
  { method: "patch", path: "/v1/apps/{app}", summary: "Scale or change an app", body: schemas.patchApp },
  { method: "delete", path: "/v1/apps/{app}", summary: "Delete an app and everything it runs", status: 204 },
  { method: "get", path: "/v1/apps/{app}/status", summary: "Release, instances, crashes, TCP port" },
  { method: "post", path: "/v1/apps/{app}/stop", summary: "Stop every instance" },
  {
    method: "get",
    path: "/v1/apps/{app}/env",
    summary:
      "The app's variables and its links', secret values masked unless reveal=true (not for read-only tokens: 403)",
    query: ["reveal"],
  },
  {
    method: "patch",
    path: "/v1/apps/{app}/env",
    summary: "Set and unset variables, all or nothing",
    body: schemas.patchEnv,
  },
  { method: "put", path: "/v1/apps/{app}/env/{name}", summary: "Set one variable", body: schemas.putEnv },
  { method: "delete", path: "/v1/apps/{app}/env/{name}", summary: "Remove one variable", status: 204 },
  {
    method: "get",
    path: "/v1/apps/{app}/limits",
    summary:
      "The app's ceiling (largest flavor, instances, memory) in force, what an admin set, the server's defaults, the app's use, and the caps on variables",
  },
  {
    method: "patch",
    path: "/v1/apps/{app}/limits",
    summary: "Set the app's ceiling (admin token; null: the server's default)",
    body: schemas.patchLimits,
  },
  {
    method: "get",
    path: "/v1/apps/{app}/releases",
    summary: "Releases, newest first (the current one marked)",
  },
  {
    method: "post",
    path: "/v1/apps/{app}/releases/{number}/rollback",
    summary: "Redeploy a kept release's image",
    status: 202,
  },
  { method: "get", path: "/v1/apps/{app}/deployments", summary: "Deployments, newest first" },
  {
    method: "post",
    path: "/v1/apps/{app}/deployments",
    summary: "Redeploy the current commit",
    body: schemas.deploy,
    status: 202,
  },
  { method: "get", path: "/v1/apps/{app}/deployments/{id}", summary: "One deployment (`latest` allowed)" },
  {
    method: "get",
    path: "/v1/apps/{app}/deployments/{id}/log",
    summary: "Its log; `follow=true` streams SSE",
    query: ["follow"],
  },
  { method: "post", path: "/v1/apps/{app}/deployments/{id}/cancel", summary: "Cancel (`current` allowed)" },
  {
    method: "get",
    path: "/v1/apps/{app}/logs",
    summary: "Runtime logs of the instances",
    query: ["since", "until", "tail", "follow"],
  },
  {
    method: "get",
    path: "/v1/runtimes/node",
    summary: "Node.js versions available, LTS and end-of-life marked",
  },
  {
    method: "get",
    path: "/v1/apps/{app}/ssh-private-key",
    summary: "The app's private SSH key for builds: type, fingerprint and public half (never the key)",
  },
  {
    method: "put",
    path: "/v1/apps/{app}/ssh-private-key",
    summary:
      "Set the app's private SSH key (stored encrypted) used by builds to fetch private git dependencies",
    body: schemas.putPrivateKey,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/ssh-private-key",
    summary: "Remove the app's private SSH key",
    status: 204,
  },
  { method: "get", path: "/v1/ssh-keys", summary: "Every SSH key with its scope (admin token)" },
  {
    method: "post",
    path: "/v1/ssh-keys",
    summary: "Register an admin SSH key: every app (readOnly: may fetch, not push; a deploy key)",
    body: schemas.addKey,
    status: 201,
  },
  {
    method: "delete",
    path: "/v1/ssh-keys/{key}",
    summary: "Remove a key everywhere (id, fingerprint or name)",
    status: 204,
  },
  { method: "get", path: "/v1/apps/{app}/ssh-keys", summary: "The SSH keys granted on the app" },
  {
    method: "post",
    path: "/v1/apps/{app}/ssh-keys",
    summary:
      "Grant an SSH key on this app only (admin token; 201 new grant, 200 changed readOnly; 409 for an admin key)",
    body: schemas.addKey,
    status: 201,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/ssh-keys/{key}",
    summary: "Remove a key's grant on the app (admin token); a key left with no app is removed",
    status: 204,
  },
  { method: "get", path: "/v1/whoami", summary: "The token in use: name, scope" },
  { method: "get", path: "/v1/tokens", summary: "API tokens: name, scope, created (never the token)" },
  {
    method: "post",
    path: "/v1/tokens",
    summary: "Create an API token (admin token); the answer holds the token, shown this once",
    body: schemas.createToken,
    status: 201,
  },
  { method: "delete", path: "/v1/tokens/{name}", summary: "Revoke a token (admin token)", status: 204 },
  {
    method: "get",
    path: "/v1/addons",
    summary: "Add-ons with the apps linked to each (an app's token: those linked to its app)",
  },
  {
    method: "post",
    path: "/v1/addons",
    summary: "Create an add-on (kv or postgresql; admin token), optionally linked to apps",
    body: addonSchemas.createAddon,
    status: 201,
  },
  {
    method: "get",
    path: "/v1/addons/{addon}",
    summary:
      "An add-on's status: state (running once its linked apps reach it; joining while it joins them), host, port, networks, and per linked app whether it reaches it (joins)",
  },
  {
    method: "delete",
    path: "/v1/addons/{addon}",
    summary: "Delete an add-on and its data (admin token); 409 while linked unless force=true",
    query: ["force"],
    status: 204,
  },
  {
    method: "get",
    path: "/v1/addons/{addon}/env",
    summary: "The variables a link to the add-on injects, secret values masked unless reveal=true",
    query: ["reveal"],
  },
  { method: "get", path: "/v1/addons/{addon}/backups", summary: "The add-on's backups, newest first" },
  {
    method: "post",
    path: "/v1/addons/{addon}/backups",
    summary:
      "Back the add-on up now (pg_dump, or a kv snapshot; admin token); 409 ADDON_NOT_RUNNING when it is stopped",
    status: 201,
  },
  {
    method: "post",
    path: "/v1/addons/{addon}/backups/{backup}/restore",
    summary:
      "Replace the add-on's data by a backup of it (admin token); a failed restore changes nothing; 409 ADDON_NOT_RUNNING when it is stopped",
  },
  { method: "get", path: "/v1/apps/{app}/links", summary: "The add-ons and apps an app is linked to" },
  {
    method: "post",
    path: "/v1/apps/{app}/links/addons",
    summary: "Link an add-on (admin token): the next deploy or restart gets its variables",
    body: addonSchemas.linkAddon,
    status: 201,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/links/addons/{addon}",
    summary: "Unlink an add-on (from the next deploy or restart)",
    status: 204,
  },
  {
    method: "post",
    path: "/v1/apps/{app}/links/apps",
    summary: "Link another app (admin token): the next deploy or restart gets its published variables",
    body: addonSchemas.linkApp,
    status: 201,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/links/apps/{target}",
    summary: "Unlink an app (from the next deploy or restart)",
    status: 204,
  },
  {
    method: "get",
    path: "/v1/apps/{app}/published-config",
    summary: "What the app publishes to apps linked to it, secret values masked unless reveal=true",
    query: ["reveal"],
  },
  {
    method: "put",
    path: "/v1/apps/{app}/published-config/{name}",
    summary: "Publish a variable (no CC_ names)",
    body: addonSchemas.putPublished,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/published-config/{name}",
    summary: "Stop publishing a variable",
    status: 204,
  },
  // https (ADR 0018)
  {
    method: "get",
    path: "/v1/apps/{app}/domains",
    summary: "The app's custom domains, each with its certificate's state, issuer, expiry and renewal",
  },
  {
    method: "post",
    path: "/v1/apps/{app}/domains",
    summary: "Add a custom domain: routed at once, its certificate obtained from the ACME server",
    body: domainSchemas.addDomain,
    status: 201,
  },
  {
    method: "delete",
    path: "/v1/apps/{app}/domains/{domain}",
    summary: "Remove a custom domain and its certificate",
    status: 204,
  },
  {
    method: "post",
    path: "/v1/apps/{app}/domains/{domain}/renew",
    summary: "Obtain a new certificate now (the current one serves until it is installed)",
  },
  {
    method: "put",
    path: "/v1/apps/{app}/domains/{domain}/certificate",
    summary: "Serve your own certificate (chain and key checked); Pier does not renew it",
    body: domainSchemas.setCertificate,
  },
];

/** `METHOD /v1/path/:param` of every route, as the server registers them (for the route table's test). */
export const documentedRoutes = (): string[] =>
  ROUTES.map((r) => `${r.method.toUpperCase()} ${r.path.replace(/\{(\w+)\}/g, ":$1")}`);

const errorSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "string" }, message: { type: "string" }, hint: { type: "string" } },
    },
  },
};

export function buildOpenApi(version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const query = (r.query ?? []).map((name) => ({
      name,
      in: "query",
      required: false,
      schema: { type: "string" },
    }));
    const op: Record<string, unknown> = {
      summary: r.summary,
      parameters: [...params, ...query],
      responses: {
        [String(r.status ?? 200)]: { description: "Success" },
        default: { description: "Error", content: { "application/json": { schema: errorSchema } } },
      },
    };
    if (r.body)
      op.requestBody = {
        required: true,
        content: { "application/json": { schema: z.toJSONSchema(r.body) } },
      };
    if (r.auth === false) op.security = [];
    paths[r.path] = { ...(paths[r.path] ?? {}), [r.method]: op };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Pier management API", version },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    paths,
  };
}
