import type { Context } from "hono";
import { appOf } from "./routes/apps.js";
import type { ApiDeps } from "./routes/deps.js";
import type { ApiEnv, SomeHandlers } from "./routes/mount.js";

/** The routes of an app's custom domains and certificates (ADR 0018). */
export function domainHandlers(deps: Pick<ApiDeps, "domains" | "apps">) {
  const app = (c: Context<ApiEnv>) => appOf(deps, c);
  const name = (c: Context<ApiEnv>) => c.req.param("domain") ?? "";
  return {
    "GET /v1/apps/:app/domains": async (c) => c.json(await deps.domains.list(await app(c))),
    "POST /v1/apps/:app/domains": async (c, req) => {
      const a = await app(c);
      const { name: domain } = await req.body();
      return c.json(await deps.domains.add(a, domain), 201);
    },
    "DELETE /v1/apps/:app/domains/:domain": async (c) => {
      await deps.domains.remove(await app(c), name(c));
      return c.body(null, 204);
    },
    "POST /v1/apps/:app/domains/:domain/renew": async (c) =>
      c.json(
        await deps.domains.renew(await app(c), name(c), {
          admin: c.get("token").app === null,
          toAcme: c.req.query("acme") === "true",
        }),
      ),
    "PUT /v1/apps/:app/domains/:domain/certificate": async (c, req) => {
      const a = await app(c);
      const { cert, key } = await req.body();
      return c.json(await deps.domains.setCertificate(a, name(c), { certPem: cert, keyPem: key }));
    },
  } satisfies SomeHandlers;
}
