/**
 * A call to one route of the table, typed from the route's declaration (ADR 0026): the path's parameters,
 * the query, the body a client sends and the answer it reads all come from `ROUTES[key]`, so a client that
 * names a wrong path, parameter, query field or body does not compile. The CLI (cli/client.ts) and the
 * console (console/api.ts) call through it. The table is imported for its types only: the console takes
 * them without bundling zod, and {@link routeUrl} needs nothing but the key.
 */
import type { z } from "zod";
import type { ROUTES, RouteKey } from "./routes.js";

type Spec<K extends RouteKey> = (typeof ROUTES)[K];
type Answers<K extends RouteKey> = Spec<K>["responses"][keyof Spec<K>["responses"]];

/** The path of a key: `"GET /v1/apps/:app"` -> `"/v1/apps/:app"`. */
type PathOf<K extends string> = K extends `${string} ${infer P}` ? P : never;

/** The `:name`s of a path. */
type ParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | ParamNames<Rest>
  : P extends `${string}:${infer N}`
    ? N
    : never;

/** The path's parameters, each a string (the client encodes it). */
export type ParamsOf<K extends RouteKey> = { readonly [N in ParamNames<PathOf<K>>]: string };

/** A query flag (`"true"`/`"false"` on the wire) is a boolean to a caller; other fields a string or number. */
type QueryValue<V> = [Exclude<V, undefined>] extends ["true" | "false"] ? boolean : string | number;

/** The query fields a route reads (declared in the table), each optional. */
export type QueryOf<K extends RouteKey> =
  Spec<K> extends { query: infer Q extends z.ZodType }
    ? { readonly [F in keyof z.input<Q>]?: QueryValue<z.input<Q>[F]> }
    : never;

/** The body a client sends to a route that reads one (the schema's input). */
export type RequestBodyOf<K extends RouteKey> =
  Spec<K> extends { body: infer B extends z.ZodType } ? z.input<B> : never;

type Reply<A> = A extends { json: infer S extends z.ZodType }
  ? z.output<S>
  : A extends { text: true }
    ? string
    : undefined;

/** What a call to the route reads: its JSON answer, the text of a text answer, or nothing (204). */
export type ReplyOf<K extends RouteKey> = Reply<Answers<K>>;

type EventData<A, F extends "sse" | "end"> = A extends { [P in F]: infer S extends z.ZodType }
  ? z.output<S>
  : never;

/** The routes that can answer server-sent events. */
export type StreamKey = {
  [K in RouteKey]: [EventData<Answers<K>, "sse">] extends [never] ? never : K;
}[RouteKey];

/**
 * One event of a route's stream, its `data` parsed: each `data` event one declared object, then (for a route
 * that declares one) the `end` event with its own.
 */
export type RouteEvent<K extends StreamKey> =
  | { event: "data"; data: EventData<Answers<K>, "sse"> }
  | ([EventData<Answers<K>, "end">] extends [never]
      ? never
      : { event: "end"; data: EventData<Answers<K>, "end"> });

type ParamsPart<K extends RouteKey> = [ParamNames<PathOf<K>>] extends [never]
  ? { params?: undefined }
  : { params: ParamsOf<K> };
type QueryPart<K extends RouteKey> = [QueryOf<K>] extends [never]
  ? { query?: undefined }
  : { query?: QueryOf<K> };
type BodyPart<K extends RouteKey> = [RequestBodyOf<K>] extends [never]
  ? { body?: undefined }
  : { body: RequestBodyOf<K> };

/** What a call to the route is given: `params` when its path has some, `body` when it reads one, `query`. */
export type CallOptions<K extends RouteKey> = ParamsPart<K> & QueryPart<K> & BodyPart<K>;

/** A call's options argument, which may be left out when nothing in it is required. */
export type CallArgs<K extends RouteKey, Extra = unknown> =
  // biome-ignore lint/complexity/noBannedTypes: `{}` is the type every object with no required key extends.
  {} extends CallOptions<K> & Extra ? [opts?: CallOptions<K> & Extra] : [opts: CallOptions<K> & Extra];

/** The loose shape of the options, as the builders of a request read them. */
export interface AnyCallOptions {
  params?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, string | number | boolean | undefined>>;
  body?: unknown;
}

/**
 * The method and the URL path (with its query string) of a call: each `:name` of the key's path replaced by
 * its parameter, URL-encoded (an app may be named by id, a key by its fingerprint); query fields that are
 * undefined are left out.
 */
export function routeUrl(key: RouteKey, opts: AnyCallOptions = {}): { method: string; url: string } {
  const space = key.indexOf(" ");
  const method = key.slice(0, space);
  const path = key
    .slice(space + 1)
    .split("/")
    .map((segment) => {
      if (!segment.startsWith(":")) return segment;
      const value = opts.params?.[segment.slice(1)];
      if (value === undefined) throw new Error(`${key}: the parameter ${segment} is missing.`);
      return encodeURIComponent(value);
    })
    .join("/");
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) query.set(k, String(v));
  const qs = query.toString();
  return { method, url: qs ? `${path}?${qs}` : path };
}
