import { LineSplitter } from "../../core/bounded-queue.js";
import type { InstanceLogLine } from "../../core/ports.js";

type Kind = "stdout" | "stderr";
/** Called for each line; a promise it returns pauses the engine's stream until it settles. */
export type LogSink = (l: InstanceLogLine) => void | Promise<void>;

/**
 * The lines of an instance's log as the engine sends them (not a tty): frames of an 8-byte header
 * [stream, 0, 0, 0, size (4 bytes)] and a payload; with `timestamps`, each line starts with its time.
 */
export class LogFrames {
  private pending: Buffer = Buffer.alloc(0);
  private readonly lines: Record<Kind, LineSplitter> = {
    stdout: new LineSplitter(),
    stderr: new LineSplitter(),
  };

  /** The lines the chunk completes. */
  push(chunk: Buffer): InstanceLogLine[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: InstanceLogLine[] = [];
    let i = 0;
    while (i + 8 <= this.pending.length) {
      const size = this.pending.readUInt32BE(i + 4);
      if (i + 8 + size > this.pending.length) break;
      const kind: Kind = this.pending[i] === 2 ? "stderr" : "stdout";
      for (const raw of this.lines[kind].push(this.pending.subarray(i + 8, i + 8 + size)))
        out.push(lineOf(kind, raw));
      i += 8 + size;
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

/**
 * Hands the lines of a followed log to `onLine` as the engine sends them, reading the next chunk only once
 * the sink took the last one's lines: a follower that does not keep up pauses the engine's stream (the
 * engine then stops reading its log file for it), so nothing piles up in Pier.
 */
export async function pumpLogs(
  stream: NodeJS.ReadableStream,
  onLine: LogSink,
  signal: AbortSignal,
): Promise<void> {
  const frames = new LogFrames();
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
export function logLines(buf: Buffer): InstanceLogLine[] {
  const frames = new LogFrames();
  return [...frames.push(buf), ...frames.end()];
}
