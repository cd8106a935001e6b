// wrk, the load generator of the benches: written in C, it leaves the CPU to the servers measured (a
// Node.js client needs about a core of its own at 10k requests/s, on a 2-core machine, and parses each
// answer: it measured itself as much as the server).
import { spawnSync } from "node:child_process";
import { run } from "../test/e2e/harness.js";

/** Installs what the bench needs from Debian when missing: [command, package] pairs (wrk always). */
export function ensureTools(extra: [string, string][] = []): void {
  const missing = [["wrk", "wrk"] as [string, string], ...extra].filter(
    ([cmd]) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status !== 0,
  );
  if (missing.length === 0) return;
  const pkgs = missing.map(([, pkg]) => pkg);
  console.error(`bench: installing ${pkgs.join(" ")}`);
  const r = spawnSync("apt-get", ["install", "-y", "-qq", ...pkgs], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`needed: apt-get install ${pkgs.join(" ")}`);
}

export interface WrkResult {
  rps: number;
  p99ms: number;
  /** Socket errors and non-2xx/3xx answers. */
  errors: number;
  /** Requests completed. */
  requests: number;
}

/** `wrk -t2 -c<connections> -d<seconds>s --latency` against `url`, keep-alive unless `close`. */
export async function wrk(
  url: string,
  opts: { seconds: number; connections?: number; host?: string; close?: boolean },
): Promise<WrkResult> {
  const r = await run(
    [
      "wrk",
      "-t2",
      `-c${opts.connections ?? 50}`,
      `-d${opts.seconds}s`,
      "--latency",
      ...(opts.host ? ["-H", `Host: ${opts.host}`] : []),
      ...(opts.close ? ["-H", "Connection: close"] : []),
      url,
    ],
    { timeoutMs: (opts.seconds + 30) * 1000 },
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? 0);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(r.stdout);
  const p99ms = p99 ? Number(p99[1]) * (p99[2] === "us" ? 0.001 : p99[2] === "s" ? 1000 : 1) : Number.NaN;
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(r.stdout);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  const errors = (errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0) + non2xx;
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1] ?? 0);
  return { rps, p99ms, errors, requests };
}
