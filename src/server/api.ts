import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { answerProblem, checkedEvents, declaredAnswer, eventProblem } from "../core/api/check.js";
import { ROUTE_KEYS, ROUTES } from "../core/api/routes.js";
import { PierError } from "../core/errors.js";
import { authorize, keyHandlers, tokenHandlers } from "./access.js";
import { addonHandlers, linkHandlers } from "./addon-routes.js";
import { CONSOLE_ASSETS, CONSOLE_CSP, CONSOLE_HTML, consoleAsset } from "./console.js";
import { domainHandlers } from "./domain-routes.js";
import { nodeHandlers } from "./node-routes.js";
import { appHandlers, privateKeyHandlers } from "./routes/apps.js";
import { deploymentHandlers } from "./routes/deployments.js";
import type { ApiDeps } from "./routes/deps.js";
import { envHandlers } from "./routes/env.js";
import { type ApiEnv, type Handlers, mount } from "./routes/mount.js";

export { parseTime } from "./routes/deployments.js";
export type { ApiDeps } from "./routes/deps.js";

/** Every route of the table with its handler: a route without one does not compile. */
const handlersOf = (deps: ApiDeps): Handlers => ({
  ...appHandlers(deps),
  ...privateKeyHandlers(deps),
  ...envHandlers(deps),
  ...deploymentHandlers(deps),
  ...keyHandlers(deps),
  ...tokenHandlers(deps),
  ...addonHandlers(deps),
  ...linkHandlers(deps),
  ...domainHandlers(deps),
  ...nodeHandlers(deps),
});

/**
 * Turns an answer that is not the table's into a 500 naming the difference, and ends an event stream with
 * an `error` event at its first event that is not (ADR 0026; the unit tests).
 */
const checkAnswers: MiddlewareHandler = async (c, next) => {
  await next();
  const { status, headers } = c.res;
  const answer = declaredAnswer(c.req.method, c.req.path, status);
  if (answer?.sse && c.res.body && (headers.get("content-type") ?? "").includes("text/event-stream")) {
    const what = `An event of ${c.req.method} ${c.req.path}`;
    const body = checkedEvents(c.res.body, (ev) => {
      const problem = eventProblem(answer, ev);
      return problem ? `${what} is not the route table's: ${problem}.` : null;
    });
    c.res = new Response(body, { status, headers });
    return;
  }
  const problem = await answerProblem({
    method: c.req.method,
    path: c.req.path,
    status,
    contentType: headers.get("content-type") ?? "",
    // Read from a copy, and only for answers that are not event streams.
    text: () => c.res.clone().text(),
  });
  if (problem) {
    const message = `The answer to ${c.req.method} ${c.req.path} (${status}) is not the route table's: ${problem}.`;
    c.res = Response.json(new PierError("INTERNAL", message).toJSON(), { status: 500 });
  }
};

function onErrors(api: Hono<ApiEnv>, deps: ApiDeps): void {
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
}

/** Checked before anything reads the body: a larger Content-Length is refused unread, a chunked body cut. */
const limitBodies = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: (c) =>
      c.json(
        new PierError(
          "PAYLOAD_TOO_LARGE",
          `The request body is larger than ${maxBytes} bytes.`,
          "Send less (the limit is the server's setting PIER_API_MAX_BODY).",
        ).toJSON(),
        413,
      ),
  });

/** The web console (ADR 0017): its page and its bundle, outside /v1, no token needed. */
function consoleRoutes(api: Hono<ApiEnv>): void {
  const consolePage = (c: Context) => {
    c.header("content-security-policy", CONSOLE_CSP);
    c.header("x-content-type-options", "nosniff");
    return c.html(CONSOLE_HTML);
  };
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
}

/** The management API: the routes of the one route table (core/api/routes.ts), public ones before the token check. */
export function createApi(deps: ApiDeps): Hono<ApiEnv> {
  const api = new Hono<ApiEnv>();
  onErrors(api, deps);
  if (deps.checkAnswers) api.use("*", checkAnswers);
  api.use("*", limitBodies(deps.maxBodyBytes));
  consoleRoutes(api);
  const handlers = handlersOf(deps);
  const isPublic = (k: (typeof ROUTE_KEYS)[number]) => ROUTES[k].access === "public";
  mount(api, ROUTE_KEYS.filter(isPublic), handlers);
  api.use("/v1/*", authorize(deps.store));
  mount(
    api,
    ROUTE_KEYS.filter((k) => !isPublic(k)),
    handlers,
  );
  return api;
}
