import { validateVariable, validateVariableName } from "../../core/env.js";
import { maskedValueProblem, shownValue, shownVariables } from "../../core/env-secrets.js";
import { PierError } from "../../core/errors.js";
import { revealOf } from "../reveal.js";
import { appOf } from "./apps.js";
import type { ApiDeps } from "./deps.js";
import type { SomeHandlers } from "./mount.js";

/** An app's variables: secret values masked unless revealed (ADR 0024), the caps checked (ADR 0022). */
export function envHandlers(deps: ApiDeps) {
  const { store } = deps;
  return {
    "GET /v1/apps/:app/env": async (c) => {
      const app = await appOf(deps, c);
      const reveal = revealOf(c);
      const clear = await store.getEnv(app.id);
      // `linked` (when the app has links): the variables they give it, each with its source, but the names
      // the app sets itself. Secret values are masked unless revealed (ADR 0024).
      const { linked: all } = await deps.addons.environment(app.id, clear);
      const vars = reveal ? clear : shownVariables(clear);
      const linked = reveal ? all : all.map((l) => ({ ...l, value: l.value && shownValue(l.name, l.value) }));
      return c.json(linked.length > 0 ? { vars, linked } : { vars });
    },
    "PATCH /v1/apps/:app/env": async (c, req) => {
      const app = await appOf(deps, c);
      const b = await req.body();
      const set = b.set ?? {};
      const problems = [
        ...Object.entries(set).map(([k, v]) => validateVariable(k, v) ?? maskedValueProblem(k, v)),
        ...(b.unset ?? []).map((k) => validateVariableName(k)),
        ...(await deps.addons.bucketProblems(app, set)),
      ].filter((p): p is string => p !== null);
      if (problems.length > 0)
        throw new PierError("INVALID_VARIABLE", problems.join("; "), "Nothing was changed.");
      const vars = await store.changeEnv(app.id, set, b.unset ?? [], deps.limits.envCheck(app));
      return c.json({ vars: revealOf(c) ? vars : shownVariables(vars) });
    },
    "PUT /v1/apps/:app/env/:name": async (c, req) => {
      const app = await appOf(deps, c);
      const name = c.req.param("name") ?? "";
      const { value } = await req.body();
      const problem =
        validateVariable(name, value) ??
        maskedValueProblem(name, value) ??
        (await deps.addons.bucketProblems(app, { [name]: value }))[0];
      if (problem) throw new PierError("INVALID_VARIABLE", problem, "Nothing was changed.");
      await store.changeEnv(app.id, { [name]: value }, [], deps.limits.envCheck(app));
      return c.json({ name, value });
    },
    "DELETE /v1/apps/:app/env/:name": async (c) => {
      const app = await appOf(deps, c);
      const name = c.req.param("name") ?? "";
      const vars = await store.getEnv(app.id);
      if (!Object.hasOwn(vars, name))
        throw new PierError("NOT_FOUND", `The variable ${name} is not set on ${app.name}.`);
      await store.changeEnv(app.id, {}, [name]);
      return c.body(null, 204);
    },
  } satisfies SomeHandlers;
}
