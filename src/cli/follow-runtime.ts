// `pier logs -f`: the server's stream follows the app for as long as it runs (ADR 0031). When the server goes
// (restarted, upgraded) the CLI follows again once it answers, from the last line printed, printing none
// twice; when the app is deleted, the log ends.
import { timeKey } from "../core/log-times.js";
import type { Context } from "./command.js";
import { ApiError, CliError, ConnectionError } from "./errors.js";
import type { RuntimeLogLine } from "./schemas.js";

/** How many of the last lines printed are remembered, to be skipped when the server sends them again. */
const REMEMBERED = 1000;
/** A stream that lasted this long was connected, even if it printed nothing (a quiet app). */
const CONNECTED_MS = 5000;

/** The last lines printed (bounded), each with the stream that printed it, and the time of the latest. */
class Printed {
  private readonly streams = new Map<string, number>();
  private readonly order: string[] = [];
  latest: string | null = null;

  /** Printed by an earlier stream than `stream` (one stream may print the same line twice). */
  before(l: RuntimeLogLine, stream: number): boolean {
    if (this.latest === null || timeKey(l.at) > this.latest) return false;
    return (this.streams.get(identity(l)) ?? stream) < stream;
  }

  add(l: RuntimeLogLine, stream: number): void {
    const id = identity(l);
    if (!this.streams.has(id)) this.order.push(id);
    this.streams.set(id, stream);
    if (this.order.length > REMEMBERED) this.streams.delete(this.order.shift() ?? "");
    const key = timeKey(l.at);
    if (this.latest === null || key > this.latest) this.latest = key;
  }
}

const identity = (l: RuntimeLogLine) => `${l.instance} ${l.at} ${l.stream} ${l.line}`;

export interface FollowOptions {
  since?: string;
  tail?: number;
  /** The wait before asking the server again (1 s). */
  retryMs?: number;
  /** How long a server that went away is waited for (2 minutes). */
  comeBackMs?: number;
}

/**
 * Prints the app's runtime log as it comes, until the app is deleted (0). A server that closes the stream or
 * cannot be reached is asked again every second, for two minutes, then the follow fails; so does a first
 * connection that fails, an error answer, or an event that is not a log line.
 */
export async function followRuntimeLogs(
  ctx: Context,
  app: string,
  o: FollowOptions,
  print: (l: RuntimeLogLine) => void,
): Promise<number> {
  const printed = new Printed();
  let query: { since?: string; tail?: number } = { since: o.since, tail: o.tail };
  const comeBackMs = o.comeBackMs ?? 120_000;
  let first = true;
  let awaySince: number | null = null;
  for (let stream = 0; ; stream++) {
    const began = Date.now();
    const { lines, error } = await readStream(ctx, app, query, { printed, stream }, print);
    if (error instanceof ApiError && error.code === "APP_NOT_FOUND" && !first) {
      ctx.err(`The app ${app} was deleted: its log ends here.\n`);
      return 0;
    }
    // A first connection that fails is an error as in any command; a lost one is asked again.
    if (error && (!(error instanceof ConnectionError) || (first && !error.connected))) throw error;
    first = false;
    if (lines > 0 || Date.now() - began >= CONNECTED_MS) awaySince = null;
    if (awaySince === null) {
      awaySince = Date.now();
      const why = error ? error.message : "the server closed the log stream";
      ctx.err(`pier: ${why}; following again once it answers (Ctrl-C stops).\n`);
    } else if (Date.now() - awaySince > comeBackMs) {
      throw new CliError(
        `the Pier server has not answered for ${Math.round(comeBackMs / 1000)} s: stopped following`,
        "run the command again once it runs",
      );
    }
    await new Promise((r) => setTimeout(r, o.retryMs ?? 1000));
    // From the last line printed (the server's `since` is in whole seconds: those printed are skipped).
    query = { since: printed.latest ?? o.since };
  }
}

/** One stream to its end: the lines it printed, and what ended it (null: the server closed it). */
async function readStream(
  ctx: Context,
  app: string,
  query: { since?: string; tail?: number },
  { printed, stream }: { printed: Printed; stream: number },
  print: (l: RuntimeLogLine) => void,
): Promise<{ lines: number; error: Error | null }> {
  let lines = 0;
  try {
    for await (const { data } of ctx.client().events("GET /v1/apps/:app/logs", { params: { app }, query })) {
      if (printed.before(data, stream)) continue;
      if (stream > 0 && lines === 0) ctx.err("pier: following again.\n");
      printed.add(data, stream);
      print(data);
      lines++;
    }
    return { lines, error: null };
  } catch (e) {
    return { lines, error: e instanceof Error ? e : new Error(String(e)) };
  }
}
