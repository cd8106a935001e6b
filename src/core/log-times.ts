// The times in runtime logs are the engine's (RFC 3339 with any number of fraction digits: dockerd's nine,
// a fake's three): as text they do not sort ("...:01.1Z" after "...:01.12Z"); their keys do.

/** A log line's time as text that sorts as the times do: the fraction padded to nine digits. */
export function timeKey(at: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/.exec(at);
  return m ? `${m[1]}.${(m[2] ?? "").padEnd(9, "0").slice(0, 9)}${m[3]}` : at;
}
