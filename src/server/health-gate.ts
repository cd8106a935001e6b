import { request } from "node:http";
import { connectionVia } from "../adapters/edge/reach.js";
import { listeningAddresses, loopbackOnly } from "../core/health.js";
import type { Engine, InstanceInfo, InstanceReach } from "../core/ports.js";

/** Waits `ms`, or rejects with the signal's reason; its abort listener goes either way (the gate polls
 * every 10 ms: listeners left behind piled up on the deployment's signal). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });

/** Whether `host:port` accepts a connection from where the edge serves. */
function tcpOpen(reach: InstanceReach, host: string, port: number): Promise<boolean> {
  return reach.connect(host, port, 1000).then(
    (s) => {
      s.destroy();
      return true;
    },
    () => false,
  );
}

export type ListenResult = { ok: true } | { ok: false; exited: number | null; loopbackOnly?: string[] };

/** The addresses the port listens on inside the instance, or null if they cannot be read. */
async function addressesInside(engine: Engine, id: string, port: number): Promise<string[] | null> {
  const lines: string[] = [];
  try {
    const code = await engine.execInInstance(id, ["cat", "/proc/net/tcp", "/proc/net/tcp6"], (l) =>
      lines.push(l),
    );
    return code === 0 || lines.length > 0 ? listeningAddresses(lines.join("\n"), port) : null;
  } catch {
    return null;
  }
}

/**
 * Waits until the instance accepts TCP connections on its HTTP port. The probe goes to the instance's
 * address on its app network, from where the edge serves (`reach`): the loopback port published by the
 * engine accepts connections even before the app listens, so it cannot tell.
 */
export async function waitListening(
  engine: Engine,
  reach: InstanceReach,
  instance: InstanceInfo,
  port: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ListenResult> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  // A refused connection costs well under a millisecond: the port is tried every 10 ms (an app that
  // starts listening is seen at once), the engine is asked about the instance every 100 ms.
  const delay = 10;
  let diagnosed = false;
  for (let round = 0; Date.now() < deadline; round++) {
    // The address on the app network does not change while the instance runs: try it before asking the engine.
    if (instance.networkAddress && (await tcpOpen(reach, instance.networkAddress, port))) return { ok: true };
    if (instance.networkAddress && round % 10 !== 9) {
      await sleep(delay, signal);
      continue;
    }
    const now = await engine.inspectInstance(instance.id);
    if (!now) return { ok: false, exited: null };
    // Exited, or exited and waiting for the engine to restart it: an instance that exits before it listens
    // fails the gate at once, with its exit code (the engine would restart it forever).
    if (now.state === "restarting" || (!now.running && now.state !== "created")) {
      return { ok: false, exited: now.exitCode };
    }
    const host = now.networkAddress ?? instance.http?.host;
    if (now.running && host && (await tcpOpen(reach, host, port))) return { ok: true };
    if (now.running && !diagnosed && Date.now() - started > 2000) {
      // An app bound to 127.0.0.1 inside its instance can never be reached: say so at once.
      diagnosed = true;
      const inside = await addressesInside(engine, instance.id, port);
      if (inside && loopbackOnly(inside)) return { ok: false, exited: null, loopbackOnly: inside };
    }
    await sleep(delay, signal);
  }
  return { ok: false, exited: null };
}

/**
 * `GET path` on the instance's address, from where the edge serves; the status code, or the network
 * error's code.
 */
export function probe(
  reach: InstanceReach,
  target: { host: string; port: number },
  path: string,
  timeoutMs = 10_000,
): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        path,
        method: "GET",
        createConnection: connectionVia(reach, timeoutMs),
        headers: { "user-agent": "pier-health-check" },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve("no answer (timeout)");
    });
    req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end();
  });
}
