// A followed runtime log (`pier logs -f`, the console) lasts as long as its reader: it follows the app, not
// the instances that served when it began. An instance that starts later (a deploy's, a scale's, one the
// engine restarted after a crash or placed on another node) is followed from its start; one that ends
// leaves the stream, which goes on until the reader goes or the app is deleted (ADR 0031).
import type { Logger } from "pino";
import { PierError } from "../core/errors.js";
import { instanceNumber, LABEL } from "../core/labels.js";
import { cursorText, type LogMark, timeKey } from "../core/log-times.js";
import type { Engine, InstanceInfo, InstanceLogLine, Store } from "../core/ports.js";
import type { Instances } from "./instances.js";

/** A line of an instance's log, with the instance's number in its app. */
export interface RuntimeLogLine extends InstanceLogLine {
  instance: number;
  /** A followed line's: its instance and where that instance's log stands once it is sent (`after`). */
  cursor?: string;
}

/** What a follow reads: the range of the instances it first finds, and where to go on for some of them. */
export interface FollowRange {
  since?: Date;
  tail?: number;
  /** By instance id, the marks of lines a reader had (their cursors): those instances go on after them. */
  after?: ReadonlyMap<string, LogMark>;
}

type Change = "started" | "gone";

/**
 * Who is told when an app's instances start (the engine's events) or the app is deleted: the followers of its
 * log. Costs nothing while no one follows; one engine list per follower when an instance of its app starts.
 */
export class InstanceStarts {
  private readonly listeners = new Map<string, Set<(c: Change) => void>>();

  /** `listener` is called on each start of one of the app's instances, and once the app is deleted. */
  on(appId: string, listener: (c: Change) => void): () => void {
    const set = this.listeners.get(appId) ?? new Set();
    set.add(listener);
    this.listeners.set(appId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(appId) === set) this.listeners.delete(appId);
    };
  }

  /** How many follow the app's log now. */
  followers(appId: string): number {
    return this.listeners.get(appId)?.size ?? 0;
  }

  started(appId: string): void {
    for (const l of this.listeners.get(appId) ?? []) l("started");
  }

  /** The engine came back after it went away: every follower looks again. */
  startedAll(): void {
    for (const appId of [...this.listeners.keys()]) this.started(appId);
  }

  gone(appId: string): void {
    for (const l of this.listeners.get(appId) ?? []) l("gone");
  }
}

export interface LogFollowDeps {
  engine: Pick<Engine, "logs">;
  instances: Pick<Instances, "list">;
  store: Pick<Store, "currentRelease">;
  starts: InstanceStarts;
  logger: Logger;
}

/**
 * Follows the app's runtime log until `signal` aborts or the app is deleted: first the instances serving
 * now (and any other that runs, a deploy's new ones), with `o`'s range (after its mark, for an instance
 * `o.after` has one of), then each instance as it starts. An instance followed again after it ended (the
 * engine restarted it) goes on after its last line sent, never repeating one. Each line carries its
 * cursor, for a reader that follows again to give back. A promise `onLine` returns pauses that instance's
 * log until it settles.
 */
export async function followAppLogs(
  deps: LogFollowDeps,
  appId: string,
  o: FollowRange,
  onLine: (l: RuntimeLogLine) => void | Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const end = new AbortController();
  const stop = () => end.abort();
  signal.addEventListener("abort", stop, { once: true });
  const f = new Follower(deps, onLine, end.signal, o.after);
  // The first listing, then each look after it in turn: an instance is never followed twice at once.
  let looking: Promise<void> = Promise.resolve();
  let queued = false;
  const lookAgain = () => {
    if (queued) return;
    queued = true;
    looking = looking
      .catch(() => undefined)
      .then(async () => {
        queued = false;
        if (!end.signal.aborted) await f.look(await deps.instances.list(appId));
      })
      .catch(f.warn);
  };
  // Told before the first listing: a start between the two is looked at after it.
  const off = deps.starts.on(appId, (c) => (c === "gone" ? stop() : lookAgain()));
  try {
    if (!signal.aborted) {
      looking = f.first(appId, o);
      await looking;
    }
    await new Promise<void>((resolve) => {
      if (end.signal.aborted) resolve();
      end.signal.addEventListener("abort", () => resolve(), { once: true });
    });
  } finally {
    off();
    signal.removeEventListener("abort", stop);
    end.abort();
    await looking.catch(() => undefined);
    await f.ended();
  }
}

/** How far before an instance's noted start its log is read when it is first followed. */
const START_MARGIN_MS = 2000;

/** The instances being followed, and the last line sent of each. */
class Follower {
  private readonly following = new Map<string, Promise<void>>();
  private readonly last: Map<string, LogMark>;

  constructor(
    private readonly deps: LogFollowDeps,
    private readonly onLine: (l: RuntimeLogLine) => void | Promise<void>,
    private readonly signal: AbortSignal,
    after: ReadonlyMap<string, LogMark> = new Map(),
  ) {
    this.last = new Map(after);
  }

  readonly warn = (err: unknown) => {
    if (!this.signal.aborted) this.deps.logger.warn({ err }, "a followed runtime log could not look again");
  };

  /** The serving release's instances and any other that runs, each with the range asked for or after its mark. */
  async first(appId: string, o: FollowRange): Promise<void> {
    const release = await this.deps.store.currentRelease(appId);
    for (const i of await this.deps.instances.list(appId)) {
      if (release && !i.running && i.labels[LABEL.deployment] !== release.deploymentId) continue;
      const mark = this.last.get(i.id);
      this.follow(i, mark ? { since: new Date(mark.key) } : { since: o.since, tail: o.tail });
    }
  }

  /** Each running instance not followed now: after its last line sent, or from its start. */
  async look(listed: readonly InstanceInfo[]): Promise<void> {
    // An instance gone from the engine (retired by a deploy) is not followed again: forget its mark.
    const ids = new Set(listed.map((i) => i.id));
    for (const id of this.last.keys()) if (!ids.has(id) && !this.following.has(id)) this.last.delete(id);
    for (const i of listed) {
      if (!i.running || this.following.has(i.id) || this.signal.aborted) continue;
      const after = this.last.get(i.id);
      if (after !== undefined) this.follow(i, { since: new Date(after.key) });
      // Not followed yet: from its start. The engine may note the start a little after the process's first
      // lines (a swarm's agent does): a margin, whose lines (an earlier run's end) this reader never saw.
      else if (i.startedAt) this.follow(i, { since: new Date(Date.parse(i.startedAt) - START_MARGIN_MS) });
      else this.follow(i, {});
    }
  }

  /** Follows `i`'s log in `range`, after the last line sent of it. */
  private follow(i: InstanceInfo, range: { since?: Date; tail?: number }): void {
    const instance = instanceNumber(i.labels);
    const after = this.last.get(i.id);
    let atMark = 0;
    const reading = this.deps.engine
      .logs(
        i.id,
        { ...range, follow: true },
        (l) => {
          const key = timeKey(l.at);
          // The engine's `since` is in whole seconds: what was sent before comes again, and is skipped
          // (lines can share a time: as many at the mark's as were sent).
          if (after && (key < after.key || (key === after.key && atMark++ < after.n))) return;
          const was = this.last.get(i.id);
          const mark = { key, n: was?.key === key ? was.n + 1 : 1 };
          this.last.set(i.id, mark);
          return this.onLine({ ...l, instance, cursor: cursorText(i.id, mark) });
        },
        this.signal,
      )
      .catch((err) => {
        // Removed meanwhile (a deploy retired it), or the engine went away: it is followed again if it runs.
        if (!(err instanceof PierError && err.code === "NOT_FOUND") && !this.signal.aborted)
          this.deps.logger.debug({ err, instance }, "a followed instance's log ended with an error");
      })
      .finally(() => {
        if (this.following.get(i.id) === reading) this.following.delete(i.id);
      });
    this.following.set(i.id, reading);
  }

  async ended(): Promise<void> {
    await Promise.all(this.following.values());
  }
}
