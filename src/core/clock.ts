/**
 * Time, for the services that schedule (certificate renewals and retries, the daily add-on backups): passed
 * in, so that their tests move it instead of waiting for it or comparing against the wall clock (ADR 0027).
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Calls `fn` once after `ms`; the pending call does not keep the process alive. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
}

export interface ClockTimer {
  cancel(): void;
}

/** The wall clock and Node's timers (unref'd): what `pier server` uses. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};
