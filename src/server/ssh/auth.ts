// Authentication of SSH connections: who may take an unauthenticated slot (ADR 0020), how long it may take
// to authenticate, which keys are accepted and how many attempts a connection gets, the per-key cap on
// connections, and the idle timeout of authenticated ones (ADR 0009).
import { Socket } from "node:net";
import ssh2, { type AuthContext, type Connection } from "ssh2";
import { admit, type Unauthenticated } from "../../core/ssh-admission.js";
import type { MiniLogger } from "./hook.js";

const { utils } = ssh2;

/** Keys (or other authentication attempts) a connection may try, as OpenSSH's MaxAuthTries: the next closes it. */
export const MAX_AUTH_TRIES = 6;

/** What Pier knows of one connection before and after it authenticates. */
export interface ConnState extends Unauthenticated {
  sock: Socket;
  authenticated: boolean;
  timer: NodeJS.Timeout | null;
  /** The key it authenticated with. */
  keyId: string | null;
  /** Authenticated past its key's cap: it is told so and closed. */
  overCap: boolean;
  /** Deploys of its pushes under way: the connection is not idle while one runs, however quiet. */
  deploys: number;
  /** Channels paused while git takes what it was sent: not idle either (git may index for a while). */
  waiting: number;
  idle: NodeJS.Timeout | null;
}

export interface ConnectionLimits {
  /** A connection not authenticated by then is closed. */
  authTimeoutMs: number;
  /** Unauthenticated connections on the port and on the socket each. */
  maxUnauthenticated: number;
  /** Of those on the port, from one address. */
  maxPerSource: number;
  /** An authenticated connection quiet for this long, with no deploy under way, is closed. */
  idleMs: number;
  /** Authenticated connections of one key, on the port and on the socket each. */
  maxPerKey: number;
}

/**
 * The socket ssh2 keeps for a connection, in a field its types do not declare (a connection that never
 * sends its SSH version never becomes a Connection at all, so Pier's state is kept per socket).
 */
export function socketOf(client: Connection): Socket | undefined {
  return "_sock" in client && client._sock instanceof Socket ? client._sock : undefined;
}

/** Whether two connections came on the same listener (the port has addresses, the socket none). */
const sameListener = (a: ConnState, b: { source: string | null }) =>
  (a.source === null) === (b.source === null);

/** Pier's limits on connections (ADR 0009, ADR 0020), kept per socket. */
export class SshConnections {
  readonly sockets = new Set<Socket>();
  private readonly states = new WeakMap<Socket, ConnState>();

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly logger: MiniLogger,
  ) {}

  stateOf(client: Connection): ConnState | undefined {
    const sock = socketOf(client);
    return sock ? this.states.get(sock) : undefined;
  }

  /**
   * A new socket: refused (destroyed) unless it gets an unauthenticated slot; closed if it does not
   * authenticate in time. Returns whether it goes on to ssh2.
   */
  accept(sock: Socket): boolean {
    const state = this.admitted(sock);
    if (!state) return false;
    const { authTimeoutMs } = this.limits;
    state.timer = setTimeout(() => {
      if (state.authenticated) return;
      this.logger.info({ after: authTimeoutMs / 1000 }, "ssh connection closed: not authenticated in time");
      sock.destroy();
    }, authTimeoutMs);
    this.states.set(sock, state);
    sock.on("close", () => {
      if (state.timer) clearTimeout(state.timer);
      if (state.idle) clearInterval(state.idle);
    });
    this.sockets.add(sock);
    sock.on("close", () => this.sockets.delete(sock));
    return true;
  }

  /**
   * The state of a new connection if it gets an unauthenticated slot (core/ssh-admission.ts): the SSH port
   * and the builds' socket each have `maxUnauthenticated`; on the port, one address takes at most
   * `maxPerSource`, and a full port gives a newcomer the slot of the largest holder's oldest connection.
   */
  private admitted(sock: Socket): ConnState | null {
    const { maxUnauthenticated, maxPerSource } = this.limits;
    const source = sock.remoteAddress ?? null;
    const held: ConnState[] = [];
    for (const s of this.sockets) {
      const st = this.states.get(s);
      if (st && !st.authenticated && sameListener(st, { source })) held.push(st);
    }
    const verdict = admit(held, source, { max: maxUnauthenticated, perSource: maxPerSource });
    if (!verdict.accept) {
      const refused =
        verdict.why === "per-source" ? { perSource: maxPerSource, source } : { limit: maxUnauthenticated };
      this.logger.warn(refused, "ssh connection refused: too many unauthenticated");
      return null;
    }
    const evicted = held.find((h) => h === verdict.evict);
    if (evicted) {
      this.logger.warn(
        { source: evicted.source, for: source },
        "ssh connection closed: its slot went to another address",
      );
      evicted.sock.destroy();
    }
    return {
      sock,
      source,
      openedAt: Date.now(),
      authenticated: false,
      timer: null,
      keyId: null,
      overCap: false,
      deploys: 0,
      waiting: 0,
      idle: null,
    };
  }

  /**
   * A connection that authenticated: past its key's cap it is marked (its command is refused with a
   * message); otherwise it is watched for idleness.
   */
  authenticated(client: Connection, state: ConnState, keyId: string): void {
    const { maxPerKey } = this.limits;
    state.authenticated = true;
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    let same = 0;
    for (const s of this.sockets) {
      const st = this.states.get(s);
      if (st?.authenticated && !st.overCap && st.keyId === keyId && sameListener(st, state)) same++;
    }
    state.keyId = keyId;
    if (same >= maxPerKey) {
      state.overCap = true;
      this.logger.warn({ keyId, limit: maxPerKey }, "ssh connection refused: too many for one key");
      state.timer = setTimeout(() => state.sock.destroy(), 10_000);
      return;
    }
    this.watchIdle(client, state, keyId);
  }

  /** No byte either way for `idleMs`, and no deploy of its pushes under way, closes the connection. */
  private watchIdle(client: Connection, state: ConnState, keyId: string): void {
    const { idleMs } = this.limits;
    let seen = -1;
    let quietSince = Date.now();
    state.idle = setInterval(
      () => {
        const bytes = state.sock.bytesRead + state.sock.bytesWritten;
        if (bytes !== seen || state.deploys > 0 || state.waiting > 0) {
          seen = bytes;
          quietSince = Date.now();
        } else if (Date.now() - quietSince >= idleMs) {
          this.logger.info({ keyId, after: idleMs / 1000 }, "ssh connection closed: idle");
          if (state.idle) clearInterval(state.idle);
          client.end();
          setTimeout(() => state.sock.destroy(), 1000).unref();
        }
      },
      Math.max(50, Math.min(idleMs / 8, 15_000)),
    );
  }

  /** Cuts every connection (those that did not end when asked). */
  destroyAll(): void {
    for (const s of this.sockets) s.destroy();
  }
}

/** Who a connection authenticated as: set once its key's signature is verified. */
export interface Identity {
  fingerprint: string | null;
  keyId: string | null;
}

export interface AuthDeps {
  connections: SshConnections;
  /** The registered key, or null. */
  authorizeKey(algo: string, blob: Buffer): Promise<{ fingerprint: string; keyId: string } | null>;
  logger: MiniLogger;
}

/**
 * Public keys only, registered ones, with a valid signature; at most MAX_AUTH_TRIES attempts. Returns the
 * connection's identity, filled in when it authenticates.
 */
export function authenticate(client: Connection, deps: AuthDeps): Identity {
  const identity: Identity = { fingerprint: null, keyId: null };
  let failures = 0;
  let askedMethods = false;
  const fail = (ctx: AuthContext) => {
    failures++;
    ctx.reject(["publickey"]);
  };
  let closing = false;
  client.on("authentication", (ctx) => {
    // Closed for too many tries: a request the client sent before it saw the close gets no answer (an answer
    // would let it try once more while the connection ends).
    if (closing) return;
    if (failures >= MAX_AUTH_TRIES) {
      closing = true;
      deps.logger.info({ tries: failures }, "ssh connection closed: too many authentication attempts");
      ctx.reject([]);
      client.end();
      return;
    }
    if (ctx.method !== "publickey") {
      // A client's first "none" asks which methods there are; anything else (passwords, keyboard-interactive,
      // "none" again) is an attempt that fails, and counts as a key tried does (as OpenSSH's MaxAuthTries).
      if (ctx.method === "none" && !askedMethods) askedMethods = true;
      else failures++;
      return ctx.reject(["publickey"]);
    }
    // The key must be what the client says it is: an ed25519 key offered as rsa-sha2-256 makes verify()
    // fail with an Error, which is truthy; only `true` is a valid signature.
    const parsed = utils.parseKey(ctx.key.data);
    const pub = Array.isArray(parsed) ? parsed[0] : parsed;
    if (!pub || pub instanceof Error || pub.type !== ctx.key.algo) return fail(ctx);
    void (async () => {
      const auth = await deps.authorizeKey(ctx.key.algo, ctx.key.data).catch(() => null);
      if (!auth) return fail(ctx);
      if (!ctx.signature || !ctx.blob) return ctx.accept(); // the client asks whether this key would do
      if (pub.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return fail(ctx);
      identity.fingerprint = auth.fingerprint;
      identity.keyId = auth.keyId;
      const state = deps.connections.stateOf(client);
      if (state) deps.connections.authenticated(client, state, auth.keyId);
      ctx.accept();
    })().catch((err: Error) => {
      deps.logger.warn({ err: err.message }, "ssh authentication failed");
      fail(ctx);
    });
  });
  return identity;
}
