import { createHash, randomBytes } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { PierError } from "../core/errors.js";
import type { ApiToken, SshKey } from "../core/model.js";
import { ADMIN_FIELDS, decide, decideGit, matchRoute, type TokenScope } from "../core/permissions.js";
import type { Store } from "../core/ports.js";
import { parsePublicKey } from "./apps.js";
import { newId } from "./deployer.js";
import type { ApiDeps } from "./routes/deps.js";
import type { ApiEnv, SomeHandlers } from "./routes/mount.js";

export type { ApiEnv } from "./routes/mount.js";

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** A new API token: `pier_` (so secret scanners can spot it) and 32 random bytes. */
export const newToken = () => `pier_${randomBytes(32).toString("base64url")}`;

/** The name of the bootstrap admin token (PIER_ADMIN_TOKEN or cli.json); no other token may take it. */
export const BOOTSTRAP_NAME = "admin";

export const scopeOf = (t: ApiToken): TokenScope => ({ app: t.app?.id ?? null, readOnly: t.readOnly });

/** What a token is, as the API shows it: never the token, nor its hash. */
const describeScope = (t: ApiToken) =>
  `${t.app ? `app ${t.app.name}` : "every app (admin)"}${t.readOnly ? ", read-only" : ""}`;

async function bodyFields(c: Context): Promise<string[]> {
  try {
    const raw: unknown = JSON.parse(await c.req.text());
    return raw && typeof raw === "object" && !Array.isArray(raw) ? Object.keys(raw) : [];
  } catch {
    return []; // the route's own validation reports it
  }
}

/**
 * Every /v1 route that needs a token: the token must be known, and the permission rule
 * (src/core/permissions.ts) must allow this request. Another app answers as if it did not exist.
 */
export function authorize(store: Store): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const h = c.req.header("authorization") ?? "";
    const m = /^Bearer\s+(\S+)$/i.exec(h);
    if (!m?.[1]) {
      throw new PierError(
        "UNAUTHORIZED",
        "Missing API token.",
        "Send Authorization: Bearer <token> (PIER_TOKEN).",
      );
    }
    const token = await store.findApiTokenByHash(hashToken(m[1]));
    if (!token) {
      throw new PierError(
        "UNAUTHORIZED",
        "Invalid API token.",
        "Check PIER_TOKEN, or the token in the data dir's cli.json; a revoked token stays invalid.",
      );
    }
    c.set("token", token);
    const scope = scopeOf(token);
    if (scope.app === null && !scope.readOnly) return next();
    const method = c.req.method;
    const { route, params } = matchRoute(method, c.req.path);
    // Every route the API serves is in the table (a unit test sees to it): anything else is no route, the
    // answer the router gives too. Were a route missing from the table, it would be hidden, not open.
    if (route === null)
      throw new PierError("NOT_FOUND", `No route ${method} ${c.req.path}.`, "See GET /v1/openapi.json.");
    const appRef = params.app;
    const appId = appRef === undefined ? null : ((await store.findApp(appRef))?.id ?? null);
    const fields = route && ADMIN_FIELDS[route] ? await bodyFields(c) : [];
    const decision = decide(scope, { method, route, appId, fields });
    if (decision === "not found") {
      // The very answer an app that does not exist gets (AppService.get).
      throw new PierError("APP_NOT_FOUND", `No app named or numbered '${appRef}'.`, "See `pier apps`.");
    }
    if (decision === "forbidden") {
      const adminField = route ? ADMIN_FIELDS[route]?.find((f) => fields.includes(f)) : undefined;
      throw new PierError(
        "FORBIDDEN",
        scope.readOnly
          ? `The token '${token.name}' is read-only: it may not ${method} ${c.req.path}.`
          : adminField
            ? `Only an admin token may set ${adminField}; the token '${token.name}' is limited to ${describeScope(token)}.`
            : `The token '${token.name}' is limited to ${describeScope(token)}: ${method} ${c.req.path} needs an admin token.`,
        "Ask the server's admin, or use a token with that scope (pier tokens create).",
      );
    }
    return next();
  };
}

const keyView = ({ blob: _b, ...k }: SshKey) => k;
const tokenView = (t: ApiToken) => ({
  name: t.name,
  app: t.app,
  readOnly: t.readOnly,
  admin: t.app === null,
  bootstrap: t.bootstrap,
  createdAt: t.createdAt,
});

/** A new key from a request's `{ publicKey, name?, readOnly? }` (400 for a key that does not parse). */
function keyOf(b: { publicKey: string; name?: string | undefined }) {
  const k = parsePublicKey(b.publicKey);
  return {
    id: newId("key"),
    name: b.name ?? (k.comment || k.fingerprint),
    fingerprint: k.fingerprint,
    algo: k.algo,
    blob: k.blob,
  };
}

/** The routes about SSH keys: admin keys, and keys granted on an app. */
export function keyHandlers({ store, apps }: Pick<ApiDeps, "store" | "apps">) {
  const app = (c: Context<ApiEnv>) => apps.get(c.req.param("app") ?? "");
  const keyRef = (c: Context<ApiEnv>) => c.req.param("key") ?? "";
  return {
    "GET /v1/ssh-keys": async (c) => c.json((await store.listSshKeys()).map(keyView)),
    "POST /v1/ssh-keys": async (c, req) => {
      const b = await req.body();
      const key = await store.addSshKey({ ...keyOf(b), readOnly: b.readOnly ?? false });
      return c.json(keyView(key), 201);
    },
    "DELETE /v1/ssh-keys/:key": async (c) => {
      const k = await store.findSshKey(keyRef(c));
      if (!k) throw new PierError("SSH_KEY_NOT_FOUND", `No SSH key '${keyRef(c)}'.`, "See `pier ssh-keys`.");
      await store.deleteSshKey(k.id);
      return c.body(null, 204);
    },
    "GET /v1/apps/:app/ssh-keys": async (c) => {
      const a = await app(c);
      return c.json((await store.listSshKeys(a.id)).map(keyView));
    },
    "POST /v1/apps/:app/ssh-keys": async (c, req) => {
      const a = await app(c);
      const b = await req.body();
      const r = await store.grantSshKey(keyOf(b), a.id, b.readOnly ?? false);
      return c.json(keyView(r.key), r.created ? 201 : 200);
    },
    "DELETE /v1/apps/:app/ssh-keys/:key": async (c) => {
      const a = await app(c);
      const k = await store.findSshKey(keyRef(c));
      if (!k || !(await store.revokeSshKeyGrant(k.id, a.id)))
        throw new PierError(
          "SSH_KEY_NOT_FOUND",
          `No SSH key '${keyRef(c)}' granted on ${a.name}.`,
          `See \`pier ssh-keys --app ${a.name}\`.`,
        );
      return c.body(null, 204);
    },
  } satisfies SomeHandlers;
}

/** The routes about API tokens, and `whoami`. */
export function tokenHandlers({ store, apps }: Pick<ApiDeps, "store" | "apps">) {
  return {
    "GET /v1/whoami": (c) => c.json(tokenView(c.get("token"))),
    "GET /v1/tokens": async (c) => c.json((await store.listApiTokens()).map(tokenView)),
    "POST /v1/tokens": async (c, req) => {
      const b = await req.body();
      const app = b.app === undefined ? null : await apps.get(b.app);
      const token = newToken();
      const t = await store.addApiToken({
        id: newId("tok"),
        name: b.name,
        hash: hashToken(token),
        appId: app?.id ?? null,
        readOnly: b.readOnly ?? false,
        bootstrap: false,
      });
      return c.json({ ...tokenView(t), token }, 201);
    },
    "DELETE /v1/tokens/:name": async (c) => {
      const name = c.req.param("name") ?? "";
      if (name === BOOTSTRAP_NAME)
        throw new PierError(
          "CONFLICT",
          "The bootstrap admin token is not revoked through the API.",
          "Set a new PIER_ADMIN_TOKEN (or delete cli.json) and restart pier server: the previous one stops working.",
        );
      if (!(await store.deleteApiToken(name)))
        throw new PierError("NOT_FOUND", `No token named '${name}'.`, "See `pier tokens`.");
      return c.body(null, 204);
    },
  } satisfies SomeHandlers;
}

/**
 * The SSH server's question for a command on an app's repository (`ref`, as the client named it): null if
 * this key may, else the line to print. A key that reaches only some apps gets one answer for an app it
 * is not granted on and for an app that does not exist, so it cannot probe which apps exist.
 */
export async function authorizeRepo(
  store: Store,
  keyId: string,
  ref: string,
  op: "fetch" | "push",
): Promise<string | null> {
  const key = await store.findSshKey(keyId);
  const app = await store.findApp(ref);
  const decision = key ? decideGit(key, app?.id ?? null, op) : "no access";
  if (decision === "no access")
    return `pier: this key (${key?.fingerprint ?? "removed"}) may not reach app '${ref}', or there is no such app. An admin grants it with: pier ssh-keys add KEY.pub --app APP`;
  if (decision === "read-only")
    return key?.global
      ? "pier: this key is a read-only deploy key: it may fetch (git clone, npm git dependencies) but not push."
      : `pier: this key is a read-only deploy key on app '${app?.name ?? ref}': it may fetch (git clone, npm git dependencies) but not push.`;
  if (!app) return `pier: app '${ref}' not found. Create it with \`pier create\`; see \`pier apps\`.`;
  return null;
}
