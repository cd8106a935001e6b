import { existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { EDGE_STATUS_HOST, nginxConfigVersion, renderNginxConfig } from "../../core/edge-config.js";
import { PierError } from "../../core/errors.js";
import type { Edge, Route } from "../../core/ports.js";
import { ExecError, exec } from "../exec.js";

export interface EdgeLogger {
  info: (obj: object, msg?: string) => void;
  warn: (obj: object, msg?: string) => void;
  error: (obj: object, msg?: string) => void;
}

export interface NginxEdgeOptions {
  /** Default `nginx` (on the PATH). */
  nginxBin?: string;
  /** Pier's own nginx lives here: nginx.conf, routes.json, nginx.pid, error.log, tmp/. */
  dir: string;
  listenPort: number;
  listenHost: string;
  workerProcesses?: number | "auto";
  logger?: EdgeLogger;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no /proc: kill(0) is all we know
  }
}

/** The last distinct lines of nginx's output (it repeats a failed bind five times). */
const tail = (text: string, lines = 5) => [...new Set(text.trim().split("\n"))].slice(-lines).join("\n");

/**
 * The edge: Pier's own nginx master (not the system's, which it never touches), configured from the route
 * table. A change is rendered, checked by `nginx -t`, renamed into place, and applied by a graceful reload:
 * the master starts workers with the new routes and the old workers finish the requests they have.
 * `apply` resolves once the new workers answer. The master is a daemon: it outlives `pier server`, and a
 * restarted `pier server` adopts it.
 */
export class NginxEdge implements Edge {
  private readonly bin: string;
  private readonly conf: string;
  private readonly routesFile: string;
  private readonly errorLog: string;
  /** The routes last applied by this process; null until the first `apply`. */
  private routes: readonly Route[] | null = null;
  /** Serializes start, apply and stop: one configuration change at a time. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly opts: NginxEdgeOptions) {
    this.bin = opts.nginxBin ?? "nginx";
    this.conf = join(opts.dir, "nginx.conf");
    this.routesFile = join(opts.dir, "routes.json");
    this.errorLog = join(opts.dir, "error.log");
  }

  start(): Promise<void> {
    return this.serialized(() => this.startNow());
  }

  apply(routes: readonly Route[]): Promise<void> {
    return this.serialized(() => this.applyNow(routes));
  }

  stop(): Promise<void> {
    return this.serialized(() => this.stopNow());
  }

  /** The pid of the running master of this edge (read from its pid file), or null. */
  masterPid(): number | null {
    const file = join(this.opts.dir, "nginx.pid");
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null;
    // A stale pid file may name a pid the system gave to another process since: check it is our master.
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (!cmd.includes("nginx") || !cmd.includes(this.conf)) return null;
    } catch {
      // no /proc
    }
    return pid;
  }

  /** The rendered configuration for `routes`; protected so a test can hand nginx one it rejects. */
  protected render(routes: readonly Route[]): string {
    try {
      return renderNginxConfig({
        routes,
        listenHost: this.opts.listenHost,
        listenPort: this.opts.listenPort,
        prefix: this.opts.dir,
        workerProcesses: this.opts.workerProcesses,
      });
    } catch (e) {
      throw new PierError("EDGE_ERROR", (e as Error).message, "Check the app's hostname and instances.");
    }
  }

  private serialized(step: () => Promise<void>): Promise<void> {
    const next = this.chain.then(step);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async startNow(): Promise<void> {
    await mkdir(join(this.opts.dir, "tmp"), { recursive: true });
    const routes = this.routes ?? (await this.savedRoutes());
    const text = this.render(routes);
    const pid = this.masterPid();
    if (pid) {
      // Adopt the running master (after a control-plane restart); reload only if its routes differ.
      this.opts.logger?.info({ pid }, "adopting the running edge");
      const version = nginxConfigVersion(text);
      if ((await this.readConf()) === text && (await this.servedVersion()) === version) return;
      await this.install(text, routes);
      await this.reload(pid, text);
      return;
    }
    await this.install(text, routes);
    await this.launch(text);
    this.opts.logger?.info({ port: this.opts.listenPort, pid: this.masterPid() }, "edge started");
  }

  private async applyNow(routes: readonly Route[]): Promise<void> {
    const text = this.render(routes);
    const pid = this.masterPid();
    const previous = await this.readConf();
    if (previous === text && pid) {
      this.routes = routes;
      return;
    }
    const previousRoutes = await this.savedRoutes();
    await this.install(text, routes);
    this.routes = routes;
    if (!pid) {
      this.opts.logger?.warn({}, "the edge was not running; starting it");
      await this.launch(text);
      return;
    }
    try {
      await this.reload(pid, text);
    } catch (e) {
      // nginx kept its old workers: keep the files saying what they serve.
      if (previous !== null) await this.install(previous, previousRoutes);
      throw e;
    }
    this.opts.logger?.info({ routes: routes.length, version: nginxConfigVersion(text) }, "edge reloaded");
  }

  private async stopNow(): Promise<void> {
    const pid = this.masterPid();
    if (!pid) return;
    // SIGQUIT is `nginx -s quit` without parsing the config: workers finish their requests, then exit.
    process.kill(pid, "SIGQUIT");
    for (let i = 0; i < 200 && alive(pid); i++) await sleep(50);
    if (alive(pid)) {
      this.opts.logger?.warn({ pid }, "the edge did not stop within 10 s; terminating it");
      process.kill(pid, "SIGTERM");
      for (let i = 0; i < 100 && alive(pid); i++) await sleep(50);
    }
    if (alive(pid)) throw new PierError("EDGE_ERROR", `The edge's nginx master (pid ${pid}) does not stop.`);
    await rm(join(this.opts.dir, "nginx.pid"), { force: true });
    this.opts.logger?.info({ pid }, "edge stopped");
  }

  private async readConf(): Promise<string | null> {
    return existsSync(this.conf) ? readFile(this.conf, "utf8") : null;
  }

  /** The routes of the last configuration written, so a start after a reboot serves them again. */
  private async savedRoutes(): Promise<Route[]> {
    try {
      return JSON.parse(await readFile(this.routesFile, "utf8")) as Route[];
    } catch {
      return [];
    }
  }

  /** Checks `text` with `nginx -t`, then renames it into place: a rejected one never replaces the old. */
  private async install(text: string, routes: readonly Route[]): Promise<void> {
    await mkdir(join(this.opts.dir, "tmp"), { recursive: true });
    const next = `${this.conf}.next`;
    await writeFile(next, text);
    try {
      await exec([this.bin, "-t", "-q", "-e", this.errorLog, "-p", this.opts.dir, "-c", next]);
    } catch (e) {
      await rm(next, { force: true });
      const msg = e instanceof ExecError ? tail(e.stderrTail) : (e as Error).message;
      throw new PierError(
        "EDGE_ERROR",
        `nginx rejected the new edge configuration (the previous one keeps serving): ${msg}`,
        `See ${this.errorLog}.`,
      );
    }
    await writeFile(`${this.routesFile}.next`, `${JSON.stringify(routes, null, 2)}\n`);
    await rename(`${this.routesFile}.next`, this.routesFile);
    await rename(next, this.conf);
  }

  private async launch(text: string): Promise<void> {
    try {
      // nginx daemonizes (own session, stdio on /dev/null and its error log) and this call returns.
      await exec([this.bin, "-e", this.errorLog, "-p", this.opts.dir, "-c", this.conf]);
    } catch (e) {
      const msg = e instanceof ExecError ? tail(e.stderrTail) : (e as Error).message;
      throw new PierError(
        "EDGE_ERROR",
        `The edge (nginx) did not start on ${this.opts.listenHost}:${this.opts.listenPort}: ${msg}`,
        "Is another process using PIER_HTTP_PORT?",
      );
    }
    await this.waitServing(text);
  }

  /** Graceful reload: new workers with the new routes; old workers finish their requests, then exit. */
  private async reload(pid: number, text: string): Promise<void> {
    process.kill(pid, "SIGHUP");
    await this.waitServing(text);
  }

  /** The configuration version the workers answer with now, or null. */
  private servedVersion(): Promise<string | null> {
    const host = this.opts.listenHost === "0.0.0.0" ? "127.0.0.1" : this.opts.listenHost;
    return new Promise((resolve) => {
      const req = request(
        {
          host,
          port: this.opts.listenPort,
          path: "/.pier/edge-version",
          headers: { host: EDGE_STATUS_HOST },
          agent: false,
        },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => {
            body += c.toString();
          });
          res.on("end", () => resolve(res.statusCode === 200 ? body.trim() : null));
          res.on("error", () => resolve(null));
        },
      );
      req.setTimeout(1000, () => req.destroy());
      req.on("error", () => resolve(null));
      req.end();
    });
  }

  /**
   * Waits until new connections reach workers of `text`. Each request is a new connection and may land on
   * any worker, so several in a row must answer the new version.
   */
  private async waitServing(text: string, limitMs = 10_000): Promise<void> {
    const version = nginxConfigVersion(text);
    const end = Date.now() + limitMs;
    let streak = 0;
    while (Date.now() < end) {
      streak = (await this.servedVersion()) === version ? streak + 1 : 0;
      if (streak >= 3) return;
      await sleep(streak > 0 ? 2 : 10);
    }
    let log = "";
    try {
      log = tail(await readFile(this.errorLog, "utf8"), 3);
    } catch {
      // no log yet
    }
    throw new PierError(
      "EDGE_ERROR",
      `nginx did not serve the new edge configuration within ${limitMs / 1000} s${log ? `: ${log}` : ""}`,
      `See ${this.errorLog}.`,
    );
  }
}
