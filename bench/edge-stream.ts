// bench/edge-stream: how long the first part of a streamed response (server-sent events, a flushed page)
// takes to cross Pier's edge, against the same request made to the backend directly, in one run. The
// backend writes its first event at once and the last one 1.5 s later; before `option http-no-delay`
// (ADR 0013), HAProxy held every part but the last for about 200 ms. Target: the edge adds under 50 ms to
// the median (it was +200 ms). Prints each round, the medians and their difference, and the load average
// (a loaded machine stretches both sides alike).
// Run: npm run build && node dist/bench/edge-stream.js [rounds, default 15]
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { HaproxyEdge } from "../src/adapters/edge/haproxy.js";
import { freePort } from "../test/e2e/harness.js";

const ROUNDS = Number(process.argv[2] ?? 15);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`rounds must be a positive integer, not ${process.argv[2]}`);
const HOST = "stream.localhost";

/** Milliseconds from the request to the first byte of the body, at `port` with the app's Host. */
function firstPartMs(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(
      { host: "127.0.0.1", port, path: "/", headers: { host: HOST }, agent: false },
      (res) => {
        res.once("data", () => {
          resolve(Number(process.hrtime.bigint() - start) / 1e6);
          res.destroy();
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("no first part within 10 s")));
    req.on("error", reject);
    req.end();
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  const backend = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: first\n\n");
    const t = setTimeout(() => res.end("data: last\n\n"), 1500);
    res.on("close", () => clearTimeout(t));
  });
  await new Promise<void>((r) => backend.listen(0, "127.0.0.1", () => r()));
  const a = backend.address();
  const direct = typeof a === "object" && a ? a.port : 0;
  const dir = mkdtempSync(join(tmpdir(), "pier-bench-stream-"));
  const port = await freePort();
  const edge = new HaproxyEdge({ dir: join(dir, "edge"), listenHost: "127.0.0.1", listenPort: port });
  try {
    await edge.start();
    await edge.apply([{ appId: "app-s", hostname: HOST, targets: [{ host: "127.0.0.1", port: direct }] }]);
    await firstPartMs(port); // warm-up
    const viaEdge: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating order, so that neither side always runs first.
      let e: number;
      let d: number;
      if (i % 2 === 0) {
        e = await firstPartMs(port);
        d = await firstPartMs(direct);
      } else {
        d = await firstPartMs(direct);
        e = await firstPartMs(port);
      }
      viaEdge.push(e);
      bare.push(d);
      console.log(
        `round ${i + 1}: edge ${e.toFixed(1)} ms, direct ${d.toFixed(1)} ms (load ${loadavg()[0]?.toFixed(2)})`,
      );
    }
    const added = median(viaEdge) - median(bare);
    console.log(
      `first part, median: edge ${median(viaEdge).toFixed(1)} ms, direct ${median(bare).toFixed(1)} ms; the edge adds ${added.toFixed(1)} ms (target: under 50 ms)`,
    );
  } finally {
    await edge.stop();
    backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
