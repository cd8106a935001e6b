// Starts a real `pier server` (real dockerd, real HAProxy edge, real SSH git) in a throwaway data dir on free
// loopback ports, and drives it the way a user does: the CLI, git over SSH, HTTP through the edge.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterEach } from "node:test";
import { fileURLToPath } from "node:url";
import { isolationTable } from "../../src/core/isolation.js";
import { scopeOf } from "../../src/core/labels.js";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const CLI = join(ROOT, "bin/pier.js");

/** Ports this process handed out: one is not bound until pier server starts. */
const given = new Set<number>();

/** The first port of the kernel's ephemeral range (listen(0), Docker's published ports): test ports stay below it. */
const EPHEMERAL_FROM = (() => {
  try {
    return (
      Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32768
    );
  } catch {
    return 32768;
  }
})();

const bindable = (port: number) =>
  new Promise<boolean>((res) => {
    const s = createServer();
    s.once("error", () => res(false));
    s.listen(port, "0.0.0.0", () => s.close(() => res(true)));
  });

/**
 * A free port for a listener of pier server, below the ephemeral range: between the pick and its bind,
 * pier server's own listen(0) (its hook server), an instance's published port or an edge could otherwise
 * be given the same port by the kernel. Never one this process handed out before.
 */
export async function freePort(): Promise<number> {
  const from = 20000;
  const span = Math.max(1000, EPHEMERAL_FROM - from);
  for (let i = 0; i < 1000; i++) {
    const port = from + Math.floor(Math.random() * span);
    if (given.has(port) || !(await bindable(port))) continue;
    given.add(port);
    return port;
  }
  throw new Error("no free port below the ephemeral range");
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(
  argv: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((res) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd!, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 300_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      res({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.on("error", () => undefined); // the command may exit before reading its input
    child.stdin.end(opts.input ?? "");
  });
}

export interface HttpResult {
  status: number;
  /** The body as UTF-8 text. */
  body: string;
  /** The body's bytes as received (an image, a download). */
  bytes: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

export function httpGet(port: number, host: string, path = "/", timeoutMs = 10_000): Promise<HttpResult> {
  return httpRequest(port, host, "GET", path, {}, "", timeoutMs);
}

/** One request to `port` on loopback with this Host (through the edge when it is an app's host name). */
export function httpRequest(
  port: number,
  host: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = "",
  timeoutMs = 10_000,
  address = "127.0.0.1",
): Promise<HttpResult> {
  return new Promise((res, rej) => {
    const req = request(
      { host: address, port, path, method, headers: { host, ...headers }, agent: false },
      (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => {
          chunks.push(c);
        });
        r.on("end", () => {
          const bytes = Buffer.concat(chunks);
          res({ status: r.statusCode ?? 0, body: bytes.toString(), bytes, headers: r.headers });
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error("timeout")));
    req.on("error", rej);
    req.end(body);
  });
}

/** Polls until `GET /` answers 200 (through the edge when `host` is an app's host name). */
export async function until200(port: number, host: string, limitMs = 120_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    try {
      if ((await httpGet(port, host, "/", 2000)).status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no 200 from ${host} within ${limitMs / 1000} s`);
}

/** A pier server's scope, as src/server/main.ts derives it from its data directory. */
export { scopeOf };

/** The servers started by this test file and not stopped: a failing test prints their output's tail. */
const live = new Set<Pier>();

// Every test file that uses the harness: a failed test shows what its pier server said last.
afterEach((t) => {
  if (t.passed) return;
  for (const pier of live) pier.printTail(`the test "${t.name}" failed`);
});

/** How many lines of a server's output a failure prints. */
const TAIL_LINES = 200;

/**
 * A watchdog beside a `pier server` child (ADR 0027): a shell reading a pipe from this process. When this
 * process dies, however (an interrupted run's SIGTERM, a SIGKILL), the kernel closes the pipe; the shell
 * then ends the server (SIGTERM, SIGKILL after 10 s), removes its firewall table and ends the daemons it
 * leaves on purpose (the edge, its swarm registry), as destroy() does. The server stays this process's own child (its pid, signals, exit
 * code and output are the test's); the harness ends the watchdog when the server exits.
 */
const WATCHDOG = `read _
kill -0 "$1" 2>/dev/null || exit 0
kill -TERM "$1"
i=0
while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL "$1" 2>/dev/null
nft delete table inet "$3" 2>/dev/null
for f in "$2/edge/haproxy.pid" "$2/registry/registry.pid"; do
  p=$(head -n 1 "$f" 2>/dev/null) || continue
  # Only the daemon whose command line names this data directory: a pid is given out again once it died.
  tr '\\0' '\\n' 2>/dev/null <"/proc/$p/cmdline" | grep -qF "$2/" && kill -TERM "$p" 2>/dev/null
done
exit 0`;

function watchServer(server: ChildProcess, dataDir: string): void {
  if (server.pid === undefined) return;
  const table = isolationTable(scopeOf(dataDir));
  const dog = spawn("sh", ["-c", WATCHDOG, "pier-e2e-watchdog", String(server.pid), dataDir, table], {
    stdio: ["pipe", "ignore", "ignore"],
  });
  // Neither keeps this process alive: the server's own pipes do, as before.
  dog.unref();
  dog.stdin?.on("error", () => undefined);
  (dog.stdin as Socket | null)?.unref();
  server.once("exit", () => dog.kill("SIGKILL"));
}

export class Pier {
  readonly dataDir: string;
  readonly work: string;
  proc: ChildProcess | null = null;
  apiPort = 0;
  sshPort = 0;
  httpPort = 0;
  httpsPort = 0;
  keyFile = "";
  output = "";
  /** Server processes stopped or killed on purpose (their exit is not a death to report). */
  private readonly stopping = new WeakSet<ChildProcess>();

  constructor(private readonly extraEnv: Record<string, string> = {}) {
    this.work = mkdtempSync(join(tmpdir(), "pier-e2e-"));
    this.dataDir = join(this.work, "data");
  }

  get env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      PIER_DATA_DIR: this.dataDir,
      PIER_API_PORT: String(this.apiPort),
      PIER_SSH_PORT: String(this.sshPort),
      PIER_HTTP_PORT: String(this.httpPort),
      PIER_HTTP_HOST: "127.0.0.1",
      PIER_HTTPS_PORT: String(this.httpsPort),
      PIER_SSH_HOST: "127.0.0.1",
      PIER_STOP_GRACE: "3",
      PIER_LISTEN_TIMEOUT: "20",
      PIER_LOG_LEVEL: "warn",
      PIER_URL: "",
      PIER_TOKEN: "",
      ...this.extraEnv,
    };
  }

  async start(): Promise<void> {
    if (!this.apiPort) {
      this.apiPort = await freePort();
      this.sshPort = await freePort();
      this.httpPort = await freePort();
      this.httpsPort = await freePort();
    }
    const child = spawn(process.execPath, [CLI, "server"], {
      env: this.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: false,
    });
    this.proc = child;
    watchServer(child, this.dataDir);
    live.add(this);
    child.stdout?.on("data", (c: Buffer) => {
      this.output += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      this.output += c.toString();
    });
    // A server that dies by itself (a crash) says so at once, with what it wrote last.
    child.on("exit", (code, signal) => {
      if (this.stopping.has(child)) return;
      if (this.proc === child) this.proc = null;
      live.delete(this);
      this.printTail(
        `pier server (pid ${child.pid}) died unexpectedly (exit code ${code}, signal ${signal})`,
      );
    });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`pier server exited early:\n${this.output}`);
      try {
        const r = await httpGet(this.apiPort, "127.0.0.1", "/v1/info", 1000);
        if (r.status === 200 && this.output.includes("is running")) return;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`pier server did not come up:\n${this.output}`);
  }

  /** How many times the server's output holds `line` so far. */
  logCount(line: string): number {
    return this.output.split(line).length - 1;
  }

  /**
   * Waits until the server's output holds `line` `times` times, or `limitMs` passed: its output comes
   * through a pipe, after what the server did (a socket it closed may be seen closed first). Resolves the
   * count, for the caller to assert.
   */
  async waitForLog(line: string, times: number, limitMs = 15_000): Promise<number> {
    const end = Date.now() + limitMs;
    while (this.logCount(line) < times && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    return this.logCount(line);
  }

  /** The last `lines` lines of the server's output (every server this Pier started, in order). */
  tail(lines = TAIL_LINES): string {
    return this.output
      .split("\n")
      .slice(-lines - 1)
      .join("\n");
  }

  /** Prints the tail of the server's output to stderr, saying why. */
  printTail(why: string): void {
    process.stderr.write(
      `\n----- ${why}: the last ${TAIL_LINES} lines of pier server's output (${this.dataDir}) -----\n${this.tail()}\n----- end of pier server's output -----\n`,
    );
  }

  /** SIGKILL: what a crash does. */
  kill(): void {
    if (this.proc) this.stopping.add(this.proc);
    this.proc?.kill("SIGKILL");
    this.proc = null;
    live.delete(this);
  }

  async stopServer(): Promise<void> {
    const p = this.proc;
    live.delete(this);
    if (!p || p.exitCode !== null) return;
    this.stopping.add(p);
    await new Promise<void>((res) => {
      p.once("exit", () => res());
      p.kill("SIGTERM");
    });
    this.proc = null;
  }

  /** Stops pier server (SIGTERM) and starts it again on the same data dir and ports, with `settings` added. */
  async restartServer(settings: Record<string, string> = {}): Promise<void> {
    await this.stopServer();
    Object.assign(this.extraEnv, settings);
    await this.start();
  }

  cli(args: string[], opts: { cwd?: string; input?: string } = {}): Promise<RunResult> {
    return run([process.execPath, CLI, ...args], {
      env: this.env,
      cwd: opts.cwd ?? this.work,
      input: opts.input,
    });
  }

  /**
   * `pier logs -f --tail 0 --format json --app APP` running beside the test: what it printed so far, whether
   * it still runs, and `stop()` (call it in a `finally`).
   */
  followLogs(app: string): {
    out: () => string;
    err: () => string;
    running: () => boolean;
    stop: () => void;
  } {
    const child = spawn(
      process.execPath,
      [CLI, "logs", "-f", "--tail", "0", "--format", "json", "--app", app],
      { env: this.env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    return {
      out: () => out,
      err: () => err,
      running: () => child.exitCode === null && child.signalCode === null,
      stop: () => void child.kill(),
    };
  }

  /** `pier env set NAME VALUE --app APP` for each variable, in order; throws with the CLI's stderr on a refusal. */
  async setEnv(app: string, vars: Record<string, string>): Promise<void> {
    for (const [name, value] of Object.entries(vars)) {
      const r = await this.cli(["env", "set", name, value, "--app", app]);
      if (r.code !== 0) throw new Error(`pier env set ${name} --app ${app} failed: ${r.stderr}`);
    }
  }

  /** The CLI with other settings (e.g. PIER_URL and PIER_TOKEN of another token). */
  cliWith(args: string[], env: Record<string, string>): Promise<RunResult> {
    return run([process.execPath, CLI, ...args], { env: { ...this.env, ...env }, cwd: this.work });
  }

  async cliJson<T>(args: string[]): Promise<T> {
    const r = await this.cli([...args, "--format", "json"]);
    if (r.code !== 0) throw new Error(`pier ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  }

  async api(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; json: unknown }> {
    const saved = JSON.parse(readFileSync(join(this.dataDir, "cli.json"), "utf8")) as { token: string };
    const r = await fetch(`http://127.0.0.1:${this.apiPort}${path}`, {
      method,
      headers: { authorization: `Bearer ${token ?? saved.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : null };
  }

  /** A fresh ed25519 key registered with `pier ssh-keys add`. */
  async addKey(): Promise<void> {
    this.keyFile = join(this.work, "id_ed25519");
    if (!existsSync(this.keyFile)) {
      spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "e2e@pier", "-f", this.keyFile]);
    }
    const r = await this.cli(["ssh-keys", "add", `${this.keyFile}.pub`]);
    if (r.code !== 0) throw new Error(`ssh-keys add failed: ${r.stderr}`);
  }

  gitEnv(keyFile = this.keyFile): NodeJS.ProcessEnv {
    return {
      ...process.env,
      GIT_SSH_COMMAND: `ssh -i ${keyFile} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -o LogLevel=ERROR`,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@pier.test",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@pier.test",
    };
  }

  /** A git work tree with these files committed on master, with `pier` as remote of the app. */
  async repo(name: string, files: Record<string, string>, appId: string): Promise<string> {
    const dir = join(this.work, "src", name);
    mkdirSync(dir, { recursive: true });
    await run(["git", "init", "-q", "-b", "master", dir]);
    await this.commit(dir, files, "initial");
    await run([
      "git",
      "-C",
      dir,
      "remote",
      "add",
      "pier",
      `git+ssh://git@127.0.0.1:${this.sshPort}/${appId}.git`,
    ]);
    return dir;
  }

  async commit(dir: string, files: Record<string, string>, message: string): Promise<void> {
    for (const [f, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), content);
    }
    await run(["git", "-C", dir, "add", "-A"], { env: this.gitEnv() });
    await run(["git", "-C", dir, "commit", "-q", "--allow-empty", "-m", message], { env: this.gitEnv() });
  }

  push(dir: string, refspec = "master", extra: string[] = []): Promise<RunResult> {
    return run(["git", "-C", dir, "push", ...extra, "pier", refspec], {
      env: this.gitEnv(),
      timeoutMs: 600_000,
    });
  }

  get(appName: string, path = "/"): Promise<HttpResult> {
    return httpRequest(this.httpPort, `${appName}.localhost`, "GET", path, {}, "", 10_000, this.edgeAddress);
  }

  /** Where the edge is reached: PIER_HTTP_HOST (on a swarm, the manager's address), or loopback. */
  get edgeAddress(): string {
    const host = this.env.PIER_HTTP_HOST ?? "127.0.0.1";
    return host === "0.0.0.0" ? "127.0.0.1" : host;
  }

  /** Deletes every app (so nothing keeps running), stops the server and the edge, removes the data dir. */
  /** Whether process `pid` is one of this server's daemons (an argument of its names the data directory). */
  private ownDaemon(pid: number): boolean {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return args.some((a) => a.startsWith(`${this.dataDir}/`));
    } catch {
      return false;
    }
  }

  async destroy(): Promise<void> {
    try {
      if (!this.proc) await this.start();
      const apps = (await this.api("GET", "/v1/apps")).json as { id: string }[];
      for (const a of apps) await this.api("DELETE", `/v1/apps/${a.id}`);
      const addons = ((await this.api("GET", "/v1/addons")).json ?? []) as { id: string }[];
      for (const a of addons) await this.api("DELETE", `/v1/addons/${a.id}?force=true`);
    } catch {
      // best effort
    }
    await this.stopServer();
    // The daemons Pier leaves running on purpose: the edge, and its own swarm registry (ADR 0030).
    for (const file of [
      join(this.dataDir, "edge", "haproxy.pid"),
      join(this.dataDir, "registry", "registry.pid"),
    ]) {
      if (!existsSync(file)) continue;
      const pid = Number(readFileSync(file, "utf8").trim().split("\n")[0]);
      // Only the daemon whose command line names this data directory: a pid is given out again once it died.
      if (!this.ownDaemon(pid)) continue;
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    // Its firewall table outlives pier server on purpose (the apps stay guarded while it is down); a test's
    // Pier is gone for good: its table goes, or its rules would keep dropping what a later test's apps send
    // from the same subnets to the host (it allows only this server's edge ports).
    spawnSync("nft", ["delete", "table", "inet", isolationTable(scopeOf(this.dataDir))], { stdio: "ignore" });
    rmSync(this.work, { recursive: true, force: true });
  }
}

/** A small web app for the Dockerfile runtime, on Pier's own Node image. */
export const NODE_DOCKER_APP: Record<string, string> = {
  Dockerfile: [
    "FROM pier/node:22",
    "ARG GREETING=hello",
    "ENV GREETING=$GREETING",
    "WORKDIR /app",
    "COPY server.js .",
    'CMD ["node", "server.js"]',
    "",
  ].join("\n"),
  "server.js": `
const http = require("http");
const port = Number(process.env.CC_APP_PORT || process.env.PORT || 8080);
const server = http.createServer((req, res) => {
  if (req.url === "/health") { res.writeHead(Number(process.env.HEALTH_STATUS || 200)); return res.end("ok"); }
  if (req.url.startsWith("/say/")) { console.log("said " + req.url.slice(5)); res.end("ok"); return; }
  if (req.url === "/crash") { res.end("bye"); setTimeout(() => process.exit(3), 10); return; }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ greeting: process.env.GREETING, version: process.env.APP_VERSION || "1", env: process.env, headers: req.headers }));
});
process.on("SIGTERM", () => { console.log("got SIGTERM"); server.close(() => process.exit(0)); });
server.listen(port, process.env.LISTEN_HOST || "0.0.0.0", () => console.log("listening on " + port));
`,
};
