import type { Context, Hono } from "hono";
import { z } from "zod";
import type { ApiEnv } from "./access.js";
import type { AppService } from "./apps.js";
import type { DomainService } from "./domains.js";

/** Request bodies of the domain routes (described by the OpenAPI document too). */
export const domainSchemas = {
  addDomain: z.object({ name: z.string().min(1).max(253) }),
  setCertificate: z.object({
    /** PEM: the certificate, then its chain. */
    cert: z.string().min(1).max(65_536),
    /** PEM, unencrypted. */
    key: z.string().min(1).max(16_384),
  }),
};

/** The routes of an app's custom domains and certificates (ADR 0018). */
export function domainRoutes(
  api: Hono<ApiEnv>,
  deps: {
    domains: () => DomainService;
    apps: AppService;
    body: <T extends z.ZodType>(c: Context<ApiEnv>, schema: T) => Promise<z.infer<T>>;
  },
): void {
  const { apps, body } = deps;
  const appOf = (c: Context<ApiEnv>) => apps.get(c.req.param("app") ?? "");
  const name = (c: Context<ApiEnv>) => c.req.param("domain") ?? "";

  api.get("/v1/apps/:app/domains", async (c) => c.json(await deps.domains().list(await appOf(c))));
  api.post("/v1/apps/:app/domains", async (c) => {
    const app = await appOf(c);
    const { name: domain } = await body(c, domainSchemas.addDomain);
    return c.json(await deps.domains().add(app, domain), 201);
  });
  api.delete("/v1/apps/:app/domains/:domain", async (c) => {
    await deps.domains().remove(await appOf(c), name(c));
    return c.body(null, 204);
  });
  api.post("/v1/apps/:app/domains/:domain/renew", async (c) =>
    c.json(
      await deps.domains().renew(await appOf(c), name(c), {
        admin: c.get("token").app === null,
        toAcme: c.req.query("acme") === "true",
      }),
    ),
  );
  api.put("/v1/apps/:app/domains/:domain/certificate", async (c) => {
    const app = await appOf(c);
    const { cert, key } = await body(c, domainSchemas.setCertificate);
    return c.json(await deps.domains().setCertificate(app, name(c), { certPem: cert, keyPem: key }));
  });
}
