import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import {
  configVersion,
  type EdgeLayout,
  hostCommand,
  layoutFor,
  partitionRoutes,
  planRuntimeSwitch,
  renderHaproxyConfig,
  renderHostsMap,
  runtimeCommands,
} from "../../core/edge-config.js";
import { PierError } from "../../core/errors.js";
import type { Edge, Route, SkippedRoute } from "../../core/ports.js";
import { ExecError, exec } from "../exec.js";
import { prepareTlsFiles, type RuntimeEdge } from "./haproxy-tls.js";
import { connectionVia, type EdgePlace, hostPlace } from "./reach.js";

interface EdgeLogger {
  info: (o: object, m?: string) => void;
  warn: (o: object, m?: string) => void;
}

export interface HaproxyEdgeOptions {
  haproxyBin?: string;
  /** Pier's own HAProxy lives here: haproxy.cfg, hosts.map, layout.json, pid file, admin socket. */
  dir: string;
  listenPort: number;
  listenHost: string;
  /** The HTTPS frontend (ADR 0018); none without. */
  https?: { host: string; port: number };
  /** Connections one source address may hold open at a time (ADR 0024). */
  maxConnPerSource?: number;
  /** Where HAProxy runs (ADR 0030): this machine's own network (the default), or a swarm's edge sandbox. */
  place?: EdgePlace;
  logger?: EdgeLogger;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether process `pid`'s command line has `arg` as one of its arguments. */
function runsWith(pid: number, arg: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(arg);
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed HAProxy whose parent (init, for a daemon) has not reaped it yet is a zombie: it serves nothing.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

const RUNTIME_ERROR = /No such (server|backend)|Unknown (command|map)|Require|Invalid|failed|not allowed/i;

/**
 * The edge: Pier's own HAProxy daemon (not the system's), configured from the route table. A deploy only
 * changes which instances an app's server slots point to, through HAProxy's runtime API: no reload, no
 * dropped request, for any app. A change of the set of apps (or of an app's slot count) writes a new
 * configuration, checks it with `haproxy -c`, and reloads seamlessly (`-x` hands the listening sockets
 * over; the old process finishes its requests). HAProxy is a daemon: it outlives `pier server`, and a
 * restarted `pier server` adopts it. While `pier server` runs, a watchdog (`watch()`) starts HAProxy again
 * with the current routes when its process is gone (killed, crashed).
 */
export class HaproxyEdge implements Edge, RuntimeEdge {
  private readonly bin: string;
  private readonly conf: string;
  private readonly map: string;
  private readonly socket: string;
  private readonly layoutFile: string;
  private layout: EdgeLayout = { backends: [] };
  private chain: Promise<void> = Promise.resolve();
  /**
   * An adopted HAProxy may serve routes that layout.json does not show yet (pier server was killed between
   * a runtime switch and the write of its files): the first change after adopting reloads from a full
   * configuration instead of planning runtime steps from the files.
   */
  private adopted = false;

  constructor(private readonly opts: HaproxyEdgeOptions) {
    this.bin = opts.haproxyBin ?? "haproxy";
    this.conf = join(opts.dir, "haproxy.cfg");
    this.map = join(opts.dir, "hosts.map");
    this.socket = join(opts.dir, "admin.sock");
    this.layoutFile = join(opts.dir, "layout.json");
    this.place = opts.place ?? hostPlace;
  }

  private readonly place: EdgePlace;

  /** HAProxy's process when it runs where the edge serves now; null when gone or left in an old place. */
  private servingPid(): number | null {
    const pid = this.pid();
    return pid !== null && this.place.holds(pid) ? pid : null;
  }

  /** A HAProxy left in a place that is gone (a swarm's sandbox made again) serves nothing: it ends. */
  private async endStale(): Promise<void> {
    const pid = this.pid();
    if (pid === null || this.place.holds(pid)) return;
    this.opts.logger?.warn({ pid }, "the edge's sandbox was made again: HAProxy starts in the new one");
    await this.place.endOld(pid, async () => {
      process.kill(pid, "SIGTERM");
      for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
    });
    await rm(join(this.opts.dir, "haproxy.pid"), { force: true });
  }

  get dir(): string {
    return this.opts.dir;
  }

  /** Runs `f` in line with route changes and restarts (never during one). */
  serialize<T>(f: () => Promise<T>): Promise<T> {
    const next = this.chain.then(f);
    this.chain = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /**
   * HAProxy's pid from its pid file, when that process lives and is this edge's HAProxy (its command line
   * names this edge's configuration): a pid file left by a HAProxy that died may name another process once
   * the kernel gives its pid out again (pid_max is 32768 on many machines), and that one is never signalled.
   */
  pid(): number | null {
    const file = join(this.opts.dir, "haproxy.pid");
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, "utf8").trim().split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 && alive(pid) && runsWith(pid, this.conf) ? pid : null;
  }

  private render(layout: EdgeLayout): string {
    return renderHaproxyConfig({
      layout,
      listenHost: this.place.bindHost(this.opts.listenHost),
      listenPort: this.opts.listenPort,
      dir: this.opts.dir,
      https: this.opts.https && { ...this.opts.https, host: this.place.bindHost(this.opts.https.host) },
      maxConnPerSource: this.opts.maxConnPerSource,
    });
  }

  /** Writes the config and the hosts map for `layout`, once `haproxy -c` accepted them. */
  private async write(layout: EdgeLayout): Promise<string> {
    let text: string;
    try {
      text = this.render(layout);
    } catch (e) {
      throw new PierError("EDGE_ERROR", (e as Error).message);
    }
    // Private to Pier's user (ADR 0024); HAProxy runs as that user.
    await writeFile(`${this.map}.new`, renderHostsMap(layout), { mode: 0o600 });
    await writeFile(`${this.conf}.new`, text.replaceAll(this.map, `${this.map}.new`), { mode: 0o600 });
    try {
      // Not -q: it hides the reason of a refusal too.
      await exec([this.bin, "-c", "-f", `${this.conf}.new`]);
    } catch (e) {
      const alerts =
        e instanceof ExecError
          ? e.stderrTail
              .split("\n")
              .filter((l) => l.includes("[ALERT]"))
              .map((l) => l.replace(/^\[ALERT\]\s*\(\d+\) : (config : )?/, ""))
              .join(" | ")
          : "";
      const msg = alerts || (e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message);
      throw new PierError("EDGE_ERROR", `HAProxy rejected the new edge configuration: ${msg}`);
    }
    await writeFile(`${this.conf}.new`, text, { mode: 0o600 });
    await rename(`${this.map}.new`, this.map);
    await rename(`${this.conf}.new`, this.conf);
    await writeFile(this.layoutFile, JSON.stringify(layout), { mode: 0o600 });
    return text;
  }

  /** Sends runtime API commands (one connection, `;`-separated) and returns the answer. */
  runtime(commands: readonly string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = connect(this.socket);
      let out = "";
      s.on("connect", () => s.end(`${commands.join(";")}\n`));
      s.on("data", (c: Buffer) => {
        out += c.toString();
      });
      s.on("end", () => resolve(out));
      s.on("error", reject);
      s.setTimeout(5000, () => s.destroy(new Error("HAProxy's runtime API did not answer within 5 s")));
    });
  }

  /** One command with a payload (HAProxy's `<<` syntax: the payload ends at an empty line). */
  runtimePayload(command: string, payload: string): Promise<string> {
    const body = payload.replace(/\n+$/, "").replace(/\n\n+/g, "\n");
    return this.runtime([`${command} <<\n${body}\n`]);
  }

  private servedVersion(): Promise<string | null> {
    const bound = this.place.bindHost(this.opts.listenHost);
    const host = bound === "0.0.0.0" ? "127.0.0.1" : bound;
    const port = this.opts.listenPort;
    return new Promise((resolve) => {
      const req = request(
        {
          host,
          port,
          path: "/.pier/edge-version",
          headers: { host: "pier-edge.invalid" },
          // From where HAProxy runs (on a swarm, its sandbox on the manager).
          createConnection: connectionVia(this.place, 1000),
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

  private async waitServing(version: string | null): Promise<void> {
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      if ((await this.servedVersion()) === version) return;
      await sleep(20);
    }
    throw new PierError("EDGE_ERROR", "HAProxy did not serve the new configuration within 10 s.");
  }

  private async launch(text: string, replacing: number | null): Promise<void> {
    const argv = [...(await this.place.prepare()), this.bin, "-f", this.conf];
    if (replacing) argv.push("-x", this.socket, "-sf", String(replacing));
    try {
      await exec(argv);
    } catch (e) {
      const msg = e instanceof ExecError ? e.stderrTail.trim() : (e as Error).message;
      throw new PierError(
        "EDGE_ERROR",
        `The edge (HAProxy) did not start on ${this.opts.listenHost}:${this.opts.listenPort}${this.opts.https ? ` and ${this.opts.https.host}:${this.opts.https.port}` : ""}: ${msg}`,
        "Is another process using PIER_HTTP_PORT or PIER_HTTPS_PORT?",
      );
    }
    // HAProxy writes its pid file with the umask's mode.
    await chmod(join(this.opts.dir, "haproxy.pid"), 0o600).catch(() => undefined);
    await this.waitServing(configVersion(text));
  }

  async start(): Promise<void> {
    await mkdir(this.opts.dir, { recursive: true, mode: 0o700 });
    if (this.opts.https) await prepareTlsFiles(this.opts.dir);
    if (existsSync(this.layoutFile)) {
      try {
        this.layout = JSON.parse(readFileSync(this.layoutFile, "utf8")) as EdgeLayout;
      } catch {
        this.layout = { backends: [] };
      }
    }
    await this.place.prepare();
    await this.endStale();
    const pid = this.servingPid();
    if (pid) {
      // Adopt the running edge: it keeps serving while the control plane re-applies its routes.
      this.opts.logger?.info({ pid }, "adopting the running edge");
      this.adopted = true;
      return;
    }
    const text = await this.write(this.layout);
    await this.launch(text, null);
    this.opts.logger?.info({ port: this.opts.listenPort }, "edge started");
  }

  apply(routes: readonly Route[]): Promise<{ skipped: SkippedRoute[] }> {
    // A route HAProxy cannot take is left out (and reported), never fatal for the other apps.
    const { ok, skipped } = partitionRoutes(routes);
    for (const s of skipped) this.opts.logger?.warn({ appId: s.appId, reason: s.reason }, "route skipped");
    const next = this.chain.then(() => this.applyNow(ok));
    this.chain = next.catch(() => undefined);
    return next.then(() => ({ skipped }));
  }

  /** Writing the files of a runtime switch, after the switch (off the deploy's critical path). */
  private persisting: Promise<void> = Promise.resolve();

  /** Waits for the files of the last route change to be written. */
  flushed(): Promise<void> {
    return this.persisting;
  }

  private async applyNow(routes: readonly Route[]): Promise<void> {
    await this.persisting;
    let plan: ReturnType<typeof planRuntimeSwitch>;
    try {
      plan = planRuntimeSwitch(this.layout, routes);
    } catch (e) {
      throw new PierError("EDGE_ERROR", (e as Error).message);
    }
    await this.endStale();
    const pid = this.servingPid();
    if (plan && pid && !this.adopted) {
      if (plan.steps.length === 0 && plan.hosts.length === 0) return;
      const answer = await this.runtime([
        ...plan.hosts.map((h) => hostCommand(h, this.map)),
        ...plan.steps.flatMap(runtimeCommands),
      ]);
      if (RUNTIME_ERROR.test(answer)) {
        throw new PierError("EDGE_ERROR", `HAProxy refused a route change: ${answer.trim()}`);
      }
      this.layout = plan.layout;
      // Keep the files in step, so a restarted HAProxy comes back with the same routes. The switch is
      // live already: the check and write (haproxy -c, ~50 ms) need not delay the deploy. The next route
      // change, and stop(), wait for it.
      this.persisting = this.write(plan.layout).then(
        () => undefined,
        (e: Error) => this.opts.logger?.warn({ err: e.message }, "could not write the edge configuration"),
      );
      return;
    }
    const layout = layoutFor(routes, this.layout);
    const text = await this.write(layout);
    this.layout = layout;
    await this.launch(text, pid);
    this.adopted = false;
  }

  private watchdog: NodeJS.Timeout | null = null;

  /**
   * The watchdog: every `intervalMs`, if HAProxy's process is gone (killed, crashed, OOM), starts it again
   * with the current routes (those of the last change, kept in memory and on disk). Checks run in line with
   * route changes, never during one. `onRestart` runs after each restart (e.g. to re-apply the route table).
   */
  watch(intervalMs = 1000, onRestart?: () => Promise<void>): void {
    this.unwatch();
    let busy = false;
    let failing = false;
    this.watchdog = setInterval(() => {
      if (busy || this.servingPid() !== null) return;
      busy = true;
      const next = this.chain.then(() => this.revive());
      this.chain = next.then(
        () => undefined,
        () => undefined,
      );
      next
        .then(async (restarted) => {
          failing = false;
          if (restarted && onRestart) await onRestart();
        })
        .catch((e: Error) => {
          // Said once per outage, not every second.
          if (!failing) this.opts.logger?.warn({ err: e.message }, "could not restart the edge (HAProxy)");
          failing = true;
        })
        .finally(() => {
          busy = false;
        });
    }, intervalMs);
    this.watchdog.unref();
  }

  /** When pier server stops: the watchdog and the dialer end; HAProxy keeps serving. */
  release(): void {
    this.unwatch();
    this.place.close();
  }

  /** Stops the watchdog (HAProxy keeps running). */
  unwatch(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  /** Starts HAProxy with the current layout when its process is gone; true if it did. */
  private async revive(): Promise<boolean> {
    if (this.watchdog === null || this.servingPid() !== null) return false;
    await this.persisting;
    await this.endStale();
    this.opts.logger?.warn(
      { port: this.opts.listenPort },
      "the edge (HAProxy) is not running: starting it again with the current routes",
    );
    const text = await this.write(this.layout);
    await this.launch(text, null);
    this.opts.logger?.info({ port: this.opts.listenPort }, "edge restarted: it serves the current routes");
    return true;
  }

  async stop(): Promise<void> {
    this.unwatch();
    await this.persisting;
    const pid = this.pid();
    if (!pid) return;
    process.kill(pid, "SIGUSR1");
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    if (this.pid() === pid) process.kill(pid, "SIGTERM");
    await rm(join(this.opts.dir, "haproxy.pid"), { force: true });
  }
}
