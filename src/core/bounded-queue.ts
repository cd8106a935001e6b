import { LineReader, MAX_LINE_CHARS } from "./lines.js";

export { MAX_LINE_CHARS };

/**
 * What a follower is sent in place of lines it could not be kept: at the place where they were lost.
 */
export interface Dropped {
  dropped: number;
}

export const isDropped = (x: unknown): x is Dropped =>
  typeof x === "object" && x !== null && "dropped" in x && typeof x.dropped === "number";

/** The marker line a follower sees where lines were dropped for it. */
export function droppedLine(n: number): string {
  return `... ${n} ${n === 1 ? "line" : "lines"} dropped`;
}

/** How much one follower's queue holds at most before it drops lines. */
export interface QueueLimits {
  items: number;
  bytes: number;
}

/**
 * A follower's queue: 4 096 lines or 1 MiB, whichever comes first. A follower that reads keeps it nearly
 * empty; the room is for a burst (a build's output comes in chunks of hundreds of lines).
 */
export const FOLLOWER_LIMITS: QueueLimits = { items: 4096, bytes: 2 ** 20 };

/**
 * A FIFO with a bound in items and in bytes, for one reader of a source that cannot wait for it (one log
 * fanned out to several followers). Past the bound, new items are counted, not kept: the reader later
 * takes a `Dropped` marker at the place they were lost, then what came after once there was room again.
 * Markers take no room (there is at most one between two kept items).
 */
export class DropQueue<T> {
  private entries: (T | Dropped)[] = [];
  private head = 0;
  private bytes = 0;
  private count = 0;
  /** Items dropped in all, since the queue was made. */
  droppedTotal = 0;

  constructor(
    private readonly limits: QueueLimits,
    private readonly sizeOf: (item: T) => number,
  ) {}

  /** Queues `item`, or counts it as dropped when the queue is full: false then. */
  push(item: T): boolean {
    const size = this.sizeOf(item);
    if (this.count >= this.limits.items || (this.count > 0 && this.bytes + size > this.limits.bytes)) {
      this.droppedTotal++;
      const last = this.entries[this.entries.length - 1];
      if (this.entries.length > this.head && isDropped(last)) last.dropped++;
      else this.entries.push({ dropped: 1 });
      return false;
    }
    this.entries.push(item);
    this.count++;
    this.bytes += size;
    return true;
  }

  /** The oldest item or marker, or undefined when there is none. */
  shift(): T | Dropped | undefined {
    if (this.head >= this.entries.length) return undefined;
    const e = this.entries[this.head] as T | Dropped;
    this.head++;
    if (!isDropped(e)) {
      this.count--;
      this.bytes -= this.sizeOf(e);
    }
    // Compacts now and then, so a long-lived queue does not keep every entry it ever held.
    if (this.head >= this.entries.length) {
      this.entries = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    return e;
  }

  get length(): number {
    return this.entries.length - this.head;
  }

  /** Items kept (markers aside). */
  get size(): number {
    return this.count;
  }
}

/**
 * A DropQueue a writer fills (`push`, then `end`) and one reader drains at its own pace with
 * `for await`: the reader waits while it is empty, and stops once it is ended and empty (or closed).
 */
export class FollowerQueue<T> implements AsyncIterable<T | Dropped> {
  private readonly queue: DropQueue<T>;
  private ended = false;
  private wake: (() => void) | null = null;

  constructor(limits: QueueLimits, sizeOf: (item: T) => number) {
    this.queue = new DropQueue(limits, sizeOf);
  }

  push(item: T): boolean {
    if (this.ended) return false;
    const kept = this.queue.push(item);
    this.notify();
    return kept;
  }

  /** No more items: the reader takes what is queued, then stops. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  get droppedTotal(): number {
    return this.queue.droppedTotal;
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T | Dropped> {
    while (true) {
      const next = this.queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}

/** UTF-8 size of a line of text, plus its line end. */
export const lineBytes = (text: string): number => Buffer.byteLength(text) + 1;

/**
 * The line reader with the bound Pier's log streams use (MAX_LINE_CHARS): output without line ends (a
 * build printing a progress bar for an hour) comes out in pieces, never held whole. Give it the bytes as
 * they come: its streaming decoder keeps a UTF-8 character split across chunks whole.
 */
export class LineSplitter extends LineReader {
  constructor(maxChars = MAX_LINE_CHARS) {
    super({ maxChars });
  }
}
