/**
 * The API's one route table (ADR 0026): each route once, with its method and path (the key), who may call
 * it, what it reads and what it answers. Hono's registration (server/routes), the permission check
 * (core/permissions.ts), `GET /v1/openapi.json` (server/openapi.ts), the server's response check, the CLI's
 * parsing and the console's types are all derived from it; docs/api.md is checked against it by a test.
 * Pure data.
 */
import { z } from "zod";
import * as r from "./records.js";
import { queries, schemas } from "./requests.js";

/**
 * How a route is guarded (ADR 0008). A route under /v1 that is missing from the table is no route at all.
 */
export type RouteAccess =
  /** Not about one app, and open to every token for reading (the app list is filtered by its handler). */
  | "shared"
  /** About the app in `:app`: tokens of that app (and admin tokens) only. */
  | "app"
  /** About the app in `:app`, but only an admin token may do it (it reaches beyond the app). */
  | "app-admin"
  /** About the whole server: admin tokens only (read-only admin tokens may read). */
  | "admin";

/**
 * One answer of a route: a JSON body, or a text body, or server-sent events (each `data:` one `sse` object,
 * then an `end` event), or nothing (204).
 */
export interface Answer {
  json?: z.ZodType;
  text?: true;
  sse?: z.ZodType;
  end?: z.ZodType;
}

export interface RouteSpec {
  /** "public": no token needed. */
  access: RouteAccess | "public";
  summary: string;
  /** The JSON body, parsed when the handler asks for it (after it has found the app: 404 comes first). */
  body?: z.ZodType;
  query?: z.ZodObject;
  /** Body fields only an admin token may set. */
  adminFields?: readonly string[];
  /** Each success status with its answer; every route may also answer {@link r.ErrorBody} with 4xx/5xx. */
  responses: Readonly<Record<number, Answer>>;
}

const json = <S extends z.ZodType>(schema: S) => ({ json: schema });
const NO_CONTENT: Answer = {};

/**
 * `METHOD path` (Hono's `:param` syntax) -> the route. Access comments: add-ons are global (ADR 0015): a
 * token scoped to an app sees the add-ons linked to its app (the "shared" handlers filter), read-only;
 * linking gives an app an add-on's credentials or another app's published variables: admin. A domain name
 * is one namespace for every app (ADR 0018): adding one or setting a certificate (which may add it) is the
 * admin's. A key granted on an app can be granted elsewhere too: granting and revoking keys is the admin's.
 * An app's ceiling (ADR 0022): its tokens read it; setting it is the admin's. `allowDockerSocket` mounts
 * the engine's socket, root on the host: not a tenant's decision.
 */
export const ROUTES = {
  "GET /v1/info": {
    access: "public",
    summary: "Server facts: version, domain, ports",
    responses: { 200: json(r.Info) },
  },
  "GET /v1/openapi.json": {
    access: "public",
    summary: "This document",
    responses: { 200: json(r.OpenApiDocument) },
  },
  "GET /v1/apps": {
    access: "shared",
    summary: "List apps, each with its status (state, release, instances)",
    responses: { 200: json(z.array(r.ListedApp)) },
  },
  "POST /v1/apps": {
    access: "admin",
    summary: "Create an app",
    body: schemas.createApp,
    responses: { 201: json(r.App) },
  },
  "GET /v1/apps/:app": { access: "app", summary: "One app, by name or id", responses: { 200: json(r.App) } },
  "PATCH /v1/apps/:app": {
    access: "app",
    summary: "Scale or change an app",
    body: schemas.patchApp,
    adminFields: ["allowDockerSocket"],
    responses: { 200: json(r.ScaleAnswer) },
  },
  "DELETE /v1/apps/:app": {
    access: "app",
    summary: "Delete an app and everything it runs",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/apps/:app/status": {
    access: "app",
    summary: "Release, instances, crashes, TCP port",
    responses: { 200: json(r.Status) },
  },
  "POST /v1/apps/:app/stop": {
    access: "app",
    summary: "Stop every instance",
    responses: { 200: json(r.App) },
  },
  "GET /v1/apps/:app/env": {
    access: "app",
    summary:
      "The app's variables and its links', secret values masked unless reveal=true (not for read-only tokens: 403)",
    query: queries.reveal,
    responses: { 200: json(r.Env) },
  },
  "PATCH /v1/apps/:app/env": {
    access: "app",
    summary: "Set and unset variables, all or nothing",
    body: schemas.patchEnv,
    responses: { 200: json(r.Vars) },
  },
  "PUT /v1/apps/:app/env/:name": {
    access: "app",
    summary: "Set one variable",
    body: schemas.putEnv,
    responses: { 200: json(r.EnvVar) },
  },
  "DELETE /v1/apps/:app/env/:name": {
    access: "app",
    summary: "Remove one variable",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/apps/:app/limits": {
    access: "app",
    summary:
      "The app's ceiling (largest flavor, instances, memory) in force, what an admin set, the server's defaults, the app's use, and the caps on variables",
    responses: { 200: json(r.Limits) },
  },
  "PATCH /v1/apps/:app/limits": {
    access: "app-admin",
    summary: "Set the app's ceiling (admin token; null: the server's default)",
    body: schemas.patchLimits,
    responses: { 200: json(r.Limits) },
  },
  "GET /v1/apps/:app/releases": {
    access: "app",
    summary: "Releases, newest first (the current one marked)",
    responses: { 200: json(z.array(r.Release)) },
  },
  "POST /v1/apps/:app/releases/:number/rollback": {
    access: "app",
    summary: "Redeploy a kept release's image",
    responses: { 202: json(r.Deployment) },
  },
  "GET /v1/apps/:app/deployments": {
    access: "app",
    summary: "Deployments, newest first",
    responses: { 200: json(z.array(r.Deployment)) },
  },
  "POST /v1/apps/:app/deployments": {
    access: "app",
    summary: "Redeploy the current commit",
    body: schemas.deploy,
    responses: { 202: json(r.Deployment) },
  },
  "GET /v1/apps/:app/deployments/:id": {
    access: "app",
    summary: "One deployment (`latest` allowed)",
    responses: { 200: json(r.Deployment) },
  },
  "GET /v1/apps/:app/deployments/:id/log": {
    access: "app",
    summary: "Its log; `follow=true` streams SSE",
    query: queries.follow,
    responses: { 200: { text: true, sse: r.DeployLogLine, end: r.Deployment } },
  },
  "POST /v1/apps/:app/deployments/:id/cancel": {
    access: "app",
    summary: "Cancel (`current` allowed)",
    responses: { 200: json(r.Deployment) },
  },
  "GET /v1/apps/:app/logs": {
    access: "app",
    summary: "Runtime logs of the instances",
    query: queries.logs,
    responses: { 200: { json: r.RuntimeLogs, sse: r.RuntimeLogLine } },
  },
  "GET /v1/runtimes/node": {
    access: "shared",
    summary: "Node.js versions available, LTS and end-of-life marked",
    responses: { 200: json(r.NodeVersions) },
  },
  "GET /v1/apps/:app/ssh-private-key": {
    access: "app",
    summary: "The app's private SSH key for builds: type, fingerprint and public half (never the key)",
    responses: { 200: json(r.SshPrivateKey) },
  },
  "PUT /v1/apps/:app/ssh-private-key": {
    access: "app",
    summary:
      "Set the app's private SSH key (stored encrypted) used by builds to fetch private git dependencies",
    body: schemas.putPrivateKey,
    responses: { 200: json(r.SshPrivateKey) },
  },
  "DELETE /v1/apps/:app/ssh-private-key": {
    access: "app",
    summary: "Remove the app's private SSH key",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/ssh-keys": {
    access: "admin",
    summary: "Every SSH key with its scope (admin token)",
    responses: { 200: json(z.array(r.SshKey)) },
  },
  "POST /v1/ssh-keys": {
    access: "admin",
    summary: "Register an admin SSH key: every app (readOnly: may fetch, not push; a deploy key)",
    body: schemas.addKey,
    responses: { 201: json(r.SshKey) },
  },
  "DELETE /v1/ssh-keys/:key": {
    access: "admin",
    summary: "Remove a key everywhere (id, fingerprint or name)",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/apps/:app/ssh-keys": {
    access: "app",
    summary: "The SSH keys granted on the app",
    responses: { 200: json(z.array(r.SshKey)) },
  },
  "POST /v1/apps/:app/ssh-keys": {
    access: "app-admin",
    summary:
      "Grant an SSH key on this app only (admin token; 201 new grant, 200 changed readOnly; 409 for an admin key)",
    body: schemas.addKey,
    responses: { 201: json(r.SshKey), 200: json(r.SshKey) },
  },
  "DELETE /v1/apps/:app/ssh-keys/:key": {
    access: "app-admin",
    summary: "Remove a key's grant on the app (admin token); a key left with no app is removed",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/whoami": {
    access: "shared",
    summary: "The token in use: name, scope",
    responses: { 200: json(r.ApiToken) },
  },
  "GET /v1/tokens": {
    access: "admin",
    summary: "API tokens: name, scope, created (never the token)",
    responses: { 200: json(z.array(r.ApiToken)) },
  },
  "POST /v1/tokens": {
    access: "admin",
    summary: "Create an API token (admin token); the answer holds the token, shown this once",
    body: schemas.createToken,
    responses: { 201: json(r.NewApiToken) },
  },
  "DELETE /v1/tokens/:name": {
    access: "admin",
    summary: "Revoke a token (admin token)",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/addons": {
    access: "shared",
    summary: "Add-ons with the apps linked to each (an app's token: those linked to its app)",
    responses: { 200: json(z.array(r.Addon)) },
  },
  "POST /v1/addons": {
    access: "admin",
    summary: "Create an add-on (kv, postgresql or mysql; admin token), optionally linked to apps",
    body: schemas.createAddon,
    responses: { 201: json(r.Addon) },
  },
  "GET /v1/addons/:addon": {
    access: "shared",
    summary:
      "An add-on's status: state (running once its linked apps reach it; joining while it joins them), host, port, networks, and per linked app whether it reaches it (joins)",
    responses: { 200: json(r.AddonStatus) },
  },
  "DELETE /v1/addons/:addon": {
    access: "admin",
    summary: "Delete an add-on and its data (admin token); 409 while linked unless force=true",
    query: queries.force,
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/addons/:addon/env": {
    access: "shared",
    summary: "The variables a link to the add-on injects, secret values masked unless reveal=true",
    query: queries.reveal,
    responses: { 200: json(r.AddonEnv) },
  },
  "GET /v1/addons/:addon/backups": {
    access: "shared",
    summary: "The add-on's backups, newest first",
    responses: { 200: json(z.array(r.Backup)) },
  },
  "POST /v1/addons/:addon/backups": {
    access: "admin",
    summary:
      "Back the add-on up now (pg_dump, or a kv snapshot; admin token); 409 ADDON_NOT_RUNNING when it is stopped",
    responses: { 201: json(r.Backup) },
  },
  "POST /v1/addons/:addon/backups/:backup/restore": {
    access: "admin",
    summary:
      "Replace the add-on's data by a backup of it, or with from=ADDON by a backup of that add-on of the same kind (admin token); a failed restore changes nothing; 409 ADDON_NOT_RUNNING when it is stopped",
    query: queries.restoreFrom,
    responses: { 200: json(r.Backup) },
  },
  "GET /v1/apps/:app/links": {
    access: "app",
    summary: "The add-ons and apps an app is linked to",
    responses: { 200: json(r.Links) },
  },
  "POST /v1/apps/:app/links/addons": {
    access: "app-admin",
    summary: "Link an add-on (admin token): the next deploy or restart gets its variables",
    body: schemas.linkAddon,
    responses: { 201: json(r.Links) },
  },
  "DELETE /v1/apps/:app/links/addons/:addon": {
    access: "app",
    summary: "Unlink an add-on (from the next deploy or restart)",
    responses: { 204: NO_CONTENT },
  },
  "POST /v1/apps/:app/links/apps": {
    access: "app-admin",
    summary: "Link another app (admin token): the next deploy or restart gets its published variables",
    body: schemas.linkApp,
    responses: { 201: json(r.Links) },
  },
  "DELETE /v1/apps/:app/links/apps/:target": {
    access: "app",
    summary: "Unlink an app (from the next deploy or restart)",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/apps/:app/published-config": {
    access: "app",
    summary: "What the app publishes to apps linked to it, secret values masked unless reveal=true",
    query: queries.reveal,
    responses: { 200: json(r.Vars) },
  },
  "PUT /v1/apps/:app/published-config/:name": {
    access: "app",
    summary: "Publish a variable (no CC_ names)",
    body: schemas.putPublished,
    responses: { 200: json(r.EnvVar) },
  },
  "DELETE /v1/apps/:app/published-config/:name": {
    access: "app",
    summary: "Stop publishing a variable",
    responses: { 204: NO_CONTENT },
  },
  "GET /v1/apps/:app/domains": {
    access: "app",
    summary: "The app's custom domains, each with its certificate's state, issuer, expiry and renewal",
    responses: { 200: json(z.array(r.Domain)) },
  },
  "POST /v1/apps/:app/domains": {
    access: "app-admin",
    summary: "Add a custom domain: routed at once, its certificate obtained from the ACME server",
    body: schemas.addDomain,
    responses: { 201: json(r.Domain) },
  },
  "DELETE /v1/apps/:app/domains/:domain": {
    access: "app",
    summary: "Remove a custom domain and its certificate",
    responses: { 204: NO_CONTENT },
  },
  "POST /v1/apps/:app/domains/:domain/renew": {
    access: "app",
    summary: "Obtain a new certificate now (the current one serves until it is installed)",
    query: queries.acme,
    responses: { 200: json(r.Domain) },
  },
  "PUT /v1/apps/:app/domains/:domain/certificate": {
    access: "app-admin",
    summary: "Serve your own certificate (chain and key checked); Pier does not renew it",
    body: schemas.setCertificate,
    responses: { 200: json(r.Domain) },
  },
  // The swarm's machines (ADR 0030): the whole server's, so admin tokens only. The join command is a POST
  // so that a read-only admin token cannot read the swarm's join secret.
  "GET /v1/nodes": {
    access: "admin",
    summary:
      "The swarm's nodes: name, address, role, availability, state, labels, Pier's instances there, whether the node guard runs there (409 NO_SWARM on one dockerd)",
    responses: { 200: json(z.array(r.ListedNode)) },
  },
  "POST /v1/nodes/join-command": {
    access: "admin",
    summary: "What a new machine runs to join the swarm (its token is a secret)",
    body: schemas.joinCommand,
    responses: { 200: json(r.JoinCommand) },
  },
  "POST /v1/nodes/:node/drain": {
    access: "admin",
    summary: "Move a node's work to the others (refused for the last active node)",
    responses: { 200: json(r.ClusterNode) },
  },
  "POST /v1/nodes/:node/activate": {
    access: "admin",
    summary:
      "Let a drained node take work again; apps whose instances crowd the other nodes are redeployed to spread onto it (`rebalancing`)",
    responses: { 200: json(r.ActivatedNode) },
  },
} as const satisfies Record<string, RouteSpec>;

export type RouteKey = keyof typeof ROUTES;

/** The keys of the table, in its order (registration and matching go in this order). */
export const ROUTE_KEYS = Object.keys(ROUTES) as RouteKey[];

/** The parsed body of a route that declares one. */
export type BodyOf<K extends RouteKey> = (typeof ROUTES)[K] extends { body: infer B extends z.ZodType }
  ? z.output<B>
  : never;

/** The JSON answer of a route with its first success status (what a client reads). */
export type AnswerOf<K extends RouteKey> = (typeof ROUTES)[K]["responses"] extends infer R
  ? R[keyof R] extends { json: infer S extends z.ZodType }
    ? z.output<S>
    : never
  : never;

/** The method and the Hono path of a key. */
export function splitKey(key: string): { method: string; path: string } {
  const [method = "", path = ""] = key.split(" ");
  return { method, path };
}
