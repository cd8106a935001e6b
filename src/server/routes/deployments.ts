import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { type Dropped, droppedLine, isDropped } from "../../core/bounded-queue.js";
import { PierError } from "../../core/errors.js";
import { type LogMark, parseCursors } from "../../core/log-times.js";
import { appOf } from "./apps.js";
import type { ApiDeps } from "./deps.js";
import type { ApiEnv, SomeHandlers } from "./mount.js";

/** The line a follower of a deployment's log sees where lines were dropped for it. */
const droppedLogLine = (d: Dropped) => ({ at: new Date().toISOString(), line: droppedLine(d.dropped), ...d });

/** How often a followed stream says it is alive (ApiDeps.keepAliveMs sets another in tests). */
const KEEP_ALIVE_MS = 20_000;

/**
 * A followed stream of server-sent events that says it is alive: an SSE comment every `keepAliveMs` for as
 * long as `run` writes. A follow can be quiet for hours (an app that prints nothing, a long build step), and
 * a client or proxy that ends a quiet body (Node's fetch after 300 s) would end it. A comment still waiting
 * for a slow reader is not followed by another.
 */
function followedStream(
  deps: ApiDeps,
  c: Context<ApiEnv>,
  run: (stream: SSEStreamingApi) => Promise<void>,
): Response {
  return streamSSE(c, async (stream) => {
    let waiting = false;
    const timer = setInterval(() => {
      if (waiting || stream.aborted) return;
      waiting = true;
      stream
        .write(": alive\n\n")
        .catch(() => undefined)
        .finally(() => {
          waiting = false;
        });
    }, deps.keepAliveMs ?? KEEP_ALIVE_MS);
    try {
      await run(stream);
    } finally {
      clearInterval(timer);
    }
  });
}

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

/** The deployment `:id` names for the app (`latest` allowed), or 404 DEPLOYMENT_NOT_FOUND. */
async function deploymentOf(deps: ApiDeps, c: Context<ApiEnv>) {
  const app = await appOf(deps, c);
  const ref = c.req.param("id") ?? "";
  const d =
    ref === "latest"
      ? ((await deps.store.listDeployments(app.id, 1))[0] ?? null)
      : await deps.store.getDeployment(ref);
  if (!d || d.appId !== app.id) {
    throw new PierError(
      "DEPLOYMENT_NOT_FOUND",
      `No deployment '${ref}' for ${app.name}.`,
      "See `pier deployments`.",
    );
  }
  return d;
}

/** A deployment's log as text, or followed as server-sent events until the deployment ends. */
async function deployLog(deps: ApiDeps, c: Context<ApiEnv>): Promise<Response> {
  const d = await deploymentOf(deps, c);
  if (c.req.query("follow") !== "true") {
    const lines = await deps.logs.read(d.id);
    return c.text(lines.map((l) => `${l.line}\n`).join(""));
  }
  return followedStream(deps, c, async (stream) => {
    const { lines, stop } = await deps.logs.follower(d.id);
    stream.onAbort(stop);
    // One line at a time, each written before the next is taken: a slow reader's lines wait in its own
    // bounded queue, and past it are dropped with a marker line (deploy-logs.ts).
    for await (const l of lines) {
      if (stream.aborted) break;
      await stream.writeSSE({ data: JSON.stringify(isDropped(l) ? droppedLogLine(l) : l) });
    }
    stop();
    if (stream.aborted) return;
    const final = await deps.store.getDeployment(d.id);
    await stream.writeSSE({ event: "end", data: JSON.stringify(final) });
  });
}

/** `after`: the cursors of followed lines a reader had, by instance (core/log-times.ts). */
function parseAfter(text: string | undefined): Map<string, LogMark> | undefined {
  if (text === undefined) return undefined;
  try {
    return parseCursors(text);
  } catch (e) {
    throw new PierError("INVALID_INPUT", `after: ${(e as Error).message}.`);
  }
}

/** The instances' runtime logs, or followed as server-sent events. */
async function runtimeLogs(deps: ApiDeps, c: Context<ApiEnv>): Promise<Response> {
  const app = await appOf(deps, c);
  const since = parseTime(c.req.query("since"), "since");
  const until = parseTime(c.req.query("until"), "until");
  const tailQ = c.req.query("tail");
  const tail = tailQ === undefined ? undefined : Number(tailQ);
  if (tail !== undefined && (!Number.isInteger(tail) || tail < 0)) {
    throw new PierError("INVALID_INPUT", "tail: must be a non-negative integer.");
  }
  const after = parseAfter(c.req.query("after"));
  if (c.req.query("follow") !== "true") {
    if (after)
      throw new PierError("INVALID_INPUT", "after: only a followed log (follow=true) goes on after cursors.");
    return c.json({ lines: await deps.apps.runtimeLogs(app, { since, until, tail }) });
  }
  return followedStream(deps, c, async (stream) => {
    const ac = new AbortController();
    stream.onAbort(() => ac.abort());
    // Each line is written before the engine's stream is read further: a reader that does not keep up
    // pauses the engine's logs for it (nothing piles up in Pier). A write settles when the reader leaves.
    await deps.apps.followRuntimeLogs(
      app,
      { since, tail, after },
      (l) => stream.writeSSE({ data: JSON.stringify(l) }),
      ac.signal,
    );
  });
}

/** Deployments (list, redeploy, read, cancel, log) and the runtime logs. */
export function deploymentHandlers(deps: ApiDeps) {
  const { store, apps } = deps;
  return {
    "GET /v1/apps/:app/deployments": async (c) =>
      c.json(await store.listDeployments((await appOf(deps, c)).id)),
    "POST /v1/apps/:app/deployments": async (c, req) => {
      const app = await appOf(deps, c);
      const b = await req.body();
      return c.json(
        await apps.redeploy(app, {
          withoutCache: b.withoutCache ?? false,
          // The deployment list and the log's first line say which it was.
          cause: b.withoutCache ? "restart without cache (API)" : "restart (API)",
        }),
        202,
      );
    },
    "GET /v1/apps/:app/deployments/:id": async (c) => {
      if (c.req.param("id") === "current")
        throw new PierError("INVALID_INPUT", "Use `latest` to read a deployment.");
      return c.json(await deploymentOf(deps, c));
    },
    "POST /v1/apps/:app/deployments/:id/cancel": async (c) => {
      const app = await appOf(deps, c);
      return c.json(await apps.cancel(app, c.req.param("id") ?? "current"));
    },
    "GET /v1/apps/:app/deployments/:id/log": (c) => deployLog(deps, c),
    "GET /v1/apps/:app/logs": (c) => runtimeLogs(deps, c),
  } satisfies SomeHandlers;
}
