import type { Clock, ClockTimer } from "../../src/core/clock.js";

/** A clock a test moves by hand: timers fire only in advance(), in the order they are due. */
export class ManualClock implements Clock {
  private readonly timers: { at: number; fn: () => void; seq: number }[] = [];
  private seq = 0;

  constructor(private ms = Date.parse("2026-11-20T12:00:00.000Z")) {}

  now(): number {
    return this.ms;
  }

  iso(offsetMs = 0): string {
    return new Date(this.ms + offsetMs).toISOString();
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const t = { at: this.ms + Math.max(0, ms), fn, seq: this.seq++ };
    this.timers.push(t);
    return {
      cancel: () => {
        const i = this.timers.indexOf(t);
        if (i >= 0) this.timers.splice(i, 1);
      },
    };
  }

  /** The times (ms from now) at which timers are pending, soonest first. */
  pending(): number[] {
    return this.timers.map((t) => t.at - this.ms).sort((a, b) => a - b);
  }

  /** Moves time on by `ms`, firing every timer due on the way (each at its own time). */
  advance(ms: number): void {
    const end = this.ms + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers.splice(this.timers.indexOf(due), 1);
      this.ms = Math.max(this.ms, due.at);
      due.fn();
    }
    this.ms = end;
  }
}
