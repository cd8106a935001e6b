// What the benches share besides processes (procs.ts): the tiny Node.js app the density benches deploy
// beside the Dockerfile one, and small figures.
import { loadavg } from "node:os";

/** A Node.js app of two files that answers "ok <APP_ID>" on $PORT. */
export const TINY_NODE_APP: Record<string, string> = {
  "package.json": `${JSON.stringify({ name: "tiny", version: "1.0.0", private: true, scripts: { start: "node server.js" } }, null, 2)}\n`,
  "server.js": [
    'const http = require("http");',
    'http.createServer((req, res) => res.end("ok " + process.env.APP_ID)).listen(Number(process.env.PORT || 8080), "0.0.0.0");',
    "",
  ].join("\n"),
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const median = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
/** The machine's 1-minute load average, as printed. */
export const load1 = () => loadavg()[0]?.toFixed(2) ?? "?";

/** How many of `names` pass `ok` now, checked 10 at a time (the apps answering through the edge). */
export async function countPassing(
  names: readonly string[],
  ok: (name: string) => Promise<boolean>,
): Promise<number> {
  let n = 0;
  for (let i = 0; i < names.length; i += 10)
    n += (await Promise.all(names.slice(i, i + 10).map(ok))).filter(Boolean).length;
  return n;
}
