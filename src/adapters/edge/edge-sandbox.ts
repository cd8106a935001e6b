// The edge's place on a swarm (ADR 0030): a sandbox container on the manager's dockerd that publishes the
// edge's ports (plain port publishing: no routing mesh, no IPVS) and joins every app's attachable overlay.
// Pier's own HAProxy runs in its network namespace (`nsenter --net`), with its files on the host as on one
// machine; so does the dialer (dialer.ts) through which the health gate reaches instances. The sandbox
// forwards nothing between the overlays it joins (ip_forward is 0 in it): apps stay apart. Pier's subnet
// pool is unreachable in it but for the overlays it is on, so it joins them while the edge already serves.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { PierError } from "../../core/errors.js";
import { LABEL } from "../../core/labels.js";
import { exec } from "../exec.js";
import { closePoolByRules } from "../pool-route.js";
import { connectThroughDialer, type EdgePlace } from "./reach.js";
import { hostPidOf, linkNames, netnsOf, openHandle } from "./sandbox-netns.js";
import { SandboxOverlays } from "./sandbox-overlays.js";

const DIALER = fileURLToPath(new URL("./dialer.js", import.meta.url));
const ROLE_EDGE = "edge";

export interface EdgeSandboxOptions {
  /** The manager's dockerd. */
  docker: Docker;
  scope: string;
  /** The image the sandbox runs (`sleep infinity`): Pier's base image, on the manager for its builds. */
  image: string;
  /** What the sandbox publishes on the manager: the edge's HTTP and HTTPS listen addresses. */
  publish: { host: string; port: number }[];
  /** The dialer's unix socket, in Pier's private data directory. */
  dialerSocket: string;
  /**
   * Pier's subnet pool (IPv4 CIDR): unreachable from the sandbox but for the overlays it is on, so that
   * an app whose overlay is not joined yet (or failed to join) gets no traffic out by the sandbox's
   * default route, and the overlays can be joined while the edge already serves.
   */
  pool: string;
  logger?: { warn: (o: object, m?: string) => void };
}

type Inspected = Awaited<ReturnType<Docker.Container["inspect"]>>;

export class EdgeSandbox implements EdgePlace {
  private readonly name: string;
  /** The sandbox's process and network namespace when prepare() last saw it running. */
  private current: { id: string; pid: number; netns: string } | null = null;
  /** An open handle on that namespace: it outlives the sandbox, so Pier can still empty it (retire()). */
  private handle: number | null = null;
  private dialer: ChildProcess | null = null;
  /** How many namespaces prepare() has seen: the overlays' watch starts over when it goes up. */
  private generation = 0;
  /** The app overlays it is on. */
  private readonly overlays: SandboxOverlays;

  constructor(private readonly opts: EdgeSandboxOptions) {
    this.name = `pier-edge-${opts.scope}`;
    this.overlays = new SandboxOverlays({
      docker: opts.docker,
      name: this.name,
      own: this.own,
      inspect: () => this.inspect(),
      prepared: () => this.current !== null,
      generation: () => this.generation,
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
  }

  private get own(): Record<string, string> {
    return { [LABEL.managed]: "true", [LABEL.scope]: this.opts.scope };
  }

  private get publishSpec(): string {
    return this.opts.publish.map((p) => `${p.host}:${p.port}`).join(",");
  }

  bindHost(): string {
    // Docker forwards the published address to the sandbox's own interface: HAProxy listens on all of its.
    return "0.0.0.0";
  }

  holds(pid: number): boolean {
    const c = this.current;
    if (!c) return false;
    const sandboxNet = netnsOf(c.pid);
    return sandboxNet !== null && sandboxNet === c.netns && netnsOf(pid) === c.netns;
  }

  async prepare(): Promise<string[]> {
    const c = await this.ensureRunning();
    const pid = hostPidOf(c.Id, c.State.Pid);
    const netns = pid === null ? null : netnsOf(pid);
    if (pid === null || !netns)
      throw new PierError(
        "EDGE_ERROR",
        `The edge's sandbox ${this.name} runs, but its process is not visible here: pier server must run on the manager, as root, beside its dockerd.`,
      );
    const changed = this.current?.netns !== netns;
    if (changed) {
      await this.retire();
      this.handle = openHandle(pid);
    }
    this.current = { id: c.Id, pid, netns };
    // A namespace not seen before (Pier started, or the sandbox made or started again) may lack overlays;
    // otherwise join() took each new app's as it came: a reload costs one inspect, not a walk of them all
    // (unless a join failed: the next reload tries it again).
    if (changed && !(await this.closePool())) {
      // Without the pool closed, an unjoined app's traffic would leave by the default route: join first.
      await this.overlays.joinAll();
    } else if (changed || this.overlays.unjoined) this.overlays.walkInBackground();
    if (changed || !this.dialerAlive()) await this.startDialer();
    if (changed) {
      this.generation++;
      this.overlays.syncInBackground();
    }
    return this.prefix();
  }

  /**
   * Empties the namespace of a sandbox the engine replaced. A namespace outlives its sandbox while anything
   * holds it: orphaned TCP connections of the HAProxy that served there did, ~100 s after the manager's
   * dockerd was killed and started (measured on the lab), and kept its interfaces. The sandbox made again
   * has the same address and MAC on the engine's bridge (Docker derives the MAC from the address), so the
   * old interface answered for it and the bridge sent the edge's traffic to the dead namespace: the edge
   * refused every request for those ~100 s. Deleting the old interfaces (each a veth: its bridge port goes
   * with it) ends that at once.
   */
  private async retire(): Promise<void> {
    const fd = this.handle;
    this.handle = null;
    if (fd !== null) await this.empty(fd);
  }

  /**
   * A HAProxy left in the namespace of a sandbox made again while no pier server ran (the manager's dockerd
   * restarted meanwhile): this process never held that namespace, so it takes it from HAProxy's process,
   * then empties it once HAProxy ended (its orphaned connections would keep it, as in retire()).
   */
  async endOld(pid: number, end: () => Promise<void>): Promise<void> {
    const old = netnsOf(pid);
    const fd = old !== null && old !== this.current?.netns ? openHandle(pid) : null;
    try {
      await end();
    } finally {
      if (fd !== null) await this.empty(fd);
    }
  }

  /** Deletes every interface of the namespace `fd` holds (each a veth: its bridge port goes with it); closes `fd`. */
  private async empty(fd: number): Promise<void> {
    try {
      const enter = ["nsenter", `--net=/proc/${process.pid}/fd/${fd}`, "--"];
      const links = linkNames((await exec([...enter, "ip", "-o", "link", "show"])).stdout).filter(
        (name) => name !== "lo",
      );
      // One `ip` for all of them (one interface per joined overlay); -force goes on past one already gone.
      if (links.length > 0)
        await exec([...enter, "ip", "-force", "-batch", "-"], {
          input: links.map((name) => `link del ${name}\n`).join(""),
        });
    } catch (e) {
      this.opts.logger?.warn(
        { err: (e as Error).message },
        "edge: could not empty the network namespace of the sandbox made again",
      );
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The pool unreachable in the sandbox's namespace but through the joined overlays' own routes. False
   * when it could not be: the caller then joins every overlay before the edge serves.
   */
  private async closePool(): Promise<boolean> {
    const claimed = await closePoolByRules(this.opts.pool, (argv) => exec([...this.prefix(), ...argv]));
    if (claimed.state !== "failed") return true;
    this.opts.logger?.warn(
      { pool: this.opts.pool, reason: claimed.reason },
      "edge: could not make the subnet pool unreachable in the sandbox; every app's network is joined before the edge serves",
    );
    return false;
  }

  private prefix(): string[] {
    return ["nsenter", `--net=/proc/${this.current?.pid}/ns/net`, "--"];
  }

  /**
   * The sandbox, running, with the ports of the settings; made again when the settings changed, and when it
   * stopped (the manager's dockerd restarted, say). Not started again: the engine would attach it to every
   * app's overlay before it runs, and no app would be served until the last was attached (22-27 s at 30
   * apps); made anew, it runs at once on its bridge alone, and prepare() joins the overlays while the edge
   * serves (the engine does not restart it either: its restart policy is `no`).
   */
  private async ensureRunning(): Promise<Inspected> {
    let c = await this.inspect();
    if (c && (c.Config.Labels?.[LABEL.edgePublish] !== this.publishSpec || !c.State.Running)) {
      await this.opts.docker.getContainer(c.Id).remove({ force: true });
      c = null;
    }
    if (!c) {
      await this.create();
      c = await this.inspect();
    }
    if (!c) throw new PierError("EDGE_ERROR", `The edge's sandbox ${this.name} vanished as it was made.`);
    if (!c.State.Running) {
      await this.opts.docker.getContainer(c.Id).start();
      c = await this.inspect();
    }
    if (!c?.State.Running || !c.State.Pid)
      throw new PierError("EDGE_ERROR", `The edge's sandbox ${this.name} does not run on the manager.`);
    return c;
  }

  private async inspect(): Promise<Inspected | null> {
    try {
      return await this.opts.docker.getContainer(this.name).inspect();
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return null;
      throw e;
    }
  }

  private async create(): Promise<void> {
    const exposed: Record<string, object> = {};
    const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
    for (const p of this.opts.publish) {
      exposed[`${p.port}/tcp`] = {};
      bindings[`${p.port}/tcp`] = [{ HostIp: p.host, HostPort: String(p.port) }];
    }
    try {
      await this.opts.docker.createContainer({
        name: this.name,
        Image: this.opts.image,
        Cmd: ["sleep", "infinity"],
        Labels: { ...this.own, [LABEL.role]: ROLE_EDGE, [LABEL.edgePublish]: this.publishSpec },
        ExposedPorts: exposed,
        StopSignal: "SIGKILL",
        HostConfig: {
          PortBindings: bindings,
          RestartPolicy: { Name: "no" },
          CapDrop: ["ALL"],
          ReadonlyRootfs: true,
          NetworkMode: "bridge",
          // Explicit: the sandbox joins every app's overlay and must route between none of them.
          Sysctls: { "net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0" },
        },
      });
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 409) return; // made meanwhile
      throw new PierError(
        "EDGE_ERROR",
        `Could not make the edge's sandbox on the manager (${this.opts.image}): ${(e as Error).message}`,
      );
    }
  }

  /**
   * The sandbox joins an app's overlay (before the app's instances are routed to), with an address there;
   * before prepare(), nothing: its walk joins every overlay.
   */
  join(network: string): Promise<void> {
    return this.overlays.join(network);
  }

  /** The sandbox leaves the scope's overlays with these labels (except `keep`), so they can be removed. */
  leave(labels: Record<string, string>, keep?: string): Promise<void> {
    return this.overlays.leave(labels, keep);
  }

  connect(host: string, port: number, timeoutMs: number) {
    const ready = this.dialerAlive() ? Promise.resolve() : this.prepare().then(() => undefined);
    return ready.then(() => connectThroughDialer(this.opts.dialerSocket, host, port, timeoutMs));
  }

  private dialerAlive(): boolean {
    return this.dialer !== null && this.dialer.exitCode === null && this.dialer.signalCode === null;
  }

  /** The dialer in the sandbox's network namespace, ready on its socket; the one before it ends. */
  private async startDialer(): Promise<void> {
    this.dialer?.kill();
    const child = spawn(
      this.prefix()[0]!,
      [...this.prefix().slice(1), process.execPath, DIALER, this.opts.dialerSocket],
      {
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    this.dialer = child;
    let err = "";
    child.stderr?.on("data", (c: Buffer) => {
      err = (err + c.toString()).slice(-2000);
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new PierError("EDGE_ERROR", "The edge's dialer did not start within 10 s.")),
        10_000,
      );
      child.stdout?.once("data", () => {
        clearTimeout(timer);
        resolve();
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(
          new PierError("EDGE_ERROR", `The edge's dialer exited (${code}): ${err.trim() || "no output"}`),
        );
      });
    });
  }

  /** Ends the dialer (the sandbox and the edge in it keep serving). */
  close(): void {
    this.dialer?.kill();
    this.dialer = null;
    if (this.handle !== null) closeSync(this.handle);
    this.handle = null;
  }
}
