// Helpers of the fault tests: an app whose answer names its release, a push whose output can be watched
// while it runs (to time a fault from the deploy log), and a watcher that polls the app through the edge.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { httpGet, type Pier, type RunResult } from "./harness.js";

/** A Dockerfile app that answers `mark=<mark>`; optionally a slow build step, a slow start, a slow health path. */
export function markedApp(
  mark: string,
  opts: { buildSleep?: number; listenDelayMs?: number; exitAtOnce?: boolean } = {},
): Record<string, string> {
  return {
    Dockerfile: [
      "FROM pier/node:22",
      "WORKDIR /app",
      "COPY nonce.txt server.js ./",
      ...(opts.buildSleep ? [`RUN sleep ${opts.buildSleep}`] : []),
      `ENV MARK=${mark} LISTEN_DELAY=${opts.listenDelayMs ?? 0}`,
      opts.exitAtOnce
        ? 'CMD ["sh", "-c", "echo boom; echo the end >&2; exit 3"]'
        : 'CMD ["node", "server.js"]',
      "",
    ].join("\n"),
    "nonce.txt": randomBytes(8).toString("hex"),
    "server.js": `
const http = require("http");
const server = http.createServer((req, res) => {
  if (req.url === "/crash") { res.end("bye"); console.log("crashing on purpose"); setTimeout(() => process.exit(3), 10); return; }
  res.end("mark=" + process.env.MARK);
});
setTimeout(() => server.listen(Number(process.env.PORT || 8080), "0.0.0.0"), Number(process.env.LISTEN_DELAY));
`,
  };
}

export interface LivePush {
  /** Resolves once the push's output so far matches `re`. */
  waitFor(re: RegExp, ms?: number): Promise<void>;
  output(): string;
  done: Promise<RunResult>;
}

/** `git push --force pier master`, its output readable while it runs. */
export function livePush(pier: Pier, dir: string): LivePush {
  const child = spawn("git", ["-C", dir, "push", "--force", "pier", "master"], {
    env: pier.gitEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.re.test(stderr)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
    check();
  });
  const done = new Promise<RunResult>((res) => {
    child.on("close", (code) => res({ code: code ?? -1, stdout, stderr }));
  });
  return {
    output: () => stderr,
    done,
    waitFor: (re, ms = 180_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the push never printed ${re}:\n${stderr}`)), ms);
        waiters.push({
          re,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
        check();
        void done.then(() => {
          if (!re.test(stderr)) {
            clearTimeout(timer);
            reject(new Error(`the push ended without printing ${re}:\n${stderr}`));
          }
        });
      }),
  };
}

/** Polls `GET /` of an app through the edge every 50 ms until stopped; keeps every answer. */
export function watchApp(pier: Pier, app: string): { stop(): Promise<string[]> } {
  const seen: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const r = await httpGet(pier.httpPort, `${app}.localhost`, "/", 5000);
        seen.push(r.status === 200 ? r.body : `HTTP ${r.status}: ${r.body.slice(0, 80)} at ${Date.now()}`);
      } catch (e) {
        seen.push(`error: ${(e as Error).message} at ${Date.now()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return seen;
    },
  };
}

/** The answers that are not a release's 200, grouped with their counts. */
export function failures(seen: readonly string[]): string[] {
  return seen.filter((s) => !s.startsWith("mark="));
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  ms = 60_000,
): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn().catch(() => null);
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}
