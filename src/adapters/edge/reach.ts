// Where the edge serves from (ADR 0030), and connections to instances from there. On one machine that is
// the host's own network (`hostPlace`); on a swarm, a sandbox on the manager (edge-sandbox.ts), reached
// through a dialer process in its network namespace (dialer.ts) over a unix socket only root can open.
import type { RequestOptions } from "node:http";
import { createConnection, isIP, type Socket, connect as tcpConnect } from "node:net";
import { PassThrough } from "node:stream";
import type { InstanceReach } from "../../core/ports.js";

/** Where HAProxy runs: the prefix of its command, and whether a process still runs there. */
export interface EdgePlace extends InstanceReach {
  /** Makes the place ready (again); the argv prefix that runs a process there ([] on the host). */
  prepare(): Promise<string[]>;
  /** False once process `pid` no longer runs in the place (the place was made again since it started). */
  holds(pid: number): boolean;
  /**
   * Ends process `pid`, left in an old place (`end` stops it), and clears what that place still holds that
   * would get in the new one's way.
   */
  endOld(pid: number, end: () => Promise<void>): Promise<void>;
  /** The address HAProxy binds there for the configured listen address. */
  bindHost(configured: string): string;
  /** Ends what Pier runs beside the edge there (the dialer); the edge keeps serving. */
  close(): void;
}

/** A network error with its code, as net's own errors carry it. */
export function dialError(code: string, message: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(message);
  e.code = code;
  return e;
}

/** A direct TCP connection from this process's own network. */
export function connectDirect(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host, port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(dialError("ETIMEDOUT", `connect ETIMEDOUT ${host}:${port}`));
    }, timeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      s.removeAllListeners("error");
      resolve(s);
    });
    s.once("error", (e) => {
      clearTimeout(timer);
      s.destroy();
      reject(e);
    });
  });
}

/** The edge on this machine's own network (one dockerd): the host is on every app network. */
export const hostPlace: EdgePlace = {
  prepare: async () => [],
  holds: () => true,
  endOld: (_pid, end) => end(),
  bindHost: (configured) => configured,
  connect: connectDirect,
  close: () => undefined,
};

/** The dialer's request line: `<ip> <port> <timeoutMs>`; null when it is not one. */
export function parseDialRequest(line: string): { host: string; port: number; timeoutMs: number } | null {
  const m = /^(\S+) (\d{1,5}) (\d{1,6})$/.exec(line);
  if (!m) return null;
  const [host, port, timeoutMs] = [m[1]!, Number(m[2]), Number(m[3])];
  if (isIP(host) === 0 || port < 1 || port > 65535 || timeoutMs < 1) return null;
  return { host, port, timeoutMs };
}

/**
 * The first line a socket receives (at most `max` bytes), in paused mode: what follows the line is put back
 * and the socket is left neither flowing nor paused, so its next reader gets every byte. Null when the
 * socket ends (or errs, or sends too long a line) first.
 */
export function readLine(s: Socket, max = 200): Promise<string | null> {
  return new Promise((resolve) => {
    let head = Buffer.alloc(0);
    const done = (line: string | null) => {
      s.off("readable", onReadable);
      s.off("end", onEnd);
      s.off("error", onEnd);
      resolve(line);
    };
    const onEnd = () => done(null);
    const onReadable = () => {
      for (let chunk = s.read() as Buffer | null; chunk !== null; chunk = s.read() as Buffer | null) {
        head = Buffer.concat([head, chunk]);
        const nl = head.indexOf(10);
        if (nl >= 0) {
          const rest = head.subarray(nl + 1);
          if (rest.length > 0) s.unshift(rest);
          return done(head.subarray(0, nl).toString());
        }
        if (head.length > max) return done(null);
      }
    };
    s.on("readable", onReadable);
    s.once("end", onEnd);
    s.once("error", onEnd);
  });
}

/**
 * A connection through the dialer listening on `socketPath` (dialer.ts): it answers `ok` once its own
 * connection is established, or `error <code>`; then the socket carries the connection's bytes.
 */
export function connectThroughDialer(
  socketPath: string,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection(socketPath);
    const fail = (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      s.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(dialError("ETIMEDOUT", `connect ETIMEDOUT ${host}:${port} (through the edge)`)),
      timeoutMs + 1000,
    );
    s.once("error", fail);
    s.once("connect", () => {
      s.write(`${host} ${port} ${timeoutMs}\n`);
      void readLine(s).then((answer) => {
        clearTimeout(timer);
        s.off("error", fail);
        if (answer === "ok") return resolve(s);
        const code = answer === null ? "EPROTO" : (/^error (\S+)/.exec(answer)?.[1] ?? "EPROTO");
        s.destroy();
        reject(dialError(code, `connect ${code} ${host}:${port} (through the edge)`));
      });
    });
  });
}

/**
 * An HTTP request's `createConnection` that opens its connection through `reach` (to its host and port).
 * The request must not name an agent (`agent: false` makes one, which ignores this), so each request has a
 * connection of its own.
 */
export function connectionVia(
  reach: InstanceReach,
  timeoutMs: number,
): NonNullable<RequestOptions["createConnection"]> {
  return (o, oncreate) => {
    reach.connect(o.host ?? "127.0.0.1", Number(o.port), timeoutMs).then(
      (s) => oncreate(null, s),
      // The request reports the error; the stream given beside it is never used.
      (e: Error) => oncreate(e, new PassThrough()),
    );
    return undefined;
  };
}
