import { LineSplitter } from "../../core/bounded-queue.js";
import type { InstanceLogLine } from "../../core/ports.js";

type Kind = "stdout" | "stderr";
/** Called for each line; a promise it returns pauses the engine's stream until it settles. */
export type LogSink = (l: InstanceLogLine) => void | Promise<void>;

/** Told what the engine itself says in a log (it could not read all of it): not a line of the app's. */
export type NoteSink = (note: string) => void;

/** The engine's own message in a log stream (stream 3, "systemerr"). */
const ENGINE_NOTE = 3;

/**
 * The lines of an instance's log as the engine sends them (not a tty): frames of an 8-byte header
 * [stream, 0, 0, 0, size (4 bytes)] and a payload; with `timestamps`, each line starts with its time. A
 * frame of stream 3 is the engine's own message (a swarm's "incomplete log stream ... node X is not
 * available" when a task's node is down): given to `onNote`, never taken for a line the app printed.
 */
export class LogFrames {
  private pending: Buffer = Buffer.alloc(0);
  private readonly lines: Record<Kind, LineSplitter> = {
    stdout: new LineSplitter(),
    stderr: new LineSplitter(),
  };

  constructor(private readonly onNote: NoteSink = () => undefined) {}

  /** The lines the chunk completes. */
  push(chunk: Buffer): InstanceLogLine[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: InstanceLogLine[] = [];
    let i = 0;
    while (i + 8 <= this.pending.length) {
      const size = this.pending.readUInt32BE(i + 4);
      if (i + 8 + size > this.pending.length) break;
      const stream = this.pending[i];
      const payload = this.pending.subarray(i + 8, i + 8 + size);
      i += 8 + size;
      if (stream === ENGINE_NOTE) {
        this.onNote(payload.toString("utf8").trim());
        continue;
      }
      const kind: Kind = stream === 2 ? "stderr" : "stdout";
      for (const raw of this.lines[kind].push(payload)) out.push(lineOf(kind, raw));
    }
    this.pending = this.pending.subarray(i);
    return out;
  }

  end(): InstanceLogLine[] {
    return (["stdout", "stderr"] as const).flatMap((k) => this.lines[k].end().map((raw) => lineOf(k, raw)));
  }
}

function lineOf(stream: Kind, raw: string): InstanceLogLine {
  const sp = raw.indexOf(" ");
  const at = sp > 0 ? raw.slice(0, sp) : new Date().toISOString();
  return { at, stream, line: sp > 0 ? raw.slice(sp + 1) : raw };
}

/** A log the engine answered whole: as it came (a buffer), or read to its end (a stream). */
export async function logBuffer(out: Buffer | NodeJS.ReadableStream): Promise<Buffer> {
  if (Buffer.isBuffer(out)) return out;
  const parts: Buffer[] = [];
  for await (const c of out) parts.push(typeof c === "string" ? Buffer.from(c) : c);
  return Buffer.concat(parts);
}

/**
 * Hands the lines of a followed log to `onLine` as the engine sends them, reading the next chunk only once
 * the sink took the last one's lines: a follower that does not keep up pauses the engine's stream (the
 * engine then stops reading its log file for it), so nothing piles up in Pier.
 */
export async function pumpLogs(
  stream: NodeJS.ReadableStream,
  onLine: LogSink,
  signal: AbortSignal,
  onNote?: NoteSink,
): Promise<void> {
  const frames = new LogFrames(onNote);
  const deliver = async (lines: InstanceLogLine[]) => {
    for (const l of lines) {
      const wait = onLine(l);
      if (wait) await wait;
      if (signal.aborted) return;
    }
  };
  try {
    for await (const chunk of stream) {
      await deliver(frames.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
      if (signal.aborted) break;
    }
  } catch {
    // The stream ends with an error when it is aborted or the engine goes away: the log ends there.
  }
  if (!signal.aborted) await deliver(frames.end());
}

/** The lines of a log read whole (not followed). */
export function logLines(buf: Buffer, onNote?: NoteSink): InstanceLogLine[] {
  const frames = new LogFrames(onNote);
  return [...frames.push(buf), ...frames.end()];
}

/**
 * What the engine said it could not read, as a line of the log: on stderr, marked as Pier's, timed now (a
 * read log is sorted by time: it comes last). `names` gives a swarm node's name for its id.
 */
export function noteLine(note: string, names: ReadonlyMap<string, string> = new Map()): InstanceLogLine {
  const reasons = /the following reasons: (.*)$/s.exec(note)?.[1] ?? note;
  const named = reasons.replace(/\bnode (\w+)/g, (all, id: string) => {
    const name = names.get(id);
    return name ?? all;
  });
  return {
    at: new Date().toISOString(),
    stream: "stderr",
    line: `pier: some of this instance's log could not be read (${named.trim()})`,
  };
}
