/**
 * Who may do what (ADR 0008). Two kinds of credentials, one rule each:
 *
 * - An API token has a scope: every app (an admin token) or one app, and may be read-only. A token scoped
 *   to an app sees nothing else: another app's routes answer 404, as if the app did not exist, and the
 *   app list holds its app only. Writes a token may not make answer 403 FORBIDDEN.
 * - An SSH key is an admin key (every app, as before) or is granted on some apps, each grant push or
 *   fetch-only (read-only). It reaches nothing else.
 *
 * Pure: the API and the SSH server resolve names to ids, then ask here.
 */

export interface TokenScope {
  /** The app id the token is limited to; null: every app (an admin token). */
  app: string | null;
  readOnly: boolean;
}

/**
 * How a route is guarded. Every API route under /v1 that needs a token is in ROUTE_ACCESS; a route
 * missing from it is admin-only (the safe default for a route added without thought).
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

/** `METHOD pattern` (Hono's `:param` syntax) -> how it is guarded. */
export const ROUTE_ACCESS: Readonly<Record<string, RouteAccess>> = {
  "GET /v1/whoami": "shared",
  "GET /v1/apps": "shared",
  "POST /v1/apps": "admin",
  "GET /v1/apps/:app": "app",
  "PATCH /v1/apps/:app": "app",
  "DELETE /v1/apps/:app": "app",
  "GET /v1/apps/:app/status": "app",
  "POST /v1/apps/:app/stop": "app",
  "GET /v1/apps/:app/env": "app",
  "PATCH /v1/apps/:app/env": "app",
  "PUT /v1/apps/:app/env/:name": "app",
  "DELETE /v1/apps/:app/env/:name": "app",
  // An app's ceiling (ADR 0022): its tokens may read it; raising (or lowering) it is the admin's.
  "GET /v1/apps/:app/limits": "app",
  "PATCH /v1/apps/:app/limits": "app-admin",
  "GET /v1/apps/:app/releases": "app",
  "POST /v1/apps/:app/releases/:number/rollback": "app",
  "GET /v1/apps/:app/deployments": "app",
  "POST /v1/apps/:app/deployments": "app",
  "GET /v1/apps/:app/deployments/:id": "app",
  "POST /v1/apps/:app/deployments/:id/cancel": "app",
  "GET /v1/apps/:app/deployments/:id/log": "app",
  "GET /v1/apps/:app/logs": "app",
  "GET /v1/apps/:app/ssh-private-key": "app",
  "PUT /v1/apps/:app/ssh-private-key": "app",
  "DELETE /v1/apps/:app/ssh-private-key": "app",
  // A key granted on an app can be a key granted elsewhere too: granting and revoking keys is the admin's.
  "GET /v1/apps/:app/ssh-keys": "app",
  "POST /v1/apps/:app/ssh-keys": "app-admin",
  "DELETE /v1/apps/:app/ssh-keys/:key": "app-admin",
  "GET /v1/runtimes/node": "shared",
  // https: an app's custom domains and certificates (ADR 0018). A domain name is one namespace for every
  // app: claiming one (which then gets the traffic and a certificate of whoever points it at this host)
  // reaches beyond the app, so only an admin token adds one or sets a certificate (which may add it).
  "GET /v1/apps/:app/domains": "app",
  "POST /v1/apps/:app/domains": "app-admin",
  "DELETE /v1/apps/:app/domains/:domain": "app",
  "POST /v1/apps/:app/domains/:domain/renew": "app",
  "PUT /v1/apps/:app/domains/:domain/certificate": "app-admin",
  "GET /v1/ssh-keys": "admin",
  "POST /v1/ssh-keys": "admin",
  "DELETE /v1/ssh-keys/:key": "admin",
  "GET /v1/tokens": "admin",
  "POST /v1/tokens": "admin",
  "DELETE /v1/tokens/:name": "admin",
  // Add-ons are global (ADR 0015): a token scoped to an app sees the add-ons linked to its app (the
  // handlers filter the "shared" routes), read-only; creating, deleting, backing up and restoring is the
  // admin's. Linking gives an app an add-on's credentials or another app's published variables: admin.
  "GET /v1/addons": "shared",
  "POST /v1/addons": "admin",
  "GET /v1/addons/:addon": "shared",
  "DELETE /v1/addons/:addon": "admin",
  "GET /v1/addons/:addon/env": "shared",
  "GET /v1/addons/:addon/backups": "shared",
  "POST /v1/addons/:addon/backups": "admin",
  "POST /v1/addons/:addon/backups/:backup/restore": "admin",
  "GET /v1/apps/:app/links": "app",
  "POST /v1/apps/:app/links/addons": "app-admin",
  "DELETE /v1/apps/:app/links/addons/:addon": "app",
  "POST /v1/apps/:app/links/apps": "app-admin",
  "DELETE /v1/apps/:app/links/apps/:target": "app",
  "GET /v1/apps/:app/published-config": "app",
  "PUT /v1/apps/:app/published-config/:name": "app",
  "DELETE /v1/apps/:app/published-config/:name": "app",
};

/** Request body fields only an admin token may set, per route. */
export const ADMIN_FIELDS: Readonly<Record<string, readonly string[]>> = {
  // Mounting the engine's socket gives the app root on the host: not a tenant's decision.
  "PATCH /v1/apps/:app": ["allowDockerSocket"],
};

export interface RouteMatch {
  /** `METHOD pattern`, a key of ROUTE_ACCESS, or null when no pattern matches. */
  route: string | null;
  params: Record<string, string>;
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The ROUTE_ACCESS entry a request falls under, with its path parameters (decoded). */
export function matchRoute(method: string, path: string): RouteMatch {
  const m = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  const segs = path.replace(/\/+$/, "").split("/");
  for (const key of Object.keys(ROUTE_ACCESS)) {
    const [km, pattern = ""] = key.split(" ");
    if (km !== m) continue;
    const ps = pattern.split("/");
    if (ps.length !== segs.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < ps.length && ok; i++) {
      const p = ps[i] as string;
      const s = segs[i] as string;
      if (p.startsWith(":")) {
        if (s === "") ok = false;
        else {
          try {
            params[p.slice(1)] = decodeURIComponent(s);
          } catch {
            ok = false;
          }
        }
      } else ok = p === s;
    }
    if (ok) return { route: key, params };
  }
  return { route: null, params: {} };
}

export type Decision = "allowed" | "not found" | "forbidden";

export interface RequestFacts {
  method: string;
  /** A ROUTE_ACCESS key (`GET /v1/apps/:app`), or null for a route not in the table. */
  route: string | null;
  /** The id of the app `:app` names, or null if it names none (or the route has no `:app`). */
  appId?: string | null;
  /** The body fields the request sets (for ADMIN_FIELDS). */
  fields?: readonly string[];
}

/**
 * The rule for API tokens. Order matters: another app is "not found" before anything else, so a scoped
 * token cannot learn which apps exist by the answer it gets.
 */
export function decide(scope: TokenScope, req: RequestFacts): Decision {
  const access: RouteAccess = (req.route && ROUTE_ACCESS[req.route]) || "admin";
  const write = !READS.has(req.method.toUpperCase());
  const onApp = access === "app" || access === "app-admin";
  if (onApp && scope.app !== null && (req.appId ?? null) !== scope.app) return "not found";
  if (write && scope.readOnly) return "forbidden";
  if (scope.app === null) return "allowed";
  if (access === "admin") return "forbidden";
  if (access === "app-admin" && write) return "forbidden";
  const adminFields = req.route ? ADMIN_FIELDS[req.route] : undefined;
  if (adminFields && (req.fields ?? []).some((f) => adminFields.includes(f))) return "forbidden";
  return "allowed";
}

/**
 * Whether a token may see secret values in clear (`?reveal=true`, ADR 0024): a token that may write the app
 * (it could set them anyway). A read-only token sees them masked, always.
 */
export const mayReveal = (scope: TokenScope): boolean => !scope.readOnly;

/** What one SSH key is allowed: admin keys every app; others the apps they are granted on. */
export interface KeyAccess {
  /** An admin key: every app. */
  global: boolean;
  /** For an admin key: it may fetch but not push. */
  readOnly: boolean;
  /** Per app id: read-only (fetch) or not (push and fetch). */
  apps: ReadonlyArray<{ id: string; readOnly: boolean }>;
}

export type GitDecision = "allowed" | "no access" | "read-only";

/** The rule for git over SSH: `appId` is the app the repository belongs to (null: no such app). */
export function decideGit(key: KeyAccess, appId: string | null, op: "fetch" | "push"): GitDecision {
  let readOnly: boolean;
  if (key.global) readOnly = key.readOnly;
  else {
    const grant = appId === null ? undefined : key.apps.find((g) => g.id === appId);
    if (!grant) return "no access";
    readOnly = grant.readOnly;
  }
  return op === "push" && readOnly ? "read-only" : "allowed";
}
