import type { z } from "zod";
import type { CliConfig } from "./config.js";
import { ApiError, CliError } from "./errors.js";
import { ApiErrorBodySchema } from "./schemas.js";
import { parseSse, type SseEvent } from "./sse.js";

export type Query = Record<string, string | number | boolean | undefined>;
type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

/** A path under /v1 built from segments, each URL-encoded (`:app` may be a name, a key a fingerprint). */
export const apiPath = (...segments: string[]): string => `/v1/${segments.map(encodeURIComponent).join("/")}`;
export const appPath = (app: string, ...rest: string[]): string => apiPath("apps", app, ...rest);

/** Requests that are not streams give up after this long. */
const REQUEST_TIMEOUT_MS = 120_000;

/**
 * The management API of docs/api.md over global fetch. Every answer is checked against its schema;
 * error answers become ApiError with the server's message and hint.
 */
export class ApiClient {
  constructor(
    private readonly config: Pick<CliConfig, "url" | "token" | "source">,
    private readonly fetchFn: typeof fetch = globalThis.fetch,
  ) {}

  /** A JSON request whose answer is parsed with `schema`. */
  async call<S extends z.ZodType>(
    method: Method,
    path: string,
    schema: S,
    opts: { body?: unknown; query?: Query } = {},
  ): Promise<z.output<S>> {
    const res = await this.send(method, path, opts, "application/json");
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw this.unexpected(method, path, "the answer is not JSON");
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join(".") || "body"}: ${i.message}`)
        .join("; ");
      throw this.unexpected(method, path, issues);
    }
    return parsed.data;
  }

  /** A request answered with no body (204). */
  async callNoContent(
    method: Method,
    path: string,
    opts: { body?: unknown; query?: Query } = {},
  ): Promise<void> {
    const res = await this.send(method, path, opts, "application/json");
    await res.arrayBuffer();
  }

  /** A `text/plain` answer. */
  async text(path: string, query?: Query): Promise<string> {
    const res = await this.send("GET", path, { query }, "text/plain");
    return res.text();
  }

  /** A `text/event-stream` answer, event by event, until the server ends it. */
  async *events(path: string, query?: Query): AsyncGenerator<SseEvent> {
    const res = await this.send("GET", path, { query }, "text/event-stream", false);
    if (!res.body) return;
    try {
      yield* parseSse(res.body);
    } catch (e) {
      throw new CliError(
        `the connection to ${this.config.url} broke while following ${path}: ${causeText(e)}`,
        "run the command again to pick up where it stopped",
      );
    }
  }

  private async send(
    method: Method,
    path: string,
    opts: { body?: unknown; query?: Query },
    accept: string,
    timeout = true,
  ): Promise<Response> {
    const url = new URL(this.config.url + path);
    for (const [k, v] of Object.entries(opts.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
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
      throw new CliError(
        `cannot reach the Pier server at ${this.config.url}: ${causeText(e)}`,
        `is it running? Start it with \`pier server\` (or \`npm start\`), or check PIER_URL (address from ${this.config.source})`,
      );
    }
    if (!res.ok) throw await this.errorOf(res, method, path);
    return res;
  }

  private async errorOf(res: Response, method: Method, path: string): Promise<ApiError> {
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

  private unexpected(method: Method, path: string, detail: string): CliError {
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
