// What the Docker adapter's files (and the swarm driver's) share: how a container is read (inspected or
// listed) into Pier's terms, a free loopback port, calls on objects that may be gone (isNotFound), the
// capabilities every container drops, and the engine's CPU count.
import { createServer } from "node:net";
import { availableParallelism } from "node:os";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { LABEL, labelTarget } from "../../core/labels.js";
import { LineReader } from "../../core/lines.js";
import type { InstanceInfo, NetworkSubnets, RouteTarget } from "../../core/ports.js";

/** A free TCP port on the host's loopback, so an instance keeps its address across engine restarts. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === "object" ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** What Pier reads of an inspected container. */
export type InspectLike = Pick<
  Docker.ContainerInspectInfo,
  "Id" | "Name" | "Config" | "State" | "RestartCount" | "NetworkSettings"
>;

/** Waits for an engine call on an object that may be gone already (then there is nothing to do). */
export async function unlessGone(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

export const ROLE_SANDBOX = "sandbox";
export const isSandbox = (labels: Record<string, string> | undefined) =>
  labels?.[LABEL.role] === ROLE_SANDBOX;

export const targetText = (t: RouteTarget | null) => (t ? `${t.host}:${t.port}` : "");

export function infoOf(c: InspectLike): InstanceInfo {
  const labels = c.Config.Labels ?? {};
  const inSandbox = labels[LABEL.sandbox] !== undefined;
  const ports = c.NetworkSettings.Ports ?? {};
  const published = (port: string | undefined): RouteTarget | null => {
    if (!port) return null;
    const b = ports[`${port}/tcp`]?.[0];
    return b ? { host: b.HostIp === "0.0.0.0" ? "127.0.0.1" : b.HostIp, port: Number(b.HostPort) } : null;
  };
  const nets = Object.values(c.NetworkSettings.Networks ?? {});
  return {
    id: c.Id,
    name: c.Name.replace(/^\//, ""),
    labels,
    state: c.State.Status,
    running: c.State.Running,
    startedAt: c.State.StartedAt && !c.State.StartedAt.startsWith("0001") ? c.State.StartedAt : null,
    restarts: c.RestartCount,
    // While the engine waits to restart it, the exit code is the last run's.
    exitCode: c.State.Running && c.State.Status !== "restarting" ? null : c.State.ExitCode,
    http: inSandbox ? labelTarget(labels, LABEL.httpTarget) : published(labels[LABEL.httpPort]),
    tcp: inSandbox ? labelTarget(labels, LABEL.tcpTarget) : published(labels[LABEL.tcpPort]),
    networkAddress: inSandbox
      ? labels[LABEL.address] || null
      : (nets.find((n) => n.IPAddress)?.IPAddress ?? null),
  };
}

/** What Pier reads of a listed container. */
export type ListedContainer = Pick<
  Docker.ContainerInfo,
  "Id" | "Labels" | "State" | "Ports" | "NetworkSettings"
>;

/** A published port as `docker ps` lists it. */
export function listedTarget(c: ListedContainer, port: string | undefined): RouteTarget | null {
  const p = Number(port);
  const b = c.Ports.find((x) => x.PrivatePort === p && x.Type === "tcp" && x.PublicPort);
  return b?.PublicPort
    ? { host: !b.IP || b.IP === "0.0.0.0" ? "127.0.0.1" : b.IP, port: b.PublicPort }
    : null;
}

/** Starts an exec made on `docker`, hands its output (stdout and stderr) to `onLine`; its exit code. */
export async function runExec(
  docker: Docker,
  ex: Docker.Exec,
  onLine: (line: string) => void,
): Promise<number> {
  const stream = await ex.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  docker.modem.demuxStream(stream, out, out);
  const lines = new LineReader();
  out.on("data", (c: Buffer) => {
    for (const l of lines.push(c)) onLine(l);
  });
  await new Promise<void>((resolve) => stream.on("end", () => resolve()));
  for (const l of lines.end()) onLine(l);
  const r = await ex.inspect();
  return r.ExitCode ?? 1;
}

/** Whether a network of this name exists on the engine (one inspect): AppNetworks.networkExists of both drivers. */
export async function networkExists(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getNetwork(name).inspect();
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/** Every network the engine lists, with its subnets and labels (one call): AppNetworks.networksWithSubnets. */
export async function networksWithSubnets(docker: Docker): Promise<NetworkSubnets[]> {
  const nets = await docker.listNetworks();
  return nets.map((n) => ({
    name: n.Name,
    labels: n.Labels ?? {},
    subnets: (n.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])),
  }));
}

/** The engine's 404: the object asked for is not there. */
export function isNotFound(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { statusCode?: number }).statusCode === 404;
}

/**
 * Docker's default capabilities less these, in every container Pier runs (instances, sandboxes, builds):
 * NET_RAW (raw sockets: ARP/ICMP spoofing on the app's network) and MKNOD (device nodes).
 */
export const DROPPED_CAPABILITIES: readonly string[] = ["NET_RAW", "MKNOD"];

/** The engine host's CPU count, asked once (flavors' CPU shares are capped at it); this machine's if the engine does not say. */
export function engineCpus(docker: () => Docker): () => Promise<number> {
  let asked: Promise<number> | null = null;
  return () => {
    asked ??= docker()
      .info()
      .then(
        (i: { NCPU?: number }) => i.NCPU ?? availableParallelism(),
        () => availableParallelism(),
      );
    return asked;
  };
}
