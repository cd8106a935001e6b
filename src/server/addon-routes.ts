import type { Context, Hono } from "hono";
import { z } from "zod";
import { shownVariables } from "../core/env.js";
import { ENV_CAP_HINT, envCapProblem } from "../core/env-limits.js";
import { PierError } from "../core/errors.js";
import { FLAVORS } from "../core/model.js";
import type { ApiEnv } from "./access.js";
import type { AddonService } from "./addons.js";
import type { AppService } from "./apps.js";
import { revealOf } from "./reveal.js";

/** Request bodies of the add-on and link routes (described by the OpenAPI document too). */
export const addonSchemas = {
  createAddon: z.object({
    kind: z.string().min(1),
    name: z.string().min(1),
    flavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    /** Apps to link it to at once. */
    link: z.array(z.string().min(1)).max(100).optional(),
  }),
  linkAddon: z.object({ addon: z.string().min(1) }),
  linkApp: z.object({ app: z.string().min(1) }),
  putPublished: z.object({ value: z.string() }),
};

/**
 * The routes of add-ons, links, published variables and backups (ADR 0015). Add-ons are global: an admin
 * token does everything; a token scoped to an app sees (read-only) the add-ons linked to its app, as if
 * the others did not exist (ROUTE_ACCESS: "shared", filtered here).
 */
export function addonRoutes(
  api: Hono<ApiEnv>,
  deps: {
    addons: AddonService;
    apps: AppService;
    body: <T extends z.ZodType>(c: Context<ApiEnv>, schema: T) => Promise<z.infer<T>>;
  },
): void {
  const { addons, apps, body } = deps;
  const only = (c: Context<ApiEnv>) => c.get("token").app?.id ?? null;
  const addonOf = (c: Context<ApiEnv>) => addons.visible(c.req.param("addon") ?? "", only(c));

  api.get("/v1/addons", async (c) => c.json(await addons.list(only(c))));
  api.post("/v1/addons", async (c) =>
    c.json(await addons.create(await body(c, addonSchemas.createAddon)), 201),
  );
  api.get("/v1/addons/:addon", async (c) => c.json(await addons.status(await addonOf(c))));
  api.delete("/v1/addons/:addon", async (c) => {
    await addons.remove(await addonOf(c), c.req.query("force") === "true");
    return c.body(null, 204);
  });
  api.get("/v1/addons/:addon/env", async (c) => {
    const a = await addonOf(c);
    const vars = await addons.variables(a);
    return c.json({ addon: a.name, kind: a.kind, vars: revealOf(c) ? vars : shownVariables(vars) });
  });
  api.get("/v1/addons/:addon/backups", async (c) => c.json(await addons.backups(await addonOf(c))));
  api.post("/v1/addons/:addon/backups", async (c) => c.json(await addons.backup(await addonOf(c)), 201));
  api.post("/v1/addons/:addon/backups/:backup/restore", async (c) =>
    c.json(await addons.restore(await addonOf(c), c.req.param("backup"))),
  );

  const appOf = (c: Context<ApiEnv>) => apps.get(c.req.param("app") ?? "");
  api.get("/v1/apps/:app/links", async (c) => c.json(await addons.links(await appOf(c))));
  api.post("/v1/apps/:app/links/addons", async (c) => {
    const app = await appOf(c);
    await addons.linkAddon(app, (await body(c, addonSchemas.linkAddon)).addon);
    return c.json(await addons.links(app), 201);
  });
  api.delete("/v1/apps/:app/links/addons/:addon", async (c) => {
    await addons.unlinkAddon(await appOf(c), c.req.param("addon"));
    return c.body(null, 204);
  });
  api.post("/v1/apps/:app/links/apps", async (c) => {
    const app = await appOf(c);
    const target = await apps.get((await body(c, addonSchemas.linkApp)).app);
    await addons.linkApp(app, target);
    return c.json(await addons.links(app), 201);
  });
  api.delete("/v1/apps/:app/links/apps/:target", async (c) => {
    await addons.unlinkApp(await appOf(c), await apps.get(c.req.param("target")));
    return c.body(null, 204);
  });

  api.get("/v1/apps/:app/published-config", async (c) => {
    const vars = await addons.published(await appOf(c));
    return c.json({ vars: revealOf(c) ? vars : shownVariables(vars) });
  });
  api.put("/v1/apps/:app/published-config/:name", async (c) => {
    const app = await appOf(c);
    const name = c.req.param("name");
    const { value } = await body(c, addonSchemas.putPublished);
    // What an app publishes goes into the environment of the apps linked to it: the same caps (ADR 0022).
    const next = { ...(await addons.published(app)), [name]: value };
    const problem = envCapProblem(next, app.name, "published variables");
    if (problem) throw new PierError("ENV_LIMIT_EXCEEDED", problem, ENV_CAP_HINT);
    await addons.publish(app, name, value);
    return c.json({ name, value });
  });
  api.delete("/v1/apps/:app/published-config/:name", async (c) => {
    await addons.unpublish(await appOf(c), c.req.param("name"));
    return c.body(null, 204);
  });
}
