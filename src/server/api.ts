import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import type { Logger } from "pino";
import type { z } from "zod";
import { type Dropped, droppedLine, isDropped } from "../core/bounded-queue.js";
import {
  maskedValueProblem,
  shownValue,
  shownVariables,
  validateVariable,
  validateVariableName,
} from "../core/env.js";
import { PierError } from "../core/errors.js";
import type { App } from "../core/model.js";
import type { NodeVersion } from "../core/node-versions.js";
import type { Store } from "../core/ports.js";
import { type ApiEnv, accessRoutes, authorize } from "./access.js";
import { addonRoutes } from "./addon-routes.js";
import type { AddonService } from "./addons.js";
import type { AppService } from "./apps.js";
import { CONSOLE_ASSETS, CONSOLE_CSP, CONSOLE_HTML, consoleAsset } from "./console.js";
import type { DeployLogs } from "./deploy-logs.js";
import { domainRoutes } from "./domain-routes.js";
import type { DomainService } from "./domains.js";
import type { AppLimits } from "./limits.js";
import { buildOpenApi } from "./openapi.js";
import { revealOf } from "./reveal.js";
import { schemas } from "./schemas.js";

async function body<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let raw: unknown;
  let proto = false;
  try {
    const text = await c.req.text();
    // A `__proto__` key would vanish in the schema's objects (or change them): it is refused, not lost.
    raw =
      text.trim() === ""
        ? {}
        : JSON.parse(text, (k, v: unknown) => {
            if (k === "__proto__") proto = true;
            return v;
          });
  } catch {
    throw new PierError("INVALID_INPUT", "The request body is not valid JSON.");
  }
  if (proto) {
    throw new PierError(
      "INVALID_VARIABLE",
      'The name "__proto__" is reserved (it names a property of every JavaScript object): choose another name.',
      "Nothing was changed.",
    );
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    throw new PierError(
      "INVALID_INPUT",
      r.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "),
    );
  }
  return r.data;
}

/** The line a follower of a deployment's log sees where lines were dropped for it. */
const droppedLogLine = (d: Dropped) => ({ at: new Date().toISOString(), line: droppedLine(d.dropped), ...d });

/** "10m", "2h", "3d" before now, or an ISO time. */
export function parseTime(v: string | undefined, field: string): Date | undefined {
  if (!v) return undefined;
  const rel = /^(\d+)(s|m|h|d)$/.exec(v);
  if (rel) {
    const mult = { s: 1, m: 60, h: 3600, d: 86400 }[rel[2] as "s" | "m" | "h" | "d"];
    return new Date(Date.now() - Number(rel[1]) * mult * 1000);
  }
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) {
    throw new PierError(
      "INVALID_INPUT",
      `${field}: '${v}' is neither an ISO time nor a duration like 10m, 2h, 1d.`,
    );
  }
  return d;
}

export function createApi(deps: {
  store: Store;
  apps: AppService;
  addons: AddonService;
  /** Custom domains and certificates (ADR 0018). */
  domains: DomainService;
  logs: DeployLogs;
  /** Each app's ceiling and the caps on variables (ADR 0022). */
  limits: AppLimits;
  logger: Logger;
  nodeVersions: () => Promise<NodeVersion[]>;
  info: {
    version: string;
    domain: string;
    httpPort: number;
    httpsPort: number;
    sshPort: number;
    gitHost: string;
  };
  /** PIER_API_MAX_BODY. */
  maxBodyBytes: number;
}): Hono<ApiEnv> {
  const { store, apps, logs } = deps;
  const api = new Hono<ApiEnv>();

  api.onError((err, c) => {
    if (err instanceof PierError) return c.json(err.toJSON(), err.status as 400);
    deps.logger.error({ err, path: c.req.path }, "request failed");
    return c.json(new PierError("INTERNAL", "Internal error; see the server log.").toJSON(), 500);
  });
  api.notFound((c) =>
    c.json(
      new PierError(
        "NOT_FOUND",
        `No route ${c.req.method} ${c.req.path}.`,
        "See GET /v1/openapi.json.",
      ).toJSON(),
      404,
    ),
  );

  const consolePage = (c: Context) => {
    c.header("content-security-policy", CONSOLE_CSP);
    c.header("x-content-type-options", "nosniff");
    return c.html(CONSOLE_HTML);
  };
  // Checked before anything reads the body: a larger Content-Length is refused unread, and a chunked body
  // is cut as soon as it passes the limit (never buffered whole).
  api.use(
    "*",
    bodyLimit({
      maxSize: deps.maxBodyBytes,
      onError: (c) =>
        c.json(
          new PierError(
            "PAYLOAD_TOO_LARGE",
            `The request body is larger than ${deps.maxBodyBytes} bytes.`,
            "Send less (the limit is the server's setting PIER_API_MAX_BODY).",
          ).toJSON(),
          413,
        ),
    }),
  );
  api.get("/", consolePage);
  api.get("/console", consolePage);
  api.get("/console/:file", (c) => {
    const file = c.req.param("file");
    const type = Object.hasOwn(CONSOLE_ASSETS, file) ? CONSOLE_ASSETS[file] : undefined;
    if (!type) throw new PierError("NOT_FOUND", `No console file ${file}.`);
    c.header("content-type", type);
    c.header("x-content-type-options", "nosniff");
    c.header("cache-control", "no-cache");
    return c.body(consoleAsset(file));
  });
  api.get("/v1/info", (c) => c.json(deps.info));
  api.get("/v1/openapi.json", (c) => c.json(buildOpenApi(deps.info.version)));

  api.use("/v1/*", authorize(store));
  accessRoutes(api, { store, apps, body });
  addonRoutes(api, { addons: deps.addons, apps, body });
  domainRoutes(api, { domains: () => deps.domains, apps, body });

  const appOf = async (c: Context): Promise<App> => apps.get(c.req.param("app") ?? "");

  api.get("/v1/apps", async (c) => {
    return c.json(await apps.list(c.get("token").app?.id));
  });
  api.post("/v1/apps", async (c) =>
    c.json(await apps.view(await apps.create(await body(c, schemas.createApp))), 201),
  );
  api.get("/v1/apps/:app", async (c) => c.json(await apps.view(await appOf(c))));
  api.patch("/v1/apps/:app", async (c) => {
    const r = await apps.patch(await appOf(c), await body(c, schemas.patchApp));
    return c.json({ app: await apps.view(r.app), deployment: r.deployment });
  });
  api.delete("/v1/apps/:app", async (c) => {
    await apps.remove(await appOf(c));
    return c.body(null, 204);
  });
  api.get("/v1/apps/:app/status", async (c) => {
    const app = await appOf(c);
    // The app's custom domains with their certificates' state (ADR 0018), beside its instances.
    return c.json({ ...(await apps.status(app)), domains: await deps.domains.list(app) });
  });
  api.post("/v1/apps/:app/stop", async (c) => c.json(await apps.view(await apps.stop(await appOf(c)))));

  api.get("/v1/apps/:app/env", async (c) => {
    const app = await appOf(c);
    const reveal = revealOf(c);
    const clear = await store.getEnv(app.id);
    // `linked` (when the app has links): the variables they give it, each with its source, but the names
    // the app sets itself. Secret values are masked unless revealed (ADR 0024).
    const { linked: all } = await deps.addons.environment(app.id, clear);
    const vars = reveal ? clear : shownVariables(clear);
    const linked = reveal ? all : all.map((l) => ({ ...l, value: l.value && shownValue(l.name, l.value) }));
    return c.json(linked.length > 0 ? { vars, linked } : { vars });
  });
  api.patch("/v1/apps/:app/env", async (c) => {
    const app = await appOf(c);
    const b = await body(c, schemas.patchEnv);
    const set = b.set ?? {};
    const problems = [
      ...Object.entries(set).map(([k, v]) => validateVariable(k, v) ?? maskedValueProblem(k, v)),
      ...(b.unset ?? []).map((k) => validateVariableName(k)),
    ].filter((p): p is string => p !== null);
    if (problems.length > 0)
      throw new PierError("INVALID_VARIABLE", problems.join("; "), "Nothing was changed.");
    const vars = await store.changeEnv(app.id, set, b.unset ?? [], deps.limits.envCheck(app));
    return c.json({ vars: revealOf(c) ? vars : shownVariables(vars) });
  });
  api.put("/v1/apps/:app/env/:name", async (c) => {
    const app = await appOf(c);
    const name = c.req.param("name");
    const { value } = await body(c, schemas.putEnv);
    const problem = validateVariable(name, value) ?? maskedValueProblem(name, value);
    if (problem) throw new PierError("INVALID_VARIABLE", problem);
    await store.changeEnv(app.id, { [name]: value }, [], deps.limits.envCheck(app));
    return c.json({ name, value });
  });
  api.delete("/v1/apps/:app/env/:name", async (c) => {
    const app = await appOf(c);
    const name = c.req.param("name");
    const vars = await store.getEnv(app.id);
    if (!Object.hasOwn(vars, name))
      throw new PierError("NOT_FOUND", `The variable ${name} is not set on ${app.name}.`);
    await store.changeEnv(app.id, {}, [name]);
    return c.body(null, 204);
  });

  // An app's ceiling (ADR 0022): its tokens read it; only an admin token sets it (ROUTE_ACCESS).
  api.get("/v1/apps/:app/limits", async (c) => c.json(await deps.limits.view(await appOf(c))));
  api.patch("/v1/apps/:app/limits", async (c) => {
    const app = await appOf(c);
    return c.json(await deps.limits.set(app, await body(c, schemas.patchLimits)));
  });

  api.get("/v1/apps/:app/releases", async (c) => c.json(await apps.releases(await appOf(c))));
  api.post("/v1/apps/:app/releases/:number/rollback", async (c) =>
    c.json(await apps.rollback(await appOf(c), c.req.param("number") ?? ""), 202),
  );
  api.get("/v1/apps/:app/deployments", async (c) => c.json(await store.listDeployments((await appOf(c)).id)));
  api.post("/v1/apps/:app/deployments", async (c) => {
    const app = await appOf(c);
    const b = await body(c, schemas.deploy);
    return c.json(
      await apps.redeploy(app, {
        withoutCache: b.withoutCache ?? false,
        // The deployment list and the log's first line say which it was.
        cause: b.withoutCache ? "restart without cache (API)" : "restart (API)",
      }),
      202,
    );
  });
  const deploymentOf = async (c: Context) => {
    const app = await appOf(c);
    const ref = c.req.param("id") ?? "";
    const d =
      ref === "latest"
        ? ((await store.listDeployments(app.id, 1))[0] ?? null)
        : await store.getDeployment(ref);
    if (!d || d.appId !== app.id) {
      throw new PierError(
        "DEPLOYMENT_NOT_FOUND",
        `No deployment '${ref}' for ${app.name}.`,
        "See `pier deployments`.",
      );
    }
    return d;
  };
  api.get("/v1/apps/:app/deployments/:id", async (c) => {
    if (c.req.param("id") === "current")
      throw new PierError("INVALID_INPUT", "Use `latest` to read a deployment.");
    return c.json(await deploymentOf(c));
  });
  api.post("/v1/apps/:app/deployments/:id/cancel", async (c) => {
    const app = await appOf(c);
    return c.json(await apps.cancel(app, c.req.param("id") ?? "current"));
  });
  api.get("/v1/apps/:app/deployments/:id/log", async (c) => {
    const d = await deploymentOf(c);
    if (c.req.query("follow") !== "true") {
      const lines = await logs.read(d.id);
      return c.text(lines.map((l) => `${l.line}\n`).join(""));
    }
    return streamSSE(c, async (stream) => {
      const { lines, stop } = await logs.follower(d.id);
      stream.onAbort(stop);
      // One line at a time, each written before the next is taken: a slow reader's lines wait in its own
      // bounded queue, and past it are dropped with a marker line (deploy-logs.ts).
      for await (const l of lines) {
        if (stream.aborted) break;
        await stream.writeSSE({ data: JSON.stringify(isDropped(l) ? droppedLogLine(l) : l) });
      }
      stop();
      if (stream.aborted) return;
      const final = await store.getDeployment(d.id);
      await stream.writeSSE({ event: "end", data: JSON.stringify(final) });
    });
  });

  api.get("/v1/apps/:app/logs", async (c) => {
    const app = await appOf(c);
    const since = parseTime(c.req.query("since"), "since");
    const until = parseTime(c.req.query("until"), "until");
    const tailQ = c.req.query("tail");
    const tail = tailQ === undefined ? undefined : Number(tailQ);
    if (tail !== undefined && (!Number.isInteger(tail) || tail < 0)) {
      throw new PierError("INVALID_INPUT", "tail: must be a non-negative integer.");
    }
    if (c.req.query("follow") !== "true") {
      return c.json({ lines: await apps.runtimeLogs(app, { since, until, tail }) });
    }
    return streamSSE(c, async (stream) => {
      const ac = new AbortController();
      stream.onAbort(() => ac.abort());
      // Each line is written before the engine's stream is read further: a reader that does not keep up
      // pauses the engine's logs for it (nothing piles up in Pier). A write settles when the reader leaves.
      await apps.followRuntimeLogs(
        app,
        { since, tail },
        (l) => stream.writeSSE({ data: JSON.stringify(l) }),
        ac.signal,
      );
    });
  });

  api.get("/v1/runtimes/node", async (c) => c.json({ versions: await deps.nodeVersions() }));

  api.get("/v1/apps/:app/ssh-private-key", async (c) => {
    const info = await apps.sshPrivateKey(c.req.param("app"));
    if (!info)
      throw new PierError(
        "NOT_FOUND",
        `App '${c.req.param("app")}' has no private SSH key.`,
        "Set one: pier ssh-private-key set FILE --app APP",
      );
    return c.json(info);
  });
  api.put("/v1/apps/:app/ssh-private-key", async (c) => {
    const { privateKey } = await body(c, schemas.putPrivateKey);
    return c.json(await apps.setSshPrivateKey(c.req.param("app"), privateKey));
  });
  api.delete("/v1/apps/:app/ssh-private-key", async (c) => {
    await apps.removeSshPrivateKey(c.req.param("app"));
    return c.body(null, 204);
  });

  return api;
}
