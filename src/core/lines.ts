/**
 * One line reader for every stream Pier reads line by line (a child's output, an engine's log or event
 * stream, a server-sent event stream). Bytes go through one streaming UTF-8 decoder, so a character split
 * across two chunks comes out whole; a bound cuts a line that never ends into pieces instead of holding it.
 */

/** The longest line kept whole (Docker's own log driver cuts lines at 16 KiB too): longer ones are cut. */
export const MAX_LINE_CHARS = 16 * 1024;

export interface LineReaderOptions {
  /** A line longer than this (UTF-16 units) comes out in pieces; none are held longer. Default: no bound. */
  maxChars?: number;
  /** Lines end with `\n` or `\r\n` (the `\r` is dropped). Default: only `\n`, a `\r` is kept. */
  crlf?: boolean;
}

/**
 * Splits a stream of chunks (bytes, or text already decoded) into lines without their line ends. Feed one
 * kind of chunk per reader: bytes are decoded as UTF-8 with a streaming decoder.
 */
export class LineReader {
  private readonly decoder = new TextDecoder();
  private rest = "";
  private readonly maxChars: number;
  private readonly crlf: boolean;

  constructor(opts: LineReaderOptions = {}) {
    this.maxChars = opts.maxChars ?? Number.POSITIVE_INFINITY;
    this.crlf = opts.crlf ?? false;
  }

  /** The lines that `chunk` completes. */
  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const parts = (this.rest + text).split("\n");
    this.rest = parts.pop() ?? "";
    const out: string[] = [];
    for (const p of parts) this.cut(this.crlf && p.endsWith("\r") ? p.slice(0, -1) : p, out);
    while (this.rest.length > this.maxChars) {
      const at = cutAt(this.rest, this.maxChars);
      out.push(this.rest.slice(0, at));
      this.rest = this.rest.slice(at);
    }
    return out;
  }

  /** What is left at the end of the stream (a last line without its line end), if anything. */
  end(): string[] {
    const rest = this.rest + this.decoder.decode();
    this.rest = "";
    if (rest === "") return [];
    const out: string[] = [];
    this.cut(this.crlf && rest.endsWith("\r") ? rest.slice(0, -1) : rest, out);
    return out;
  }

  private cut(line: string, out: string[]): void {
    let i = 0;
    do {
      const at = i + cutAt(line.slice(i), this.maxChars);
      out.push(line.slice(i, at));
      i = at;
    } while (i < line.length);
  }
}

/** Where to cut `text` to keep at most `max` units, never between the two halves of a surrogate pair. */
function cutAt(text: string, max: number): number {
  if (text.length <= max) return text.length;
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff && max > 1 ? max - 1 : max;
}

/** The lines of a stream of chunks, as they complete, then the last one without a line end. */
export async function* readLines(
  chunks: AsyncIterable<Uint8Array | string>,
  opts: LineReaderOptions = {},
): AsyncGenerator<string> {
  const reader = new LineReader(opts);
  for await (const chunk of chunks) yield* reader.push(chunk);
  yield* reader.end();
}

/** The lines of a whole text: a final line end does not make one more (empty) line; "" has none. */
export function splitLines(text: string, opts: LineReaderOptions = {}): string[] {
  const reader = new LineReader(opts);
  return [...reader.push(text), ...reader.end()];
}
