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
import { ROUTES, type RouteAccess, type RouteSpec } from "./api/routes.js";

export interface TokenScope {
  /** The app id the token is limited to; null: every app (an admin token). */
  app: string | null;
  readOnly: boolean;
}

export type { RouteAccess } from "./api/routes.js";

/**
 * `METHOD pattern` (Hono's `:param` syntax) -> how it is guarded: every route of the one route table
 * (core/api/routes.ts) that needs a token. A route missing from it is admin-only (the safe default).
 */
export const ROUTE_ACCESS: Readonly<Record<string, RouteAccess>> = Object.fromEntries(
  Object.entries(ROUTES).flatMap(([key, spec]: [string, RouteSpec]) =>
    spec.access === "public" ? [] : [[key, spec.access] as const],
  ),
);

/** Request body fields only an admin token may set, per route (the table's `adminFields`). */
export const ADMIN_FIELDS: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.entries(ROUTES).flatMap(([key, spec]: [string, RouteSpec]) =>
    spec.adminFields ? [[key, spec.adminFields] as const] : [],
  ),
);

export interface RouteMatch {
  /** `METHOD pattern`, a key of ROUTE_ACCESS, or null when no pattern matches. */
  route: string | null;
  params: Record<string, string>;
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The ROUTE_ACCESS entry a request falls under, with its path parameters (decoded). */
export const matchRoute = (method: string, path: string): RouteMatch =>
  matchKey(Object.keys(ROUTE_ACCESS), method, path);

/** The first of `keys` (`METHOD pattern`) a request falls under, with its path parameters (decoded). */
export function matchKey(keys: readonly string[], method: string, path: string): RouteMatch {
  const m = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  const segs = path.replace(/\/+$/, "").split("/");
  for (const key of keys) {
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
