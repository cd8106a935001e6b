import {
  type AnyCallOptions,
  type CallArgs,
  type RouteEvent,
  routeUrl,
  type StreamKey,
} from "../core/api/call.js";
import { type Answer, ROUTES, type RouteKey, type RouteSpec } from "../core/api/routes.js";
import { parseSse } from "../core/sse.js";
import type { CliConfig } from "./config.js";
import { ApiError, CliError, ConnectionError } from "./errors.js";
import { ApiErrorBodySchema, answerSchema, type CliReplyOf } from "./schemas.js";

/** Requests that are not streams give up after this long. */
const REQUEST_TIMEOUT_MS = 120_000;

/** The answer a route declares for `status`, else its first (an older server may answer another 2xx). */
function declaredAnswer(key: RouteKey, status: number): Answer {
  const spec: RouteSpec = ROUTES[key];
  return spec.responses[status] ?? Object.values(spec.responses)[0] ?? {};
}

/**
 * The management API of docs/api.md over global fetch, one typed call per route of the table
 * (core/api/routes.ts, ADR 0026): `call("GET /v1/apps/:app/status", { params: { app } })`. Every answer is
 * checked against the route's schema; error answers become ApiError with the server's message and hint.
 */
export class ApiClient {
  constructor(
    private readonly config: Pick<CliConfig, "url" | "token" | "source">,
    private readonly fetchFn: typeof fetch = globalThis.fetch,
  ) {}

  /** One request to the route `key`: its JSON answer parsed with the route's schema, its text, or nothing. */
  call<K extends RouteKey>(key: K, ...args: CallArgs<K>): Promise<CliReplyOf<K>>;
  async call(key: RouteKey, opts: AnyCallOptions = {}): Promise<unknown> {
    const { method, url } = routeUrl(key, opts);
    const declared = Object.values<Answer>(ROUTES[key].responses);
    const accept =
      declared.some((a) => a.json) || !declared.some((a) => a.text) ? "application/json" : "text/plain";
    const res = await this.send(method, url, opts, accept);
    const answer = declaredAnswer(key, res.status);
    if (res.status === 204 || (!answer.json && !answer.text)) {
      await res.arrayBuffer();
      return undefined;
    }
    const text = await res.text();
    if (!answer.json) return text;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw this.unexpected(method, url, "the answer is not JSON");
    }
    const parsed = answerSchema(key, answer.json).safeParse(body);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join(".") || "body"}: ${i.message}`)
        .join("; ");
      throw this.unexpected(method, url, issues);
    }
    return parsed.data;
  }

  /**
   * The server-sent events of a route that streams (`follow=true`), each `data` parsed with the route's event
   * schema, until the server ends the stream.
   */
  events<K extends StreamKey>(key: K, ...args: CallArgs<K>): AsyncGenerator<RouteEvent<K>>;
  async *events(
    key: StreamKey,
    opts: AnyCallOptions = {},
  ): AsyncGenerator<{ event: "data" | "end"; data: unknown }> {
    const { method, url } = routeUrl(key, { ...opts, query: { ...opts.query, follow: true } });
    const answer = declaredAnswer(key, 200);
    const res = await this.send(method, url, {}, "text/event-stream", false);
    if (!res.body) return;
    try {
      for await (const ev of parseSse(res.body)) {
        const schema = ev.event === "end" ? answer.end : ev.event === "message" ? answer.sse : undefined;
        if (!schema) continue;
        let data: unknown;
        try {
          data = schema.parse(JSON.parse(ev.data));
        } catch {
          throw this.unexpected(method, url, `an event that does not parse: ${ev.data.slice(0, 120)}`);
        }
        yield { event: ev.event === "end" ? "end" : "data", data };
      }
    } catch (e) {
      if (e instanceof CliError) throw e;
      throw new ConnectionError(
        `the connection to ${this.config.url} broke while following ${url}: ${causeText(e)}`,
        "run the command again to pick up where it stopped",
        true,
      );
    }
  }

  private async send(
    method: string,
    path: string,
    opts: { body?: unknown },
    accept: string,
    timeout = true,
  ): Promise<Response> {
    const url = new URL(this.config.url + path);
    const headers: Record<string, string> = { authorization: `Bearer ${this.config.token}`, accept };
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: timeout ? AbortSignal.timeout(REQUEST_TIMEOUT_MS) : undefined,
      });
    } catch (e) {
      if (e instanceof Error && e.name === "TimeoutError") {
        throw new CliError(`the Pier server at ${this.config.url} did not answer ${method} ${path} in time`);
      }
      throw new ConnectionError(
        `cannot reach the Pier server at ${this.config.url}: ${causeText(e)}`,
        `is it running? Start it with \`pier server\` (or \`npm start\`), or check PIER_URL (address from ${this.config.source})`,
        false,
      );
    }
    if (!res.ok) throw await this.errorOf(res, method, path);
    return res;
  }

  private async errorOf(res: Response, method: string, path: string): Promise<ApiError> {
    const text = await res.text().catch(() => "");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const parsed = ApiErrorBodySchema.safeParse(body);
    if (parsed.success) {
      const { code, message, hint } = parsed.data.error;
      const fallbackHint =
        res.status === 401 ? `check PIER_TOKEN, or the token in ${this.config.source}` : undefined;
      return new ApiError(res.status, code, message, hint ?? fallbackHint);
    }
    const excerpt = text.trim().slice(0, 200);
    return new ApiError(
      res.status,
      "",
      `the server answered ${res.status} ${res.statusText} to ${method} ${path}${excerpt ? `: ${excerpt}` : ""}`,
    );
  }

  private unexpected(method: string, path: string, detail: string): CliError {
    return new CliError(
      `unexpected answer from the server to ${method} ${path}: ${detail}`,
      "this CLI and the server may be different versions of Pier",
    );
  }
}

/** `ECONNREFUSED`, `ENOTFOUND`... from undici's `fetch failed`, else the message. */
function causeText(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause as { code?: unknown; message?: unknown } | undefined;
    if (cause && typeof cause.code === "string") return cause.code;
    if (cause && typeof cause.message === "string") return cause.message;
    return e.message;
  }
  return String(e);
}
