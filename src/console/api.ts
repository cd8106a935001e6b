/**
 * The console's calls to the /v1 API, one typed call per route of the table (core/api/call.ts, ADR 0026):
 * `api("GET /v1/apps/:app/status", { params: { app } })`. The token from the tab's sessionStorage goes in an
 * Authorization header (never in a URL), errors become {@link ApiError} with the server's message and hint,
 * and server-sent events are read through fetch (EventSource cannot send the header). The route table is
 * imported for its types only: no zod in the bundle.
 */
import {
  type AnyCallOptions,
  type CallArgs,
  type CallOptions,
  type ReplyOf,
  type RouteEvent,
  routeUrl,
  type StreamKey,
} from "../core/api/call.js";
import type { RouteKey } from "../core/api/routes.js";
import { parseSse } from "../core/sse.js";

const KEY = "pierToken";

export const session = {
  token: (): string => sessionStorage.getItem(KEY) ?? "",
  save: (token: string) => sessionStorage.setItem(KEY, token),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** What a failed action shows: the message, then the hint. */
export function describe(e: unknown): string {
  if (e instanceof ApiError) return e.hint ? `${e.message} ${e.hint}` : e.message;
  return e instanceof Error ? e.message : String(e);
}

let unauthorized: () => void = () => undefined;
/** Called when the server answers 401 (a revoked token): the console signs out. */
export function onUnauthorized(f: () => void): void {
  unauthorized = f;
}

type ErrorBody = { error?: { code?: string; message?: string; hint?: string } } | null;

async function fail(r: Response): Promise<ApiError> {
  let body: ErrorBody = null;
  try {
    body = (await r.json()) as ErrorBody;
  } catch {
    // not JSON: the status says enough
  }
  const e = body?.error;
  if (r.status === 401) unauthorized();
  return new ApiError(
    r.status,
    e?.code ?? `HTTP_${r.status}`,
    e?.message ?? `${r.status} ${r.statusText}`,
    e?.hint,
  );
}

async function send(method: string, url: string, body: unknown, token: string, accept = "application/json") {
  try {
    return await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(
      0,
      "NETWORK",
      "The Pier server cannot be reached.",
      "Check that it runs, then try again.",
    );
  }
}

/** Besides the route's own options: the token to use (the one being signed in with), else the session's. */
type Token = { token?: string };

/**
 * One call to the route `key`: JSON in and out (a 204 gives undefined, a text answer its text), typed from
 * the route's declaration.
 */
export function api<K extends RouteKey>(key: K, ...args: CallArgs<K, Token>): Promise<ReplyOf<K>>;
export async function api(key: RouteKey, opts: AnyCallOptions & Token = {}): Promise<unknown> {
  const { method, url } = routeUrl(key, opts);
  const r = await send(method, url, opts.body, opts.token ?? session.token());
  if (!r.ok) throw await fail(r);
  if (r.status === 204) return undefined;
  return (r.headers.get("content-type") ?? "").includes("json") ? await r.json() : await r.text();
}

/** An event of a stream as the server sent it, its data parsed (not checked: the console bundles no zod). */
function routeEvent(ev: { event: string; data: string }): { event: "data" | "end"; data: unknown } | null {
  if (ev.event !== "message" && ev.event !== "end") return null;
  return { event: ev.event === "end" ? "end" : "data", data: JSON.parse(ev.data) };
}

/** The events of an SSE route (`follow=true`), until the server ends it or `signal` aborts. */
function events<K extends StreamKey>(
  key: K,
  opts: CallOptions<K>,
  signal: AbortSignal,
): AsyncGenerator<RouteEvent<K>>;
async function* events(
  key: StreamKey,
  opts: AnyCallOptions,
  signal: AbortSignal,
): AsyncGenerator<{ event: "data" | "end"; data: unknown }> {
  const { url } = routeUrl(key, { ...opts, query: { ...opts.query, follow: true } });
  let r: Response;
  try {
    r = await fetch(url, {
      headers: { authorization: `Bearer ${session.token()}`, accept: "text/event-stream" },
      signal,
    });
  } catch (e) {
    if (signal.aborted) return;
    throw new ApiError(0, "NETWORK", "The Pier server cannot be reached.", String(e));
  }
  if (!r.ok || !r.body) throw await fail(r);
  const reader = r.body.getReader();
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    } finally {
      reader.releaseLock();
    }
  }
  for await (const ev of parseSse(chunks())) {
    const parsed = routeEvent(ev);
    if (parsed) yield parsed;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

/**
 * Follows an SSE route that replays from its start: `event` returns true when the stream is finished. When
 * the connection drops (the server restarted, the network blinked) or the stream ends without finishing, it
 * reconnects after `reset()` (the replay starts afresh), saying so through `status`. A refusal (4xx) is
 * thrown: retrying would not help.
 */
export async function follow<K extends StreamKey>(
  key: K,
  opts: CallOptions<K>,
  signal: AbortSignal,
  handlers: {
    reset: () => void;
    event: (ev: RouteEvent<K>) => boolean;
    status: (problem: string | null) => void;
  },
  quietRetryMs = 5000,
): Promise<void> {
  while (!signal.aborted) {
    handlers.reset();
    let wait = quietRetryMs;
    try {
      for await (const ev of events(key, opts, signal)) {
        handlers.status(null);
        if (handlers.event(ev)) return;
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status >= 400 && e.status < 500) throw e;
      handlers.status(`${describe(e)} Reconnecting…`);
      wait = 2000;
    }
    await sleep(wait, signal);
  }
}
