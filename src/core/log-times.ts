// The times in runtime logs are the engine's (RFC 3339 with any number of fraction digits: dockerd's nine,
// a fake's three): as text they do not sort ("...:01.1Z" after "...:01.12Z"); their keys do.

/** A log line's time as text that sorts as the times do: the fraction padded to nine digits. */
export function timeKey(at: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/.exec(at);
  return m ? `${m[1]}.${(m[2] ?? "").padEnd(9, "0").slice(0, 9)}${m[3]}` : at;
}

/** Where an instance's log was sent to: the time key of its last line sent, and how many sent had that time. */
export interface LogMark {
  key: string;
  n: number;
}

/** The most cursors one `after` may hold (an app has at most 20 instances, and a few retired ones). */
export const MAX_CURSORS = 100;

/** A followed line's cursor: its instance and that instance's mark once the line is sent. */
export const cursorText = (instanceId: string, m: LogMark): string => `${instanceId}@${m.key}@${m.n}`;

/** The instance a cursor is of (its text up to the first `@`). */
export const cursorInstance = (cursor: string): string => cursor.slice(0, cursor.indexOf("@"));

const CURSOR = /^([A-Za-z0-9_.-]{1,128})@([^@,]{1,64})@([1-9]\d{0,8})$/;

/**
 * The marks of `after` (cursors of followed lines, comma-separated), by instance: a follow given them goes
 * on after each. Throws a message naming the first one that is not a cursor.
 */
export function parseCursors(text: string): Map<string, LogMark> {
  const marks = new Map<string, LogMark>();
  const parts = text.split(",").filter((p) => p !== "");
  if (parts.length > MAX_CURSORS) throw new Error(`at most ${MAX_CURSORS} cursors, not ${parts.length}`);
  for (const part of parts) {
    const m = CURSOR.exec(part);
    const key = m?.[2] ?? "";
    if (!m?.[1] || timeKey(key) !== key || Number.isNaN(Date.parse(key)))
      throw new Error(
        `'${part.slice(0, 80)}' is not the cursor of a followed log line (instance@time@count)`,
      );
    marks.set(m[1], { key, n: Number(m[3]) });
  }
  return marks;
}
