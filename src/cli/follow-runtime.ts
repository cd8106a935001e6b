// `pier logs -f`: the server's stream follows the app for as long as it runs (ADR 0031). When the server goes
// (restarted, upgraded) the CLI follows again once it answers, from the last line printed, printing none
// twice; when the app is deleted, the log ends.
import { cursorInstance, timeKey } from "../core/log-times.js";
import type { Context } from "./command.js";
import { ApiError, CliError, ConnectionError } from "./errors.js";
import type { RuntimeLogLine } from "./schemas.js";

/** A stream that lasted this long was connected, even if it printed nothing (a quiet app). */
const CONNECTED_MS = 5000;
/** How many instances' cursors are kept (those that printed last): what the server goes on after. */
const KEPT_CURSORS = 50;

/**
 * Where the follow stands: the cursor of the last line printed of each instance (the server goes on after
 * it: ADR 0031), and the time of the latest line printed (where instances it has no cursor of begin).
 */
class Resume {
  private readonly cursors = new Map<string, string>();
  latest: string | null = null;

  add(l: RuntimeLogLine): void {
    const key = timeKey(l.at);
    if (this.latest === null || key > this.latest) this.latest = key;
    if (!l.cursor) return;
    const instance = cursorInstance(l.cursor);
    this.cursors.delete(instance); // the most recent last
    this.cursors.set(instance, l.cursor);
    if (this.cursors.size > KEPT_CURSORS) this.cursors.delete(this.cursors.keys().next().value ?? "");
  }

  /** The query that follows again from here. */
  query(): { since?: string; after?: string } {
    const after = [...this.cursors.values()].join(",");
    return { since: this.latest ?? undefined, ...(after ? { after } : {}) };
  }
}

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
  const resume = new Resume();
  let query: { since?: string; tail?: number; after?: string } = { since: o.since, tail: o.tail };
  const comeBackMs = o.comeBackMs ?? 120_000;
  let first = true;
  let awaySince: number | null = null;
  for (let stream = 0; ; stream++) {
    const began = Date.now();
    const { lines, error } = await readStream(ctx, app, query, { resume, stream }, print);
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
    // From the last line printed of each instance; one the server has no cursor of, from the latest line.
    const from = resume.query();
    query = { ...from, since: from.since ?? o.since };
  }
}

/** One stream to its end: the lines it printed, and what ended it (null: the server closed it). */
async function readStream(
  ctx: Context,
  app: string,
  query: { since?: string; tail?: number; after?: string },
  { resume, stream }: { resume: Resume; stream: number },
  print: (l: RuntimeLogLine) => void,
): Promise<{ lines: number; error: Error | null }> {
  let lines = 0;
  // A server older than cursors sends lines already printed again: those up to the latest are skipped.
  const upTo = stream > 0 ? resume.latest : null;
  try {
    for await (const { data } of ctx.client().events("GET /v1/apps/:app/logs", { params: { app }, query })) {
      if (!data.cursor && upTo !== null && timeKey(data.at) <= upTo) continue;
      if (stream > 0 && lines === 0) ctx.err("pier: following again.\n");
      resume.add(data);
      print(data);
      lines++;
    }
    return { lines, error: null };
  } catch (e) {
    return { lines, error: e instanceof Error ? e : new Error(String(e)) };
  }
}
