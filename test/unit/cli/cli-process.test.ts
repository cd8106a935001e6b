// The compiled CLI as a subprocess against a throwaway node:http test double of a few routes of
// docs/api.md: asserts what a user or a CI script sees (stdout, stderr, exit code).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../../../bin/pier.js", import.meta.url));
const TOKEN = "test-token-0123456789abcdef";

const APP = {
  id: "app-0123456789ab",
  name: "web",
  type: "node",
  flavor: "nano",
  buildFlavor: "M",
  instances: 1,
  task: null,
  allowDockerSocket: false,
  stopped: false,
  createdAt: "2026-11-22T10:00:00.000Z",
  gitUrl: "git+ssh://git@localhost:2222/app-0123456789ab.git",
  url: "http://web.localhost:8000",
};

/** An app as a server with the list's status answers it (APP is one from an older server, without). */
const LISTED = {
  ...APP,
  id: "app-0123456789cd",
  name: "api",
  instances: 2,
  url: "http://api.localhost:8000",
  status: {
    state: "running",
    release: { id: "rel-1", number: 3, commit: "abc", createdAt: "2026-11-22T10:00:00.000Z" },
    running: 1,
    total: 2,
  },
};

const deployment = (id: string, state: string, reason: string | null = null) => ({
  id,
  appId: APP.id,
  state,
  commit: "0123456789abcdef0123456789abcdef01234567",
  cause: "restart (API)",
  withoutCache: false,
  reason,
  releaseId: state === "succeeded" ? "rel-1" : null,
  createdAt: "2026-11-22T10:01:00.000Z",
  buildingAt: state === "queued" ? null : "2026-11-22T10:01:01.000Z",
  deployingAt: null,
  finishedAt: state === "queued" ? null : "2026-11-22T10:01:09.000Z",
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("the pier CLI as a process, against a test double of the API", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "pier-cli-"));
  const requests: { method: string; url: string; body: string }[] = [];
  /** Resolves when the running CLI has printed this text on stderr. */
  let stderrWaiters: { text: string; resolve: () => void }[] = [];
  let liveStderr = "";
  let baseUrl = "";

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const sse = (res: ServerResponse, event: string | null, data: unknown) =>
    res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  const seen = (text: string) =>
    new Promise<void>((resolve) => {
      if (liveStderr.includes(text)) resolve();
      else stderrWaiters.push({ text, resolve });
    });

  async function route(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    requests.push({ method: req.method ?? "", url: req.url ?? "", body });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      return sendJson(res, 401, { error: { code: "UNAUTHORIZED", message: "Invalid API token." } });
    }
    const key = `${req.method} ${req.url}`;
    if (key === "GET /v1/apps") return sendJson(res, 200, [APP, LISTED]);
    if (key === "GET /v1/apps/nope/status") {
      return sendJson(res, 404, {
        error: { code: "APP_NOT_FOUND", message: "No app named 'nope'.", hint: "See `pier apps`." },
      });
    }
    if (key === "POST /v1/apps/web/deployments") return sendJson(res, 202, deployment("dep-fail", "queued"));
    if (key === "POST /v1/apps/good/deployments") return sendJson(res, 202, deployment("dep-ok", "queued"));
    if (key === "GET /v1/apps/web/deployments/dep-fail/log?follow=true") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      sse(res, null, { at: "2026-11-22T10:01:02.000Z", line: "Step 1/2: npm ci" });
      // The rest only once the CLI has shown the first line: lines must stream, not wait for the end.
      await seen("Step 1/2: npm ci");
      res.write(": keep-alive\n\n");
      sse(res, null, { at: "2026-11-22T10:01:08.000Z", line: "npm ERR! missing script: build" });
      sse(res, "end", deployment("dep-fail", "failed", "The build failed: npm ci exited with 1."));
      return void res.end();
    }
    if (key === "GET /v1/apps/good/deployments/dep-ok/log?follow=true") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      sse(res, null, { at: "2026-11-22T10:01:02.000Z", line: "Response from GET / is 200" });
      sse(res, "end", deployment("dep-ok", "succeeded"));
      return void res.end();
    }
    sendJson(res, 404, { error: { code: "NOT_FOUND", message: `No route ${req.method} ${req.url}.` } });
  }

  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      route(req, res, body).catch((e: unknown) => {
        res.destroy(e as Error);
      });
    });
  });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Runs `pier <args>` asynchronously: the test double answers from this same process. */
  function pier(args: string[]): Promise<Run> {
    liveStderr = "";
    stderrWaiters = [];
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: dataDir,
        env: { ...process.env, PIER_URL: baseUrl, PIER_TOKEN: TOKEN, PIER_DATA_DIR: dataDir },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
      });
      child.stderr.on("data", (c: Buffer) => {
        liveStderr += c.toString();
        for (const w of stderrWaiters.filter((w) => liveStderr.includes(w.text))) w.resolve();
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr: liveStderr });
      });
    });
  }

  test("apps --format json prints the API's App objects on stdout, nothing on stderr, exit 0", async () => {
    const r = await pier(["apps", "--format", "json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [APP, LISTED]);
    assert.equal(r.stderr, "");
  });

  test("apps in human format: a table on stdout", async () => {
    const r = await pier(["apps"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NAME +ID +TYPE/);
    assert.match(
      r.stdout,
      /\nweb +app-0123456789ab +node +nano \(build M\) +1 +active +- +http:\/\/web\.localhost:8000\n/,
    );
    // With the list's status: running instances of how many, the state and the release.
    assert.match(
      r.stdout,
      /\napi +app-0123456789cd +node +nano \(build M\) +1\/2 +running +v3 +http:\/\/api\.localhost:8000\n$/,
    );
  });

  test("an error answer (404 with the error body): exit 1, message and hint on stderr, nothing on stdout", async () => {
    const r = await pier(["status", "--app", "nope"]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, "pier: No app named 'nope'.\nhint: See `pier apps`.\n");
  });

  test("restart follows the SSE log line by line on stderr and exits 1 when the deployment fails", async () => {
    const r = await pier(["restart", "--app", "web", "--without-cache"]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "", "a failed deployment prints no success line");
    const lines = r.stderr.split("\n");
    const first = lines.indexOf("Step 1/2: npm ci");
    assert.ok(first >= 0, r.stderr);
    assert.equal(lines[first + 1], "npm ERR! missing script: build");
    assert.match(r.stderr, /pier: deployment dep-fail failed: The build failed: npm ci exited with 1\.\n/);
    assert.match(r.stderr, /hint: see its whole log: pier logs --app web --deployment dep-fail\n$/);
    const post = requests.find((q) => q.method === "POST" && q.url === "/v1/apps/web/deployments");
    assert.deepEqual(JSON.parse(post?.body ?? "null"), { withoutCache: true });
  });

  test("restart --format json prints the final Deployment even when it failed, and still exits 1", async () => {
    const r = await pier(["restart", "--app", "web", "--format", "json"]);
    assert.equal(r.code, 1);
    const d = JSON.parse(r.stdout) as { id: string; state: string };
    assert.deepEqual([d.id, d.state], ["dep-fail", "failed"]);
  });

  test("restart of a deployment that succeeds exits 0", async () => {
    const r = await pier(["restart", "--app", "good"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Deployment dep-ok succeeded.\n");
    assert.match(r.stderr, /Response from GET \/ is 200\n/);
  });

  test("restart --exit-on deploy-start returns once the deployment is queued", async () => {
    const before = requests.length;
    const r = await pier(["restart", "--app", "good", "--exit-on", "deploy-start", "--format", "json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { state: string }).state, "queued");
    assert.ok(!requests.slice(before).some((q) => q.url.includes("/log")), "the log was not followed");
  });

  test("a wrong token: exit 1 with the server's message", async () => {
    const r = await new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, [BIN, "apps"], {
        cwd: dataDir,
        env: { ...process.env, PIER_URL: baseUrl, PIER_TOKEN: "wrong", PIER_DATA_DIR: dataDir },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
      });
      child.stderr.on("data", (c: Buffer) => {
        stderr += c.toString();
      });
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^pier: Invalid API token\.\nhint: check PIER_TOKEN/);
    assert.ok(!r.stderr.includes("wrong"), "the token is never printed");
  });
});
