// Git over SSH, assembled from its three parts: authentication (ssh/auth.ts), the hook protocol
// (ssh/hook.ts) and receive-pack (ssh/receive-pack.ts). This file holds the host key and the listeners.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, rm } from "node:fs/promises";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { dirname } from "node:path";
import ssh2, { type Connection } from "ssh2";
import { exec } from "../adapters/exec.js";
import { listenFailed } from "../core/errors.js";
import { authenticate, type ConnectionLimits, SshConnections } from "./ssh/auth.js";
import { type MiniLogger, type PendingPush, type PushHandler, startHookServer } from "./ssh/hook.js";
import { serveSessions } from "./ssh/receive-pack.js";

export { MAX_AUTH_TRIES } from "./ssh/auth.js";
export { hookScript, type PushHandler, type PushRequest } from "./ssh/hook.js";
export { fingerprintOf } from "./ssh-keys.js";

const { Server, utils } = ssh2;

export interface GitSshServerOptions {
  host: string;
  port: number;
  /** Created (ed25519, 0600) if absent. */
  hostKeyPath: string;
  /** A unix socket served too: builds reach the server through it (mounted into build containers). */
  socketPath?: string;
  /** The repository of app X is <reposDir>/<X>.git. */
  reposDir: string;
  /** For the hook's unix socket. */
  runDir: string;
  /** The registered key, or null. What it may reach is authorizeRepo's to say. */
  authorizeKey(algo: string, blob: Buffer): Promise<{ fingerprint: string; keyId: string } | null>;
  /**
   * Whether the key may fetch from (git-upload-pack) or push to (git-receive-pack) this app's repository:
   * null if it may, else the message the client sees. Also says when the app does not exist.
   */
  authorizeRepo(keyId: string, appId: string, op: "fetch" | "push"): Promise<string | null>;
  /** The id of the app with this id or name, or null: both lead to the app's one repository. */
  resolveApp(ref: string): Promise<string | null>;
  onPush: PushHandler;
  /** A push to this app begins (before its pack is received): its build may get ready meanwhile. */
  onPushStart?: (appId: string) => void;
  maxPushBytes: number;
  /** A connection not authenticated by then is closed (PIER_SSH_AUTH_TIMEOUT; 30 s by default). */
  authTimeoutMs?: number;
  /**
   * Connections not yet authenticated, at most (PIER_SSH_MAX_UNAUTHENTICATED; 32), on the port and on the
   * socket each: more are closed at once.
   */
  maxUnauthenticated?: number;
  /**
   * Of those on the SSH port, from one remote address at most (PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE; 8),
   * so one client cannot take every slot and keep everyone else from pushing. The builds' unix socket has
   * its own maxUnauthenticated slots.
   */
  maxUnauthenticatedPerSource?: number;
  /**
   * An authenticated connection with no traffic for this long, and no deploy under way, is closed
   * (PIER_SSH_IDLE_TIMEOUT; 10 minutes).
   */
  idleTimeoutMs?: number;
  /** Authenticated connections of one key, at most, on the port and on the socket each (PIER_SSH_MAX_CONNECTIONS_PER_KEY; 16). */
  maxConnectionsPerKey?: number;
  logger: MiniLogger;
}

/** The public half of a host key, as a known_hosts entry takes it: `ssh-ed25519 AAAA...`. */
export function hostPublicKey(key: Buffer): string {
  const parsed = utils.parseKey(key);
  const k = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!k || k instanceof Error) throw new Error("The SSH host key cannot be parsed.");
  return `${k.type} ${k.getPublicSSH().toString("base64")}`;
}

/**
 * The server's host key, made once with ssh-keygen. (ssh2's own generator now and then writes an ed25519
 * key that ssh2 then refuses to parse: seen as "Malformed OpenSSH private key" at start-up.) A key that
 * does not parse is made again.
 */
export async function hostKey(path: string): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    if (existsSync(path)) {
      const key = readFileSync(path);
      if (!(utils.parseKey(key) instanceof Error)) {
        await chmod(path, 0o600);
        return key;
      }
      await rm(path, { force: true });
      await rm(`${path}.pub`, { force: true });
    }
    await exec(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pier-host-key", "-f", path]);
    await chmod(`${path}.pub`, 0o600).catch(() => undefined);
  }
  throw new Error(`Could not make a usable SSH host key at ${path}.`);
}

/** Pier's own listener on `listen` (a port, or a unix socket's path), handing sockets to `accept`. */
async function listenOn(
  accept: (sock: Socket) => void,
  listen: (server: NetServer) => Promise<void>,
): Promise<NetServer> {
  const server = createServer(accept);
  await listen(server);
  return server;
}

/** The settings' limits on connections, with their defaults (ADR 0009, ADR 0020). */
function connectionLimits(opts: GitSshServerOptions): ConnectionLimits {
  return {
    authTimeoutMs: opts.authTimeoutMs ?? 30_000,
    maxUnauthenticated: opts.maxUnauthenticated ?? 32,
    maxPerSource: opts.maxUnauthenticatedPerSource ?? 8,
    idleMs: opts.idleTimeoutMs ?? 600_000,
    maxPerKey: opts.maxConnectionsPerKey ?? 16,
  };
}

/** The SSH server: one ssh2 server over Pier's listeners, each connection authenticated, then served git. */
export async function startGitSshServer(
  opts: GitSshServerOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const key = await hostKey(opts.hostKeyPath);
  await mkdir(opts.runDir, { recursive: true });
  await mkdir(opts.reposDir, { recursive: true });

  const pending = new Map<string, PendingPush>();
  const hookSockets = new Set<Socket>();
  const hookServer = await startHookServer(
    { pending, onPush: opts.onPush, logger: opts.logger },
    hookSockets,
  );
  const hookAddress = hookServer.address();
  const hookPort = typeof hookAddress === "object" && hookAddress ? hookAddress.port : 0;
  const children = new Set<ChildProcess>();
  const clients = new Set<Connection>();
  const limits = connectionLimits(opts);
  const connections = new SshConnections(limits, opts.logger);
  const receivePack = { ...opts, connections, pending, hookPort, children, maxPerKey: limits.maxPerKey };
  const server = new Server({ hostKeys: [key], ident: "Pier" }, (client) => {
    clients.add(client);
    client.on("close", () => clients.delete(client));
    client.on("error", (err) => opts.logger.warn({ err: err.message }, "ssh client error"));
    const identity = authenticate(client, {
      connections,
      authorizeKey: opts.authorizeKey,
      logger: opts.logger,
    });
    client.on("ready", () => serveSessions(client, identity, receivePack));
  });

  // Pier's own listener hands sockets to ssh2, so that close() can end connections that never go away
  // (net.Server.close waits for every one of them: `pier server` would not stop on SIGTERM).
  const accept = (sock: Socket) => {
    sock.on("error", () => undefined);
    if (!connections.accept(sock)) return void sock.destroy();
    // ssh2 writes a reply in several small writes: with Nagle's algorithm each exchange waits for the
    // client's delayed ACK (40 ms), three times per connection (key exchange, auth, command).
    if (sock.remoteFamily) sock.setNoDelay(true);
    server.injectSocket(sock);
  };
  const listener = await listenOn(
    accept,
    (l) =>
      new Promise<void>((resolve, reject) => {
        l.once("error", (e) => reject(listenFailed(e, "PIER_SSH_PORT", opts.host, opts.port)));
        l.listen(opts.port, opts.host, () => resolve());
      }),
  );
  const unixListener = opts.socketPath ? await listenOnSocket(accept, opts.socketPath) : null;
  const address = listener.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  opts.logger.info({ port }, "git over SSH listening");

  return {
    port,
    close: async () => {
      const closed = [listener, unixListener, hookServer].map(
        (l) => new Promise<void>((resolve) => (l ? l.close(() => resolve()) : resolve())),
      );
      // As when the pushers disconnect: their deploys are cancelled and nothing is accepted.
      for (const p of pending.values()) p.controller.abort(new Error("Pier is stopping."));
      for (const c of children) c.kill("SIGTERM");
      for (const s of hookSockets) s.destroy();
      for (const c of clients) c.end();
      // Connections that do not end when asked (say, one that never finished its handshake) are cut.
      const cut = setTimeout(() => connections.destroyAll(), 2000);
      await Promise.all(closed);
      clearTimeout(cut);
    },
  };
}

/** The builds' unix socket (0600), in place of one a killed server left. */
async function listenOnSocket(accept: (sock: Socket) => void, path: string): Promise<NetServer> {
  await rm(path, { force: true }); // left by a server that was killed
  const server = await listenOn(
    accept,
    (l) =>
      new Promise<void>((resolve, reject) => {
        l.once("error", reject);
        l.listen(path, () => resolve());
      }),
  );
  await chmod(path, 0o600);
  return server;
}
