import { existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { configVersion, renderNginxConfig } from "../../core/edge-config.js";
import { PierError } from "../../core/errors.js";
import type { Edge, Route } from "../../core/ports.js";
import { ExecError, exec } from "../exec.js";

interface EdgeLogger {
  info: (o: object, m?: string) => void;
  warn: (o: object, m?: string) => void;
}

export interface NginxEdgeOptions {
  nginxBin?: string;
  /** Pier's own nginx lives here: nginx.conf, pid, logs, temp files. */
  dir: string;
  listenPort: number;
  listenHost: string;
  workerProcesses?: number | "auto";
  logger?: EdgeLogger;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The edge: Pier's own nginx master (not the system's), configured from the route table. Changes are
 * checked with `nginx -t`, then applied by a graceful reload (old workers finish their requests).
 * The master is a daemon: it outlives `pier server`, and a restarted `pier server` adopts it.
 */
export class NginxEdge implements Edge {
  private readonly bin: string;
  private readonly conf: string;
  private routes: readonly Route[] = [];
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly opts: NginxEdgeOptions) {
    this.bin = opts.nginxBin ?? "nginx";
    this.conf = join(opts.dir, "nginx.conf");
  }

  private render(routes: readonly Route[]): string {
    return renderNginxConfig({
      routes,
      listenHost: this.opts.listenHost,
      listenPort: this.opts.listenPort,
      prefix: this.opts.dir,
      workerProcesses: this.opts.workerProcesses,
    });
  }

  masterPid(): number | null {
    const file = join(this.opts.dir, "nginx.pid");
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
  }

  private async test(file: string): Promise<void> {
    try {
      await exec([
        this.bin,
        "-t",
        "-q",
        "-e",
        join(this.opts.dir, "error.log"),
        "-p",
        this.opts.dir,
        "-c",
        file,
      ]);
    } catch (e) {
      const msg = e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message;
      throw new PierError("EDGE_ERROR", `nginx rejected the new edge configuration: ${msg}`);
    }
  }

  /** The config version the running workers answer with (through the default server). */
  private servedVersion(): Promise<string | null> {
    const host = this.opts.listenHost === "0.0.0.0" ? "127.0.0.1" : this.opts.listenHost;
    return new Promise((resolve) => {
      const req = request(
        {
          host,
          port: this.opts.listenPort,
          path: "/.pier/edge-version",
          headers: { host: "pier-edge.invalid" },
          agent: false,
        },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => {
            body += c.toString();
          });
          res.on("end", () => resolve(res.statusCode === 200 ? body.trim() : null));
        },
      );
      req.setTimeout(1000, () => req.destroy());
      req.on("error", () => resolve(null));
      req.end();
    });
  }

  private async waitServing(version: string | null, limitMs = 10_000): Promise<void> {
    const end = Date.now() + limitMs;
    // Several requests in a row must see the new version: each may land on a different worker.
    let streak = 0;
    while (Date.now() < end) {
      streak = (await this.servedVersion()) === version ? streak + 1 : 0;
      if (streak >= 3) return;
      await sleep(streak > 0 ? 5 : 25);
    }
    throw new PierError(
      "EDGE_ERROR",
      "nginx did not take the new configuration within 10 s; see the edge's error.log.",
    );
  }

  async start(): Promise<void> {
    await mkdir(join(this.opts.dir, "tmp"), { recursive: true });
    const text = this.render(this.routes);
    const pid = this.masterPid();
    if (pid) {
      // Adopt the running master: keep serving what it serves until the control plane applies its routes.
      this.opts.logger?.info({ pid }, "adopting the running edge");
      return;
    }
    await writeFile(`${this.conf}.new`, text);
    await this.test(`${this.conf}.new`);
    await rename(`${this.conf}.new`, this.conf);
    try {
      await exec([this.bin, "-e", join(this.opts.dir, "error.log"), "-p", this.opts.dir, "-c", this.conf]);
    } catch (e) {
      const msg = e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message;
      throw new PierError(
        "EDGE_ERROR",
        `The edge (nginx) did not start on ${this.opts.listenHost}:${this.opts.listenPort}: ${msg}`,
        "Is another process using PIER_HTTP_PORT?",
      );
    }
    await this.waitServing(configVersion(text));
    this.opts.logger?.info({ port: this.opts.listenPort }, "edge started");
  }

  apply(routes: readonly Route[]): Promise<void> {
    const next = this.chain.then(() => this.applyNow(routes));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async applyNow(routes: readonly Route[]): Promise<void> {
    let text: string;
    try {
      text = this.render(routes);
    } catch (e) {
      throw new PierError("EDGE_ERROR", (e as Error).message);
    }
    const current = existsSync(this.conf) ? await readFile(this.conf, "utf8") : null;
    const pid = this.masterPid();
    if (current === text && pid) {
      this.routes = routes;
      return;
    }
    await writeFile(`${this.conf}.new`, text);
    await this.test(`${this.conf}.new`);
    await rename(`${this.conf}.new`, this.conf);
    this.routes = routes;
    if (!pid) {
      await this.start();
      return;
    }
    process.kill(pid, "SIGHUP");
    await this.waitServing(configVersion(text));
  }

  async stop(): Promise<void> {
    const pid = this.masterPid();
    if (!pid) return;
    process.kill(pid, "SIGQUIT");
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    await rm(join(this.opts.dir, "nginx.pid"), { force: true });
  }
}
