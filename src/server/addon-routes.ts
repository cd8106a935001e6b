import type { Context } from "hono";
import { ENV_CAP_HINT, envCapProblem } from "../core/env-limits.js";
import { shownVariables } from "../core/env-secrets.js";
import { PierError } from "../core/errors.js";
import { revealOf } from "./reveal.js";
import { appOf } from "./routes/apps.js";
import type { ApiDeps } from "./routes/deps.js";
import type { ApiEnv, SomeHandlers } from "./routes/mount.js";

/**
 * The routes of add-ons and their backups (ADR 0015). Add-ons are global: an admin token does everything; a
 * token scoped to an app sees (read-only) the add-ons linked to its app, as if the others did not exist
 * (the table's access "shared", filtered here).
 */
export function addonHandlers({ addons }: Pick<ApiDeps, "addons">) {
  const only = (c: Context<ApiEnv>) => c.get("token").app?.id ?? null;
  const addonOf = (c: Context<ApiEnv>) => addons.visible(c.req.param("addon") ?? "", only(c));
  return {
    "GET /v1/addons": async (c) => c.json(await addons.list(only(c))),
    "POST /v1/addons": async (c, req) => c.json(await addons.create(await req.body()), 201),
    "GET /v1/addons/:addon": async (c) => c.json(await addons.status(await addonOf(c))),
    "DELETE /v1/addons/:addon": async (c) => {
      await addons.remove(await addonOf(c), c.req.query("force") === "true");
      return c.body(null, 204);
    },
    "GET /v1/addons/:addon/env": async (c) => {
      const a = await addonOf(c);
      const vars = await addons.variables(a);
      return c.json({ addon: a.name, kind: a.kind, vars: revealOf(c) ? vars : shownVariables(vars) });
    },
    "GET /v1/addons/:addon/backups": async (c) => c.json(await addons.backups(await addonOf(c))),
    "POST /v1/addons/:addon/backups": async (c) => c.json(await addons.backup(await addonOf(c)), 201),
    "POST /v1/addons/:addon/backups/:backup/restore": async (c) => {
      const from = c.req.query("from");
      const source = from ? await addons.visible(from, only(c)) : undefined;
      return c.json(await addons.restore(await addonOf(c), c.req.param("backup") ?? "", source));
    },
  } satisfies SomeHandlers;
}

/** The routes of an app's links (ADR 0016) and of the variables it publishes to apps linked to it. */
export function linkHandlers(deps: Pick<ApiDeps, "addons" | "apps">) {
  const { addons, apps } = deps;
  const app = (c: Context<ApiEnv>) => appOf(deps, c);
  return {
    "GET /v1/apps/:app/links": async (c) => c.json(await addons.links(await app(c))),
    "POST /v1/apps/:app/links/addons": async (c, req) => {
      const a = await app(c);
      await addons.linkAddon(a, (await req.body()).addon);
      return c.json(await addons.links(a), 201);
    },
    "DELETE /v1/apps/:app/links/addons/:addon": async (c) => {
      await addons.unlinkAddon(await app(c), c.req.param("addon") ?? "");
      return c.body(null, 204);
    },
    "POST /v1/apps/:app/links/apps": async (c, req) => {
      const a = await app(c);
      const target = await apps.get((await req.body()).app);
      await addons.linkApp(a, target);
      return c.json(await addons.links(a), 201);
    },
    "DELETE /v1/apps/:app/links/apps/:target": async (c) => {
      await addons.unlinkApp(await app(c), await apps.get(c.req.param("target") ?? ""));
      return c.body(null, 204);
    },
    "GET /v1/apps/:app/published-config": async (c) => {
      const vars = await addons.published(await app(c));
      return c.json({ vars: revealOf(c) ? vars : shownVariables(vars) });
    },
    "PUT /v1/apps/:app/published-config/:name": async (c, req) => {
      const a = await app(c);
      const name = c.req.param("name") ?? "";
      const { value } = await req.body();
      // What an app publishes goes into the environment of the apps linked to it: the same caps (ADR 0022).
      const next = { ...(await addons.published(a)), [name]: value };
      const problem = envCapProblem(next, a.name, "published variables");
      if (problem) throw new PierError("ENV_LIMIT_EXCEEDED", problem, ENV_CAP_HINT);
      await addons.publish(a, name, value);
      return c.json({ name, value });
    },
    "DELETE /v1/apps/:app/published-config/:name": async (c) => {
      await addons.unpublish(await app(c), c.req.param("name") ?? "");
      return c.body(null, 204);
    },
  } satisfies SomeHandlers;
}
