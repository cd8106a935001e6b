/**
 * Whether an answer is the one the route table declares (ADR 0026): its status is one of the route's, its
 * body parses with the declared schema, and it holds no field the schema does not declare. The server's
 * unit tests run every answer through it (createApi's `checkAnswers`). Pure.
 */
import { z } from "zod";
import { matchKey } from "../permissions.js";
import { parseSseParts, type SseEvent } from "../sse.js";
import { ErrorBody } from "./records.js";
import { type Answer, ROUTE_KEYS, ROUTES, type RouteSpec } from "./routes.js";

export interface SeenAnswer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  /** The body's text (not read for event streams). */
  text: () => Promise<string>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const field = (at: string, k: string) => (at ? `${at}.${k}` : k);

/** The paths in `value` of fields `schema` does not declare (loose objects let them pass parsing). */
export function undeclaredFields(schema: z.core.$ZodType, value: unknown, at = ""): string[] {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return undeclaredFields(schema.unwrap(), value, at);
  if (schema instanceof z.ZodArray && Array.isArray(value))
    return value.flatMap((v, i) => undeclaredFields(schema.element, v, `${at}[${i}]`));
  if (schema instanceof z.ZodRecord && isObject(value))
    return Object.entries(value).flatMap(([k, v]) => undeclaredFields(schema.valueType, v, field(at, k)));
  if (schema instanceof z.ZodObject && isObject(value)) {
    const shape: Record<string, z.core.$ZodType> = schema.shape;
    return Object.entries(value).flatMap(([k, v]) => {
      const declared = shape[k];
      return declared ? undeclaredFields(declared, v, field(at, k)) : [field(at, k)];
    });
  }
  return [];
}

function jsonProblem(schema: z.ZodType, text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "the body is not JSON";
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    return parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ");
  const extra = undeclaredFields(schema, value);
  return extra.length > 0 ? `undeclared fields ${extra.join(", ")}` : null;
}

/** Null when the answer is as declared, else what differs. Paths outside /v1 (the console) are not checked. */
export async function answerProblem(a: SeenAnswer): Promise<string | null> {
  if (!a.path.startsWith("/v1/")) return null;
  if (a.status >= 400) return jsonProblem(ErrorBody, await a.text());
  const { route } = matchKey(ROUTE_KEYS, a.method, a.path);
  if (route === null) return "no route of the table answers this path";
  const spec: RouteSpec = ROUTES[route as keyof typeof ROUTES];
  const answer = spec.responses[a.status];
  if (!answer) return `status ${a.status} is not one the table declares for ${route}`;
  if (a.contentType.includes("text/event-stream"))
    return answer.sse ? null : "an event stream is not declared";
  if (a.contentType.includes("text/plain")) return answer.text ? null : "a text answer is not declared";
  if (answer.json) return jsonProblem(answer.json, await a.text());
  const text = await a.text();
  return text === "" ? null : "the table declares no body";
}

/**
 * Null when an event of a stream is one the route declares (each `data` event its `sse` schema, the `end`
 * event its `end` schema), else what differs.
 */
export function eventProblem(answer: Answer, ev: SseEvent): string | null {
  const schema = ev.event === "message" ? answer.sse : ev.event === "end" ? answer.end : undefined;
  if (!schema) return `an event '${ev.event}' is not declared`;
  return jsonProblem(schema, ev.data);
}

/** The answer the table declares for a request's route and status (null when there is none). */
export function declaredAnswer(method: string, path: string, status: number): Answer | null {
  const { route } = matchKey(ROUTE_KEYS, method, path);
  if (route === null) return null;
  const spec: RouteSpec = ROUTES[route as keyof typeof ROUTES];
  return spec.responses[status] ?? null;
}

/**
 * An event stream passed through unchanged while each event is checked with {@link eventProblem}: at the
 * first one that differs, an `error` event naming the difference (the error body) ends the stream. A
 * comment between events (a keep-alive) is passed on as it comes, unchecked.
 */
export function checkedEvents(
  body: ReadableStream<Uint8Array>,
  problemOf: (ev: SseEvent) => string | null,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const read: Uint8Array[] = [];
  async function* chunks(): AsyncGenerator<Uint8Array> {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      read.push(value);
      yield value;
    }
  }
  const events = parseSseParts(chunks());
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      const problem = next.done || "comment" in next.value ? null : problemOf(next.value);
      // The chunks that held the event go out once it is checked: one that differs is not passed on.
      const chunks = read.splice(0);
      if (!problem) for (const chunk of chunks) controller.enqueue(chunk);
      if (next.done) return controller.close();
      if (!problem) return;
      const error = { error: { code: "INTERNAL", message: problem } };
      controller.enqueue(new TextEncoder().encode(`event: error\ndata: ${JSON.stringify(error)}\n\n`));
      controller.close();
      await reader.cancel();
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
