import {
  type Dropped,
  FOLLOWER_LIMITS,
  FollowerQueue,
  lineBytes,
  type QueueLimits,
} from "../core/bounded-queue.js";
import { type Masker, maskUrlCredentials, secretMasker } from "../core/env-secrets.js";
import type { LogLine } from "../core/model.js";
import type { Store } from "../core/ports.js";

/** At most this many lines of a deployment are kept; the log says where it was cut. */
export const MAX_LOG_LINES = 10_000;
/** At most this many bytes (UTF-8) of a deployment's lines are kept. */
export const MAX_LOG_BYTES = 5 * 2 ** 20;
/** The last this many deployments of an app keep their logs; older ones' logs are deleted. */
export const KEPT_DEPLOY_LOGS = 50;

interface Live {
  appId: string;
  mask: Masker;
  lines: LogLine[];
  subscribers: Set<(l: LogLine) => void>;
  enders: Set<() => void>;
  kept: number;
  bytes: number;
  /** Lines not kept since the log was cut (said at the next line that is kept, or at the end). */
  dropped: number;
}

/**
 * The log of each deployment: every line is stored at once (so a crash loses nothing) and handed to
 * whoever follows it (the pusher's `remote:` lines, `pier logs --deployment -f`, the console).
 *
 * It is the one place where a deployment's lines and its reason are written, so it masks them: the app's
 * secret variables, the credentials of URLs, the app's private SSH key (see `secretMasker`). A chatty build
 * cannot fill the disk: each log keeps MAX_LOG_LINES lines / MAX_LOG_BYTES bytes, and only the last
 * KEPT_DEPLOY_LOGS deployments of an app keep theirs.
 */
export class DeployLogs {
  private readonly live = new Map<string, Live>();

  constructor(
    private readonly store: Store,
    private readonly limits: { lines: number; bytes: number; keptLogs: number } = {
      lines: MAX_LOG_LINES,
      bytes: MAX_LOG_BYTES,
      keptLogs: KEPT_DEPLOY_LOGS,
    },
    /** The variables the app's links give it (add-ons' passwords and URLs): masked as its own are. */
    private readonly linked: (appId: string) => Promise<Record<string, string>> = async () => ({}),
  ) {}

  /** The masker of an app's deployment logs, from its variables and secrets as they are now. */
  async maskerOf(appId: string, extra: Readonly<Record<string, string>> = {}): Promise<Masker> {
    const vars = { ...extra, ...(await this.store.getEnv(appId)) };
    const linked = secretMasker(await this.linked(appId).catch(() => ({})));
    // A key that cannot be read (secret.key replaced) cannot be printed either; the build says why it fails.
    const key = await this.store.getAppSecret(appId, "ssh_private_key").catch(() => null);
    const own = secretMasker(vars, key ? [key] : []);
    return (text) => linked(own(text));
  }

  async open(deploymentId: string, appId: string): Promise<void> {
    const mask = await this.maskerOf(appId);
    const l = this.live.get(deploymentId);
    if (l) {
      l.mask = mask;
      return;
    }
    this.live.set(deploymentId, {
      appId,
      mask,
      lines: [],
      subscribers: new Set(),
      enders: new Set(),
      kept: 0,
      bytes: 0,
      dropped: 0,
    });
  }

  /**
   * Reads the app's variables again (they may have changed since the deployment was queued), with
   * `extra`: the variables its links give it (add-ons' passwords and URLs), secrets alike.
   */
  async refreshMasker(deploymentId: string, extra: Readonly<Record<string, string>> = {}): Promise<void> {
    const l = this.live.get(deploymentId);
    if (!l) return;
    const before = l.mask;
    const now = await this.maskerOf(l.appId, extra);
    // Both: a variable unset (or an app deleted) meanwhile still masks what it masked.
    l.mask = (text) => now(before(text));
  }

  /** `text` with the deployment's secrets masked: for its reason, before it is stored. */
  mask(deploymentId: string, text: string): string {
    return (this.live.get(deploymentId)?.mask ?? maskUrlCredentials)(text);
  }

  /**
   * Writes a line (masked). Past the deployment's limits, lines are counted, not kept; `final` lines (the
   * outcome) are kept anyway, after a line saying where the log was cut.
   */
  write(deploymentId: string, line: string, opts: { final?: boolean } = {}): void {
    const l = this.live.get(deploymentId);
    const text = (l?.mask ?? maskUrlCredentials)(line);
    if (!l) {
      this.append(deploymentId, { at: new Date().toISOString(), line: text });
      return;
    }
    const size = Buffer.byteLength(text) + 1;
    if (!opts.final && (l.dropped > 0 || l.kept >= this.limits.lines || l.bytes + size > this.limits.bytes)) {
      l.dropped++;
      return;
    }
    if (l.dropped > 0) this.flushCut(deploymentId, l);
    this.keep(deploymentId, l, text, size);
  }

  private keep(deploymentId: string, l: Live, text: string, size: number): void {
    const entry: LogLine = { at: new Date().toISOString(), line: text };
    l.kept++;
    l.bytes += size;
    l.lines.push(entry);
    for (const s of l.subscribers) s(entry);
    this.append(deploymentId, entry);
  }

  /**
   * Stores a line, in the background. A line that cannot be stored is lost, never fatal: a killed build's
   * last output can arrive after its deployment ended and its app was deleted (the row is gone, the
   * store refuses the line), and an unhandled rejection there ended pier server.
   */
  private append(deploymentId: string, entry: LogLine): void {
    this.store.appendDeployLog(deploymentId, [entry]).catch(() => undefined);
  }

  private flushCut(deploymentId: string, l: Live): void {
    const text = `... log cut here: ${l.dropped} more line(s) not kept (a deployment keeps at most ${this.limits.lines} lines or ${Math.round(this.limits.bytes / 2 ** 20)} MiB of log).`;
    l.dropped = 0;
    this.keep(deploymentId, l, text, Buffer.byteLength(text) + 1);
  }

  close(deploymentId: string): void {
    const l = this.live.get(deploymentId);
    if (!l) return;
    if (l.dropped > 0) this.flushCut(deploymentId, l);
    this.live.delete(deploymentId);
    for (const e of l.enders) e();
    void this.store.pruneDeployLogs(l.appId, this.limits.keptLogs).catch(() => undefined);
  }

  isLive(deploymentId: string): boolean {
    return this.live.has(deploymentId);
  }

  async read(deploymentId: string): Promise<LogLine[]> {
    const l = this.live.get(deploymentId);
    return l ? [...l.lines] : this.store.deployLog(deploymentId);
  }

  /**
   * A follower's own view of the log, to read at its own pace: the lines so far (shared with the log, not
   * copied), then each new one, until the deployment ends. New lines wait in a queue of `limits`: a follower
   * that falls further behind loses lines (a `Dropped` marker in their place) rather than holding up the
   * deployment, the other followers or the server's memory. `stop()` when the follower goes away.
   */
  async follower(
    deploymentId: string,
    limits: QueueLimits = FOLLOWER_LIMITS,
  ): Promise<{ lines: AsyncIterable<LogLine | Dropped>; stop(): void }> {
    const l = this.live.get(deploymentId);
    if (!l) {
      const all = await this.store.deployLog(deploymentId);
      return { lines: replayThen(all, null), stop: () => undefined };
    }
    const queue = new FollowerQueue<LogLine>(limits, (x) => lineBytes(x.line));
    const onLine = (x: LogLine) => void queue.push(x);
    const onEnd = () => queue.end();
    const stop = () => {
      l.subscribers.delete(onLine);
      l.enders.delete(onEnd);
      queue.end();
    };
    // Sliced now: the lines so far (at most the log's own bound), while new ones go to the queue.
    const replay = l.lines.slice();
    l.subscribers.add(onLine);
    l.enders.add(onEnd);
    return { lines: replayThen(replay, queue), stop };
  }

  /** Delivers the lines so far, then each new one, then calls onEnd once the deployment ends. */
  async follow(deploymentId: string, onLine: (l: LogLine) => void, onEnd: () => void): Promise<() => void> {
    const l = this.live.get(deploymentId);
    if (!l) {
      for (const line of await this.store.deployLog(deploymentId)) onLine(line);
      onEnd();
      return () => undefined;
    }
    for (const line of l.lines) onLine(line);
    l.subscribers.add(onLine);
    l.enders.add(onEnd);
    return () => {
      l.subscribers.delete(onLine);
      l.enders.delete(onEnd);
    };
  }
}

async function* replayThen<T>(first: readonly T[], then: AsyncIterable<T | Dropped> | null) {
  yield* first;
  if (then) yield* then;
}
