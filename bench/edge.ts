// bench/edge: requests/s and p99 of a small app through Pier's edge, against nginx as a plain reverse
// proxy to the same instance and against the instance directly, in one run; then the failed requests
// while the app is redeployed five times under load (target: zero). The HTTPS rows: the edge terminating
// TLS against nginx terminating TLS with the same certificate (keep-alive requests/s, and new connections
// per second: a TLS handshake each, resuming the session wrk got on its previous connection).
// Run: npm run build && node dist/bench/edge.js [seconds per wrk run, default 5] [rounds, default 5]
//
// A fair baseline (ADR 0018): nginx is configured as a well-kept nginx proxy doing the edge's job, and
// alike wherever the two can be: as many nginx workers as HAProxy has threads (both: the CPU count), the
// same four forwarded headers (X-Forwarded-For/-Proto/-Host/-Port), HTTP/1.1 with keep-alive to the app
// (`proxy_http_version 1.1` + upstream `keepalive`), TLS 1.2-1.3 with the same certificate and OpenSSL's
// default ciphers and curves, and session resumption on both sides (nginx: a shared session cache and
// tickets; HAProxy: its defaults, a session cache and tickets). The run prints what each side negotiated.

import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { backendName } from "../src/core/edge-config.js";
import { freePort, NODE_DOCKER_APP, Pier, run } from "../test/e2e/harness.js";
import { ensureTools, type WrkResult, wrk } from "./wrk.js";

const seconds = Number(process.argv[2] ?? 5);
const ROUNDS = Number(process.argv[3] ?? 5);

/** wrk against the edge or a baseline on loopback, with the Host header of the app. */
function wrkAt(port: number, host: string, opts: { https?: boolean; close?: boolean } = {}) {
  return wrk(`${opts.https ? "https" : "http"}://127.0.0.1:${port}/`, {
    seconds,
    host,
    close: opts.close,
  });
}

function plainNginx(
  dir: string,
  listen: number,
  target: string,
  tls?: { cert: string; key: string },
): () => void {
  mkdirSync(join(dir, "tmp"), { recursive: true });
  const conf = join(dir, "nginx.conf");
  const ssl = tls
    ? ` ssl; ssl_certificate ${tls.cert}; ssl_certificate_key ${tls.key}; ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:TLS:10m; ssl_session_tickets on`
    : "";
  writeFileSync(
    conf,
    `worker_processes ${availableParallelism()}; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 4096; }
http { access_log off;
  client_body_temp_path ${dir}/tmp/b; proxy_temp_path ${dir}/tmp/p; fastcgi_temp_path ${dir}/tmp/f; uwsgi_temp_path ${dir}/tmp/u; scgi_temp_path ${dir}/tmp/s;
  upstream app { server ${target}; keepalive 64; }
  server { listen 127.0.0.1:${listen}${ssl};
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host; proxy_set_header X-Forwarded-Port $server_port; } } }
`,
  );
  spawnSync("nginx", ["-e", join(dir, "error.log"), "-p", dir, "-c", conf], { stdio: "inherit" });
  return () => spawnSync("nginx", ["-e", join(dir, "error.log"), "-p", dir, "-c", conf, "-s", "quit"]);
}

/** One command on the edge's admin socket (HAProxy's runtime API). */
function edgeAdmin(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const c = connect(socket, () => c.end(`${command}\n`));
    c.on("data", (d) => {
      out += d.toString();
    });
    c.on("end", () => resolve(out));
    c.on("error", reject);
  });
}

/**
 * What a TLS client gets from the proxy on `port` (openssl s_client): protocol, cipher, key exchange group,
 * and whether a second connection resumes the first one's session.
 */
async function negotiated(port: number, host: string, dir: string): Promise<string> {
  const sess = join(dir, `session-${port}.pem`);
  const ask = (resume: boolean) =>
    run(
      [
        "openssl",
        "s_client",
        "-connect",
        `127.0.0.1:${port}`,
        "-servername",
        host,
        "-ign_eof",
        resume ? "-sess_in" : "-sess_out",
        sess,
      ],
      { input: `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, timeoutMs: 10_000 },
    );
  const first = await ask(false);
  const second = await ask(true);
  const proto = /^New, (TLSv[\d.]+), Cipher is (\S+)/m.exec(first.stdout);
  const group = /Server Temp Key: ([^,\n]+)/.exec(first.stdout)?.[1] ?? "?";
  const resumed = /^Reused,/m.test(second.stdout) ? "resumed" : "NOT resumed";
  return `${proto?.[1] ?? "?"} ${proto?.[2] ?? "?"} ${group}, a second connection ${resumed}`;
}

/** Requests and new connections to the app of the edge's backend `backend` (`show stat`). */
async function serverConnections(socket: string, backend: string) {
  const lines = (await edgeAdmin(socket, "show stat")).split("\n");
  const head = (lines[0] ?? "").replace(/^# /, "").split(",");
  const row = lines.map((l) => l.split(",")).find((f) => f[0] === backend && f[1] === "BACKEND");
  const col = (name: string) => Number(row?.[head.indexOf(name)] ?? 0);
  return { requests: col("req_tot"), connections: col("connect") };
}

/** A bounded load loop: `concurrency` clients with keep-alive until `stop()`; counts what is not a 200. */
function load(port: number, host: string, concurrency: number, limitMs: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let ok = 0;
  let failed = 0;
  const failures: string[] = [];
  let running = true;
  const deadline = Date.now() + limitMs;
  const one = () =>
    new Promise<void>((resolve) => {
      const req = request({ host: "127.0.0.1", port, path: "/", agent, headers: { host } }, (res) => {
        res.resume();
        res.on("end", () => {
          if (res.statusCode === 200) ok++;
          else {
            failed++;
            if (failures.length < 10) failures.push(`status ${res.statusCode}`);
          }
          resolve();
        });
      });
      req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
      req.on("error", (e) => {
        failed++;
        if (failures.length < 10) failures.push(e.message);
        resolve();
      });
      req.end();
    });
  const clients = Array.from({ length: concurrency }, async () => {
    while (running && Date.now() < deadline) await one();
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(clients);
      agent.destroy();
      return { ok, failed, failures };
    },
  };
}

async function main(): Promise<void> {
  ensureTools([["nginx", "nginx-light"]]);
  const pier = new Pier({ PIER_ACME_DIRECTORY: "off" });
  let stopNginx: () => void = () => undefined;
  let stopTlsNginx: () => void = () => undefined;
  try {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "bench"]);
    const repo = await pier.repo("bench", NODE_DOCKER_APP, app.id);
    const push = await pier.push(repo);
    if (push.code !== 0) throw new Error(push.stderr);
    const status = await pier.cliJson<{ instances: { address: string }[] }>(["status", "--app", "bench"]);
    const target = status.instances[0]?.address;
    if (!target) throw new Error("no instance address");
    const [, directPort] = target.split(":");

    const plainPort = await freePort();
    stopNginx = plainNginx(join(pier.work, "plain-nginx"), plainPort, target);

    // Alternating rounds, medians: the machine's drift between runs (2 cores shared by wrk, the proxy and
    // the app) then falls on both proxies alike.
    const runs: Record<"direct" | "plain" | "edge", WrkResult[]> = { direct: [], plain: [], edge: [] };
    const httpLoads: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      runs.direct.push(await wrkAt(Number(directPort), "bench.localhost"));
      runs.plain.push(await wrkAt(plainPort, "bench.localhost"));
      runs.edge.push(await wrkAt(pier.httpPort, "bench.localhost"));
      httpLoads.push(loadavg()[0]?.toFixed(2) ?? "?");
    }
    const median = (rs: WrkResult[]): WrkResult =>
      [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)] as WrkResult;
    const direct = median(runs.direct);
    const plain = median(runs.plain);
    const edge = median(runs.edge);
    const each = (rs: WrkResult[]) => rs.map((r) => r.rps.toFixed(0)).join(", ");
    const row = (name: string, r: WrkResult) =>
      `${name.padEnd(22)} ${r.rps.toFixed(0).padStart(8)} req/s   p99 ${r.p99ms.toFixed(2).padStart(7)} ms   errors ${r.errors}`;
    console.log(
      `wrk -t2 -c50 -d${seconds}s, a Node hello app in a container; medians of ${ROUNDS} alternating rounds`,
    );
    console.log(row("direct (instance)", direct));
    console.log(row("plain nginx proxy", plain));
    console.log(row("pier edge", edge));
    console.log(`  rounds: direct ${each(runs.direct)}; nginx ${each(runs.plain)}; edge ${each(runs.edge)}`);
    console.log(`ratio edge/plain nginx: ${(edge.rps / plain.rps).toFixed(2)} (target >= 1.0)`);
    console.log(`ratio edge/direct:      ${(edge.rps / direct.rps).toFixed(2)}`);
    console.log(`  load (1 min) after each round: ${httpLoads.join(", ")}`);

    // HTTPS: one self-signed ECDSA P-256 certificate, served by the edge (pier domain cert set) and nginx.
    const tlsDir = join(pier.work, "tls");
    mkdirSync(tlsDir, { recursive: true });
    const cert = join(tlsDir, "cert.pem");
    const key = join(tlsDir, "key.pem");
    const made = await run([
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "7",
      "-subj",
      "/CN=bench.example.test",
      "-addext",
      "subjectAltName=DNS:bench.example.test",
      "-keyout",
      key,
      "-out",
      cert,
    ]);
    if (made.code !== 0) throw new Error(made.stderr);
    const set = await pier.cli([
      "domain",
      "cert",
      "set",
      "bench.example.test",
      "--cert",
      cert,
      "--key",
      key,
      "--app",
      "bench",
    ]);
    if (set.code !== 0) throw new Error(set.stderr);
    const tlsPort = await freePort();
    stopTlsNginx = plainNginx(join(pier.work, "tls-nginx"), tlsPort, target, { cert, key });
    const tlsRuns: Record<"plain" | "edge" | "plainNew" | "edgeNew", WrkResult[]> = {
      plain: [],
      edge: [],
      plainNew: [],
      edgeNew: [],
    };
    const socket = join(pier.work, "data", "edge", "admin.sock");
    const threads = /^Nbthread: (\d+)/m.exec(await edgeAdmin(socket, "show info"))?.[1] ?? "?";
    const tlsDetails = {
      nginx: await negotiated(tlsPort, "bench.example.test", tlsDir),
      edge: await negotiated(pier.httpsPort, "bench.example.test", tlsDir),
    };
    const before = await serverConnections(socket, backendName(app.id));
    const tlsLoads: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      tlsRuns.plain.push(await wrkAt(tlsPort, "bench.example.test", { https: true }));
      tlsRuns.edge.push(await wrkAt(pier.httpsPort, "bench.example.test", { https: true }));
      tlsRuns.plainNew.push(await wrkAt(tlsPort, "bench.example.test", { https: true, close: true }));
      tlsRuns.edgeNew.push(await wrkAt(pier.httpsPort, "bench.example.test", { https: true, close: true }));
      tlsLoads.push(loadavg()[0]?.toFixed(2) ?? "?");
    }
    const after = await serverConnections(socket, backendName(app.id));
    const tp = median(tlsRuns.plain);
    const te = median(tlsRuns.edge);
    const tpn = median(tlsRuns.plainNew);
    const ten = median(tlsRuns.edgeNew);
    console.log("HTTPS (ECDSA P-256 certificate, HTTP/1.1), the same certificate on both:");
    console.log(`  nginx: ${tlsDetails.nginx}; ${availableParallelism()} worker processes`);
    console.log(`  edge:  ${tlsDetails.edge}; ${threads} HAProxy threads`);
    console.log(row("nginx TLS proxy", tp));
    console.log(row("pier edge TLS", te));
    console.log(row("nginx, new conn each", tpn));
    console.log(row("pier edge, new conn", ten));
    console.log(
      `  rounds: nginx ${each(tlsRuns.plain)}; edge ${each(tlsRuns.edge)}; new connections: nginx ${each(tlsRuns.plainNew)}; edge ${each(tlsRuns.edgeNew)}`,
    );
    console.log(`ratio edge/nginx over TLS:           ${(te.rps / tp.rps).toFixed(2)} (target >= 1.0)`);
    console.log(`ratio edge/nginx handshakes (new):   ${(ten.rps / tpn.rps).toFixed(2)}`);
    console.log(
      `  the edge opened ${after.connections - before.connections} connections to the app for ${after.requests - before.requests} requests; load (1 min) after each round: ${tlsLoads.join(", ")}`,
    );

    const loader = load(pier.httpPort, "bench.localhost", 20, 300_000);
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) {
      const r = await pier.cli(["restart", "--app", "bench"]);
      if (r.code !== 0) throw new Error(`redeploy ${i + 1} failed: ${r.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
    const res = await loader.stop();
    console.log(
      `5 redeploys under load (20 clients, ${((Date.now() - t0) / 1000).toFixed(1)} s): ${res.ok} ok, ${res.failed} failed (target 0)${res.failures.length ? `: ${res.failures.join(", ")}` : ""}`,
    );
  } finally {
    stopNginx();
    stopTlsNginx();
    await pier.destroy();
  }
}

await main();
