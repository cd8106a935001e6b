import type { Context, Hono } from "hono";
import type { z } from "zod";
import { type BodyOf, ROUTES, type RouteKey, type RouteSpec, splitKey } from "../../core/api/routes.js";
import { PierError } from "../../core/errors.js";
import type { ApiToken } from "../../core/model.js";

/** Who is asking, set by the auth middleware for every /v1 route that needs a token. */
export type ApiEnv = { Variables: { token: ApiToken } };

/** What a handler gets besides Hono's context: its body, parsed with the table's schema when it asks. */
export interface RouteInput<K extends RouteKey> {
  body: () => Promise<BodyOf<K>>;
}

export type Handler<K extends RouteKey> = (
  c: Context<ApiEnv>,
  input: RouteInput<K>,
) => Response | Promise<Response>;

/** A handler for each route of the table (createApi checks that none is missing). */
export type Handlers = { [K in RouteKey]: Handler<K> };

/** Some of the table's handlers, each typed from its route (a module's share). */
export type SomeHandlers = Partial<Handlers>;

/** The JSON body of a request parsed with `schema`: `{}` when empty, a `__proto__` key refused. */
export async function readBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.output<T>> {
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

function register<K extends RouteKey>(api: Hono<ApiEnv>, key: K, handler: Handler<K>): void {
  const { method, path } = splitKey(key);
  const spec: RouteSpec = ROUTES[key];
  const body = (c: Context<ApiEnv>) => async (): Promise<BodyOf<K>> => {
    if (!spec.body) throw new PierError("INTERNAL", `The route ${key} declares no body.`);
    return (await readBody(c, spec.body)) as BodyOf<K>;
  };
  api.on(method, path, (c) => handler(c, { body: body(c) }));
}

/** Registers the routes `keys` of the table, each with its handler, in the table's order. */
export function mount(api: Hono<ApiEnv>, keys: readonly RouteKey[], handlers: Handlers): void {
  for (const key of keys) register(api, key, handlers[key]);
}
