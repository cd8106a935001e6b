import type { Context } from "hono";
import { PierError } from "../../core/errors.js";
import type { App } from "../../core/model.js";
import { buildOpenApi } from "../openapi.js";
import type { ApiDeps } from "./deps.js";
import type { ApiEnv, SomeHandlers } from "./mount.js";

/** The app named or numbered by `:app` (404 APP_NOT_FOUND). */
export const appOf = (deps: Pick<ApiDeps, "apps">, c: Context<ApiEnv>): Promise<App> =>
  deps.apps.get(c.req.param("app") ?? "");

/** Server facts, and the apps themselves: create, read, scale, stop, delete, status, ceiling, releases. */
export function appHandlers(deps: ApiDeps) {
  const { apps } = deps;
  const app = (c: Context<ApiEnv>) => appOf(deps, c);
  return {
    "GET /v1/info": (c) => c.json(deps.info),
    "GET /v1/openapi.json": (c) => c.json(buildOpenApi(deps.info.version)),
    "GET /v1/runtimes/node": async (c) => c.json({ versions: await deps.nodeVersions() }),
    "GET /v1/apps": async (c) => c.json(await apps.list(c.get("token").app?.id)),
    "POST /v1/apps": async (c, req) => c.json(await apps.view(await apps.create(await req.body())), 201),
    "GET /v1/apps/:app": async (c) => c.json(await apps.view(await app(c))),
    "PATCH /v1/apps/:app": async (c, req) => {
      const r = await apps.patch(await app(c), await req.body());
      return c.json({ app: await apps.view(r.app), deployment: r.deployment });
    },
    "DELETE /v1/apps/:app": async (c) => {
      await apps.remove(await app(c));
      return c.body(null, 204);
    },
    "GET /v1/apps/:app/status": async (c) => {
      const a = await app(c);
      // The app's custom domains with their certificates' state (ADR 0018), beside its instances.
      return c.json({ ...(await apps.status(a)), domains: await deps.domains.list(a) });
    },
    "POST /v1/apps/:app/stop": async (c) => c.json(await apps.view(await apps.stop(await app(c)))),
    // An app's ceiling (ADR 0022): its tokens read it; only an admin token sets it (the table's access).
    "GET /v1/apps/:app/limits": async (c) => c.json(await deps.limits.view(await app(c))),
    "PATCH /v1/apps/:app/limits": async (c, req) => {
      const a = await app(c);
      return c.json(await deps.limits.set(a, await req.body()));
    },
    "GET /v1/apps/:app/releases": async (c) => c.json(await apps.releases(await app(c))),
    "POST /v1/apps/:app/releases/:number/rollback": async (c) =>
      c.json(await apps.rollback(await app(c), c.req.param("number") ?? ""), 202),
  } satisfies SomeHandlers;
}

/** The app's private SSH key for builds (never shown: its type, fingerprint and public half). */
export function privateKeyHandlers(deps: ApiDeps) {
  const { apps } = deps;
  return {
    "GET /v1/apps/:app/ssh-private-key": async (c) => {
      const info = await apps.sshPrivateKey(c.req.param("app") ?? "");
      if (!info)
        throw new PierError(
          "NOT_FOUND",
          `App '${c.req.param("app")}' has no private SSH key.`,
          "Set one: pier ssh-private-key set FILE --app APP",
        );
      return c.json(info);
    },
    "PUT /v1/apps/:app/ssh-private-key": async (c, req) => {
      const { privateKey } = await req.body();
      return c.json(await apps.setSshPrivateKey(c.req.param("app") ?? "", privateKey));
    },
    "DELETE /v1/apps/:app/ssh-private-key": async (c) => {
      await apps.removeSshPrivateKey(c.req.param("app") ?? "");
      return c.body(null, 204);
    },
  } satisfies SomeHandlers;
}
