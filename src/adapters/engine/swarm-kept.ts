// What a stopped instance leaves behind on a swarm (ADR 0030). A service scaled to 0 gets its task deleted by
// the swarm's reaper about a second after the task ends, and its node then removes the container with its
// log: `pier logs` and `pier status` would lose the previous release's last lines (what its SIGTERM handler
// printed) and its exit code, which one machine keeps in the stopped container until the next deploy. So
// the driver follows the service's log while it stops, and keeps the lines and the task's end in a private
// file per service, until the instance is removed.
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { InstanceLogLine } from "../../core/ports.js";

/** The lines of the log read when an instance stops (the swarm's `tail`), and everything printed after. */
export const KEPT_TAIL = 1000;
/** At most this much of a stopped instance's log is kept (the oldest lines go first). */
export const KEPT_BYTES = 1024 * 1024;
/** The log is followed until it has been quiet this long after the task ended... */
const QUIET_MS = 300;
/** ...or at most this long. */
const LINGER_MS = 2_000;

/** How a stopped instance's task ended. */
export interface TaskEnd {
  state: string;
  exitCode: number | null;
}

/** Follows a service's log into `onLine` until `signal` aborts. */
export type FollowLog = (onLine: (l: InstanceLogLine) => void, signal: AbortSignal) => Promise<void>;

const key = (l: InstanceLogLine) => `${l.at}\u0000${l.stream}\u0000${l.line}`;

const size = (l: InstanceLogLine) => Buffer.byteLength(l.line) + 40;

/** Both lists' lines once each (a line is its time, stream and text), in time order. */
export function mergeLines(a: readonly InstanceLogLine[], b: readonly InstanceLogLine[]): InstanceLogLine[] {
  const seen = new Set<string>();
  const all = [...a, ...b].filter((l) => !seen.has(key(l)) && seen.add(key(l)));
  return all.sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
}

/** The newest of the lines that fit in `bytes` (at least the last one). */
export function newest(lines: readonly InstanceLogLine[], bytes: number): InstanceLogLine[] {
  let total = 0;
  let from = lines.length;
  while (from > 0) {
    total += size(lines[from - 1] as InstanceLogLine);
    if (total > bytes && from < lines.length) break;
    from--;
  }
  return lines.slice(from);
}

/**
 * The kept ends and lines of stopped instances: two private files per service in `dir`, its end (small, read
 * for lists, kept in memory) and its lines (read from disk when its log is asked for).
 */
export class KeptLogs {
  /** Service id -> how its task ended, once read or written (null: nothing kept). */
  private readonly ends = new Map<string, TaskEnd | null>();

  constructor(private readonly dir: string) {}

  private file(serviceId: string, kind: "end" | "log"): string {
    return join(this.dir, `${serviceId.replace(/[^A-Za-z0-9]/g, "")}.${kind}.json`);
  }

  /**
   * Starts following the service's log (call it before the service is told to stop); `end` says how its
   * task ended, waits for the lines still on their way, and keeps them after what was kept before.
   */
  follow(serviceId: string, followLog: FollowLog): { end(how: TaskEnd): Promise<void> } {
    const ac = new AbortController();
    const lines: InstanceLogLine[] = [];
    let bytes = 0;
    let last = Date.now();
    const following = followLog((l) => {
      lines.push(l);
      bytes += size(l);
      while (bytes > KEPT_BYTES && lines.length > 1) bytes -= size(lines.shift() as InstanceLogLine);
      last = Date.now();
    }, ac.signal).catch(() => undefined);
    return {
      end: async (how) => {
        const until = Date.now() + LINGER_MS;
        while (Date.now() < until && Date.now() - last < QUIET_MS)
          await new Promise((r) => setTimeout(r, QUIET_MS / 3));
        ac.abort();
        await following;
        await this.keep(serviceId, how, newest(mergeLines(await this.lines(serviceId), lines), KEPT_BYTES));
      },
    };
  }

  /** How the service's task ended, if it was kept. */
  async end(serviceId: string): Promise<TaskEnd | null> {
    const known = this.ends.get(serviceId);
    if (known !== undefined) return known;
    const end = await readJson<TaskEnd>(this.file(serviceId, "end"));
    this.ends.set(serviceId, end);
    return end;
  }

  /** The kept lines of the service (none: []). */
  async lines(serviceId: string): Promise<InstanceLogLine[]> {
    return (await readJson<InstanceLogLine[]>(this.file(serviceId, "log"))) ?? [];
  }

  /** The lines first, then the end (whose file says the record is whole). */
  private async keep(serviceId: string, end: TaskEnd, lines: InstanceLogLine[]): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeAtomically(this.file(serviceId, "log"), JSON.stringify(lines));
    await writeAtomically(this.file(serviceId, "end"), JSON.stringify(end));
    this.ends.set(serviceId, end);
  }

  /** Forgets what was kept of services not in `services` (removed while Pier was not running, say). */
  async sweep(services: ReadonlySet<string>): Promise<number> {
    const files = await readdir(this.dir).catch(() => [] as string[]);
    // A file is named by its service: `<id>.end.json`, `<id>.log.json`, or a write's `<id>....tmp`.
    const gone = files.filter((f) => !services.has(serviceOf(f)));
    for (const f of gone) {
      this.ends.delete(serviceOf(f));
      await rm(join(this.dir, f), { force: true });
    }
    return gone.length;
  }

  /** Forgets the service (it was removed). */
  async drop(serviceId: string): Promise<void> {
    this.ends.delete(serviceId);
    await rm(this.file(serviceId, "end"), { force: true });
    await rm(this.file(serviceId, "log"), { force: true });
  }
}

const serviceOf = (file: string) => file.split(".")[0] ?? "";

async function readJson<T>(path: string): Promise<T | null> {
  return readFile(path, "utf8")
    .then((t) => JSON.parse(t) as T)
    .catch(() => null);
}

/** Written whole or not at all; two stops of one instance at once each write their own temporary file. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await rename(tmp, path);
}
