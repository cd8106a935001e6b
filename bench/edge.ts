// bench/edge: requests/s and p99 of a Node hello app (a) directly, (b) behind a plain nginx reverse proxy
// with a minimal hand-written config (the baseline), (c) behind Pier's NginxEdge and, for reference,
// (d) behind Pier's HaproxyEdge, all in one run; then, for each edge, the requests that fail while the app
// is redeployed five times under load (a new app process on a new port, `apply`, the old one stopped after
// a grace). Target: edge/plain nginx >= 1.0, and 0 failed requests.
// Run: npm run build && node dist/bench/edge.js [seconds per wrk run, default 10] [rounds, default 1]
// With several rounds the targets take turns (a b c d a b c d ...) and each figure is the median.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HaproxyEdge } from "../src/adapters/edge/haproxy.js";
import { NginxEdge } from "../src/adapters/edge/nginx.js";
import type { Edge, Route } from "../src/core/ports.js";
import { freePort, run } from "../test/e2e/harness.js";

const seconds = Number(process.argv[2] ?? 10);
const rounds = Number(process.argv[3] ?? 1);
const HOST = "bench.localhost";
const REDEPLOYS = 5;
const GRACE_MS = 500;

const has = (cmd: string, arg: string) => !spawnSync(cmd, [arg], { stdio: "ignore" }).error;

// --- the app: a separate Node process, as an instance is ------------------------------------------------

const APP = `const s = require("node:http").createServer((q, r) => {
  r.setHeader("content-type", "text/plain"); r.end("hello world\\n");
});
s.listen(0, "127.0.0.1", () => console.log("listening " + s.address().port));
process.on("SIGTERM", () => { s.close(); s.closeIdleConnections(); setTimeout(() => process.exit(0), 2000).unref(); });`;

interface App {
  proc: ChildProcess;
  port: number;
}

const apps = new Set<App>();

function startApp(): Promise<App> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["-e", APP], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        const app = { proc, port: Number(m[1]) };
        apps.add(app);
        resolve(app);
      }
    });
    proc.on("exit", (code) => reject(new Error(`the app exited with ${code}`)));
  });
}

async function stopApp(app: App): Promise<void> {
  apps.delete(app);
  if (app.proc.exitCode !== null) return;
  const exited = new Promise((r) => app.proc.once("exit", r));
  app.proc.kill("SIGTERM");
  await exited;
}

// --- wrk -----------------------------------------------------------------------------------------------

interface WrkResult {
  rps: number;
  p99ms: number;
  errors: number;
}

async function wrk(port: number, host: string, duration = seconds): Promise<WrkResult> {
  const argv = ["wrk", "-t2", "-c50", `-d${duration}s`, "--latency", "-H", `Host: ${host}`];
  const r = await run([...argv, `http://127.0.0.1:${port}/`], { timeoutMs: (duration + 30) * 1000 });
  if (r.code !== 0) throw new Error(`wrk failed: ${r.stderr || r.stdout}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? 0);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(r.stdout);
  const p99ms = p99 ? Number(p99[1]) * (p99[2] === "us" ? 0.001 : p99[2] === "s" ? 1000 : 1) : Number.NaN;
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(r.stdout);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  const errors = (errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0) + non2xx;
  return { rps, p99ms, errors };
}

// --- the baseline: nginx with a minimal hand-written reverse-proxy config --------------------------------

function plainNginx(dir: string, listen: number, targetPort: number): () => void {
  mkdirSync(join(dir, "tmp"), { recursive: true });
  const conf = join(dir, "nginx.conf");
  const log = join(dir, "error.log");
  writeFileSync(
    conf,
    `worker_processes auto; pid ${dir}/nginx.pid; error_log ${log};
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/b; proxy_temp_path ${dir}/tmp/p; fastcgi_temp_path ${dir}/tmp/f;
  uwsgi_temp_path ${dir}/tmp/u; scgi_temp_path ${dir}/tmp/s;
  upstream app { server 127.0.0.1:${targetPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${listen};
    location / {
      proxy_pass http://app; proxy_http_version 1.1;
      proxy_set_header Connection ""; proxy_set_header Host $host;
    }
  }
}
`,
  );
  const r = spawnSync("nginx", ["-e", log, "-p", dir, "-c", conf], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`plain nginx did not start: ${r.stderr}`);
  return () => {
    spawnSync("nginx", ["-e", log, "-p", dir, "-c", conf, "-s", "quit"]);
  };
}

// --- a bounded load loop that counts every request that does not answer 200 ----------------------------

function load(port: number, concurrency: number, limitMs: number, maxRequests: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let ok = 0;
  let sent = 0;
  const failed = new Map<string, number>();
  const fail = (why: string) => failed.set(why, (failed.get(why) ?? 0) + 1);
  let running = true;
  const deadline = Date.now() + limitMs;
  const one = () =>
    new Promise<void>((resolve) => {
      sent++;
      const req = request({ host: "127.0.0.1", port, path: "/", agent, headers: { host: HOST } }, (res) => {
        res.resume();
        res.on("end", () => {
          if (res.statusCode === 200) ok++;
          else fail(`status ${res.statusCode}`);
          resolve();
        });
      });
      req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
      req.on("error", (e: NodeJS.ErrnoException) => {
        fail(`${e.code ?? e.message}${req.reusedSocket ? " (reused connection)" : " (new connection)"}`);
        resolve();
      });
      req.end();
    });
  const clients = Array.from({ length: concurrency }, async () => {
    while (running && Date.now() < deadline && sent < maxRequests) await one();
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(clients);
      agent.destroy();
      return { ok, failed };
    },
  };
}

const route = (port: number): Route[] => [
  { appId: "bench", hostname: HOST, targets: [{ host: "127.0.0.1", port }] },
];

/** Five redeploys under load: new app, apply, grace, old app stopped. */
async function redeploys(name: string, edge: Edge, edgePort: number, first: App): Promise<string> {
  let current = first;
  await edge.apply(route(current.port));
  const clients = 20;
  const loader = load(edgePort, clients, 60_000, 500_000);
  const applyMs: number[] = [];
  const t0 = Date.now();
  for (let i = 0; i < REDEPLOYS; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const next = await startApp();
    const ta = Date.now();
    await edge.apply(route(next.port));
    applyMs.push(Date.now() - ta);
    await new Promise((r) => setTimeout(r, GRACE_MS));
    await stopApp(current);
    current = next;
  }
  await new Promise((r) => setTimeout(r, 300));
  const res = await loader.stop();
  const failed = [...res.failed.values()].reduce((a, b) => a + b, 0);
  const why = [...res.failed].map(([k, v]) => `${v} ${k}`).join(", ");
  applyMs.sort((a, b) => a - b);
  return `${name.padEnd(18)} ${REDEPLOYS} redeploys, ${clients} keep-alive clients, ${((Date.now() - t0) / 1000).toFixed(1)} s: ${res.ok} ok, ${failed} failed (target 0)${why ? `: ${why}` : ""}; apply median ${applyMs[Math.floor(applyMs.length / 2)]} ms`;
}

async function main(): Promise<number> {
  if (!has("wrk", "-v")) {
    console.error("bench: wrk is missing. Install it with: apt-get install wrk");
    return 1;
  }
  if (!has("nginx", "-v")) {
    console.error("bench: nginx is missing. Install it with: apt-get install nginx-light");
    return 1;
  }
  const withHaproxy = has("haproxy", "-v");
  const work = mkdtempSync(join(tmpdir(), "pier-bench-edge-"));
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        console.error(`bench: cleanup: ${(e as Error).message}`);
      }
    }
    cleanups.length = 0;
    for (const a of [...apps]) await stopApp(a);
    rmSync(work, { recursive: true, force: true });
  };
  process.once("SIGINT", () => {
    void cleanup().then(() => process.exit(130));
  });
  try {
    const app = await startApp();
    const plainPort = await freePort();
    cleanups.push(plainNginx(join(work, "plain-nginx"), plainPort, app.port));

    const nginxPort = await freePort();
    const nginxEdge = new NginxEdge({
      dir: join(work, "nginx-edge"),
      listenHost: "127.0.0.1",
      listenPort: nginxPort,
    });
    await nginxEdge.start();
    cleanups.push(() => nginxEdge.stop());
    await nginxEdge.apply(route(app.port));

    const haproxyPort = await freePort();
    const haproxyEdge = withHaproxy
      ? new HaproxyEdge({ dir: join(work, "haproxy-edge"), listenHost: "127.0.0.1", listenPort: haproxyPort })
      : null;
    if (haproxyEdge) {
      await haproxyEdge.start();
      cleanups.push(() => haproxyEdge.stop());
      await haproxyEdge.apply(route(app.port));
    }

    const targets: [string, number][] = [
      ["direct (the app)", app.port],
      ["plain nginx proxy", plainPort],
      ["pier NginxEdge", nginxPort],
      ...(haproxyEdge ? ([["pier HaproxyEdge", haproxyPort]] as [string, number][]) : []),
    ];
    const runs = new Map<string, WrkResult[]>();
    for (let round = 0; round < rounds; round++) {
      for (const [name, port] of targets) {
        if (round === 0) await wrk(port, HOST, 2); // warm up: connections, JIT
        runs.set(name, [...(runs.get(name) ?? []), await wrk(port, HOST)]);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
    const results = new Map<string, WrkResult>(
      [...runs].map(([name, rs]) => [
        name,
        {
          rps: median(rs.map((r) => r.rps)),
          p99ms: median(rs.map((r) => r.p99ms)),
          errors: rs.reduce((a, r) => a + r.errors, 0),
        },
      ]),
    );
    const row = (name: string, r: WrkResult) =>
      `${name.padEnd(18)} ${r.rps.toFixed(0).padStart(7)} req/s   p99 ${r.p99ms.toFixed(2).padStart(7)} ms   errors ${r.errors}`;
    console.log(
      `wrk -t2 -c50 -d${seconds}s --latency, a Node hello app on loopback${rounds > 1 ? `, median of ${rounds} rounds` : ""}`,
    );
    for (const [name] of targets) console.log(row(name, results.get(name)!));
    const rps = (name: string) => results.get(name)?.rps ?? Number.NaN;
    console.log(
      `ratio NginxEdge/plain nginx: ${(rps("pier NginxEdge") / rps("plain nginx proxy")).toFixed(2)} (target >= 1.0)`,
    );
    console.log(
      `ratio NginxEdge/direct:      ${(rps("pier NginxEdge") / rps("direct (the app)")).toFixed(2)}`,
    );
    if (haproxyEdge) {
      console.log(
        `ratio HaproxyEdge/plain nginx: ${(rps("pier HaproxyEdge") / rps("plain nginx proxy")).toFixed(2)}`,
      );
    }

    console.log(`redeploys under load (failed = no answer or not 200; the clients do not retry):`);
    console.log(await redeploys("pier NginxEdge", nginxEdge, nginxPort, app));
    if (haproxyEdge)
      console.log(await redeploys("pier HaproxyEdge", haproxyEdge, haproxyPort, await startApp()));
    return 0;
  } finally {
    await cleanup();
  }
}

process.exitCode = await main();
