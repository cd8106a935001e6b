import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, rm } from "node:fs/promises";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { dirname, join } from "node:path";
import ssh2, { type Connection } from "ssh2";
import { childEnv, exec } from "../adapters/exec.js";
import { ensureBareRepo } from "../adapters/git.js";
import { maskUrlCredentials } from "../core/env.js";
import { listenFailed } from "../core/errors.js";
import { admit, type Unauthenticated } from "../core/ssh-admission.js";

const { Server, utils } = ssh2;

export interface PushRequest {
  appId: string;
  keyFingerprint: string;
  ref: string;
  oldSha: string;
  newSha: string;
  /** GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_QUARANTINE_PATH of the hook. */
  gitEnv: Record<string, string>;
  repoDir: string;
  /** Sends a line of the deploy log to the pusher; resolves when more may be sent (the pusher reads). */
  log(line: string): Promise<void>;
  /** Aborted when the pusher disconnects. */
  signal: AbortSignal;
}

export type PushHandler = (req: PushRequest) => Promise<{ ok: boolean; message: string }>;

interface MiniLogger {
  info: (o: object, m?: string) => void;
  warn: (o: object, m?: string) => void;
  error: (o: object, m?: string) => void;
}

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

/** Keys (or other authentication attempts) a connection may try, as OpenSSH's MaxAuthTries: the next closes it. */
export const MAX_AUTH_TRIES = 6;

/** What Pier knows of one connection before and after it authenticates. */
interface ConnState extends Unauthenticated {
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

const APP_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
const COMMAND =
  /^(git-receive-pack|git-upload-pack|git receive-pack|git upload-pack) '?\/?([^'\s]+?)(?:\.git)?\/?'?$/;
/** The pre-receive hook (bash: its /dev/tcp reaches the hook port without starting a Node process). */
export function hookScript(): string {
  return `#!/bin/bash
# Pier's pre-receive hook: hands the push to pier server, prints the deploy log as it comes (git shows it
# as remote: lines) and exits non-zero unless the deployment succeeded, so git refuses the ref update.
set -u
zero=0000000000000000000000000000000000000000
master=""
while read -r old new ref; do
  if [ "$ref" != "refs/heads/master" ]; then
    echo "Pier deploys the master branch only; '\${ref#refs/heads/}' was not accepted."
    echo "To deploy another branch: git push pier <branch>:master"
    exit 1
  fi
  if [ "$new" = "$zero" ]; then
    echo "Deleting master is not allowed: it holds the deployed commit. Use pier delete to remove the app."
    exit 1
  fi
  master="$old $new $ref"
done
[ -n "$master" ] || exit 0
if [ -z "\${PIER_HOOK_PORT:-}" ] || [ -z "\${PIER_PUSH_TOKEN:-}" ]; then
  echo "Pier: push through pier server's SSH git endpoint; this repository deploys nothing otherwise."
  exit 1
fi
if ! { exec 3<>"/dev/tcp/127.0.0.1/$PIER_HOOK_PORT"; } 2>/dev/null; then
  echo "Pier is not running or not reachable; the push was not deployed."
  exit 1
fi
{
  printf 'PUSH %s %s\\n' "$PIER_PUSH_TOKEN" "$master"
  for name in GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH; do
    [ -n "\${!name:-}" ] && printf 'ENV %s %s\\n' "$name" "\${!name}"
  done
  printf 'END\\n'
} >&3
status=""
while IFS= read -r line <&3; do
  case "$line" in
    "L "*) printf '%s\\n' "\${line#L }" ;;
    "R ok "*) status=0; printf '%s\\n' "\${line#R ok }" ;;
    "R failed "*) status=1; printf '%s\\n' "\${line#R failed }" ;;
  esac
done
if [ -z "$status" ]; then
  echo "Pier closed the connection before the deployment ended."
  exit 1
fi
exit "$status"
`;
}

/** Resolves when the socket drains or closes. */
function drained(sock: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      sock.off("drain", done);
      sock.off("close", done);
      resolve();
    };
    sock.on("drain", done);
    sock.on("close", done);
  });
}

/** "SHA256:<base64 without padding>", as `ssh-keygen -l` prints it. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

interface PendingPush {
  appId: string;
  fingerprint: string;
  repoDir: string;
  controller: AbortController;
  /** The connection it came on: busy while its deploy runs. */
  conn: { deploys: number } | null;
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

/**
 * The hook's side channel: a loopback TCP port where a hook hands over its push (with its one-time token)
 * and reads the deploy log. Plain text lines, so the hook can be a few lines of bash (a Node hook costs
 * ~90 ms of start-up per push): the hook sends `PUSH <token> <old> <new> <ref>`, `ENV <name> <value>`
 * lines and `END`; Pier answers `L <log line>` lines, then `R ok <message>` or `R failed <message>`.
 */
async function startHookServer(
  pending: Map<string, PendingPush>,
  onPush: PushHandler,
  logger: MiniLogger,
  live: Set<Socket>,
): Promise<NetServer> {
  const server = createServer((sock: Socket) => {
    sock.setNoDelay(true); // each log line reaches the pusher at once
    live.add(sock);
    sock.on("close", () => live.delete(sock));
    let buf = "";
    let handled = false;
    /** Resolves once the socket takes more (the pusher reads), or is gone: log lines never pile up here. */
    const sendLog = async (text: string) => {
      if (sock.destroyed) return;
      let room = true;
      // Deploy log lines come masked with the app's secrets; anything else still gets URLs' credentials masked.
      for (const line of maskUrlCredentials(text).split("\n"))
        room = sock.write(`L ${line.replace(/\r/g, "")}\n`) && room;
      if (!room && !sock.destroyed) await drained(sock);
    };
    /** The hook reads one `R` line: the lines of a longer message go first, as log lines. */
    const sendResult = async (ok: boolean, message: string) => {
      const lines = maskUrlCredentials(message).split("\n");
      const last = lines.pop() ?? "";
      if (lines.length) await sendLog(lines.join("\n"));
      if (!sock.destroyed) sock.write(`R ${ok ? "ok" : "failed"} ${last.replace(/\r/g, "")}\n`);
    };
    sock.on("error", () => undefined);
    sock.setTimeout(30_000, () => {
      if (!handled) sock.destroy();
    });
    sock.on("data", (c: Buffer) => {
      if (handled) return;
      buf += c.toString("utf8");
      if (buf.length > 64 * 1024) return void sock.destroy();
      if (!/(^|\n)END\n/.test(buf)) return;
      handled = true;
      void (async () => {
        const lines = buf.split("\n");
        const [verb, token, oldSha, newSha, ref] = (lines[0] ?? "").split(" ");
        const push = verb === "PUSH" && token ? pending.get(token) : undefined;
        if (!push || !oldSha || !newSha || !ref) {
          await sendResult(false, "pier: this push is not known to the server (expired token)");
          sock.end();
          return;
        }
        const gitEnv: Record<string, string> = {};
        for (const l of lines.slice(1)) {
          const m =
            /^ENV (GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES|GIT_QUARANTINE_PATH) (.+)$/.exec(l);
          if (m?.[1] && m[2]) gitEnv[m[1]] = m[2];
        }
        sock.on("close", () => push.controller.abort(new Error("The pusher disconnected.")));
        if (push.conn) push.conn.deploys++;
        try {
          const r = await onPush({
            appId: push.appId,
            keyFingerprint: push.fingerprint,
            ref,
            oldSha,
            newSha,
            gitEnv,
            repoDir: push.repoDir,
            log: sendLog,
            signal: push.controller.signal,
          });
          await sendResult(r.ok, r.message);
        } catch (e) {
          logger.error({ err: e }, "push handler failed");
          await sendResult(false, `pier: internal error: ${(e as Error).message}`);
        } finally {
          if (push.conn) push.conn.deploys--;
        }
        sock.end();
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return server;
}

export async function startGitSshServer(
  opts: GitSshServerOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const key = await hostKey(opts.hostKeyPath);
  await mkdir(opts.runDir, { recursive: true });
  await mkdir(opts.reposDir, { recursive: true });

  const pending = new Map<string, PendingPush>();
  const hookSockets = new Set<Socket>();
  const hookServer = await startHookServer(pending, opts.onPush, opts.logger, hookSockets);
  const hookAddress = hookServer.address();
  const hookPort = typeof hookAddress === "object" && hookAddress ? hookAddress.port : 0;
  const children = new Set<ChildProcess>();

  const clients = new Set<Connection>();
  const states = new WeakMap<Socket, ConnState>();
  // ssh2 keeps the socket a connection came on; Pier's limits are kept per socket (a connection that never
  // sends its SSH version never becomes a Connection at all).
  const stateOf = (client: Connection) => {
    const sock = (client as unknown as { _sock?: Socket })._sock;
    return sock ? states.get(sock) : undefined;
  };
  // Pier's limits on connections (ADR 0009, ADR 0020), kept per socket.
  const sockets = new Set<Socket>();
  const authTimeoutMs = opts.authTimeoutMs ?? 30_000;
  const maxUnauthenticated = opts.maxUnauthenticated ?? 32;
  const maxPerSource = opts.maxUnauthenticatedPerSource ?? 8;
  const idleMs = opts.idleTimeoutMs ?? 600_000;
  const maxPerKey = opts.maxConnectionsPerKey ?? 16;
  /** Whether two connections came on the same listener (the port has addresses, the socket none). */
  const sameListener = (a: ConnState, b: { source: string | null }) =>
    (a.source === null) === (b.source === null);
  /**
   * The state of a new connection if it gets an unauthenticated slot (core/ssh-admission.ts): the SSH port
   * and the builds' socket each have `maxUnauthenticated`; on the port, one address takes at most
   * `maxPerSource`, and a full port gives a newcomer the slot of the largest holder's oldest connection.
   */
  const admitted = (sock: Socket): ConnState | null => {
    const source = sock.remoteAddress ?? null;
    const held: ConnState[] = [];
    for (const s of sockets) {
      const st = states.get(s);
      if (st && !st.authenticated && sameListener(st, { source })) held.push(st);
    }
    const verdict = admit(held, source, { max: maxUnauthenticated, perSource: maxPerSource });
    if (!verdict.accept) {
      const refused =
        verdict.why === "per-source" ? { perSource: maxPerSource, source } : { limit: maxUnauthenticated };
      opts.logger.warn(refused, "ssh connection refused: too many unauthenticated");
      return null;
    }
    const evicted = verdict.evict as ConnState | null;
    if (evicted) {
      opts.logger.warn(
        { source: evicted.source, for: source },
        "ssh connection closed: its slot went to another address",
      );
      evicted.sock.destroy();
    }
    const openedAt = Date.now();
    return {
      sock,
      source,
      openedAt,
      authenticated: false,
      timer: null,
      keyId: null,
      overCap: false,
      deploys: 0,
      waiting: 0,
      idle: null,
    };
  };
  /**
   * A connection that authenticated: past its key's cap it is marked (its command is refused with a
   * message); otherwise it is watched for idleness: no byte either way for `idleMs`, and no deploy of its
   * pushes under way, closes it.
   */
  const authenticated = (client: Connection, state: ConnState, keyId: string) => {
    state.authenticated = true;
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    let same = 0;
    for (const s of sockets) {
      const st = states.get(s);
      if (st?.authenticated && !st.overCap && st.keyId === keyId && sameListener(st, state)) same++;
    }
    state.keyId = keyId;
    if (same >= maxPerKey) {
      state.overCap = true;
      opts.logger.warn({ keyId, limit: maxPerKey }, "ssh connection refused: too many for one key");
      state.timer = setTimeout(() => state.sock.destroy(), 10_000);
      return;
    }
    let seen = -1;
    let quietSince = Date.now();
    state.idle = setInterval(
      () => {
        const bytes = state.sock.bytesRead + state.sock.bytesWritten;
        if (bytes !== seen || state.deploys > 0 || state.waiting > 0) {
          seen = bytes;
          quietSince = Date.now();
        } else if (Date.now() - quietSince >= idleMs) {
          opts.logger.info({ keyId, after: idleMs / 1000 }, "ssh connection closed: idle");
          if (state.idle) clearInterval(state.idle);
          client.end();
          setTimeout(() => state.sock.destroy(), 1000).unref();
        }
      },
      Math.max(50, Math.min(idleMs / 8, 15_000)),
    );
  };
  const server = new Server({ hostKeys: [key], ident: "Pier" }, (client) => {
    let fingerprint: string | null = null;
    let keyId: string | null = null;
    let failures = 0;
    let askedMethods = false;
    clients.add(client);
    client.on("close", () => clients.delete(client));
    client.on("error", (err) => opts.logger.warn({ err: err.message }, "ssh client error"));
    client.on("authentication", (ctx) => {
      if (failures >= MAX_AUTH_TRIES) {
        opts.logger.info({ tries: failures }, "ssh connection closed: too many authentication attempts");
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
      const rejectKey = () => {
        failures++;
        ctx.reject(["publickey"]);
      };
      // The key must be what the client says it is: an ed25519 key offered as rsa-sha2-256 makes verify()
      // fail with an Error, which is truthy; only `true` is a valid signature.
      const parsed = utils.parseKey(ctx.key.data);
      const pub = Array.isArray(parsed) ? parsed[0] : parsed;
      if (!pub || pub instanceof Error || pub.type !== ctx.key.algo) return rejectKey();
      void (async () => {
        const auth = await opts.authorizeKey(ctx.key.algo, ctx.key.data).catch(() => null);
        if (!auth) return rejectKey();
        if (!ctx.signature || !ctx.blob) return ctx.accept(); // the client asks whether this key would do
        if (pub.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return rejectKey();
        fingerprint = auth.fingerprint;
        keyId = auth.keyId;
        const state = stateOf(client);
        if (state) authenticated(client, state, auth.keyId);
        ctx.accept();
      })().catch((err: Error) => {
        opts.logger.warn({ err: err.message }, "ssh authentication failed");
        rejectKey();
      });
    });
    client.on("ready", () => {
      client.on("session", (acceptSession) => {
        const session = acceptSession();
        const refuse = (what: string) => (_accept: unknown, reject?: () => void) => {
          opts.logger.info({ what }, "refused ssh request");
          reject?.();
        };
        session.on("pty", refuse("pty"));
        session.on("shell", refuse("shell") as never);
        session.on("sftp", refuse("sftp") as never);
        session.on("subsystem", refuse("subsystem") as never);
        session.on("env", (accept) => accept?.());
        session.on("exec", (accept, _reject, info) => {
          const channel = accept();
          const fail = (message: string) => {
            channel.stderr.write(`${maskUrlCredentials(message)}\n`);
            channel.exit(1);
            channel.end();
          };
          const state = stateOf(client);
          if (state?.overCap) {
            fail(
              `pier: this key has ${maxPerKey} SSH connections open already, the most one key may have (PIER_SSH_MAX_CONNECTIONS_PER_KEY). Wait for one to end (a push ends with its deploy), or close idle ones.`,
            );
            return void setTimeout(() => client.end(), 100);
          }
          const m = COMMAND.exec(info.command.trim());
          if (!m) return fail("pier: only `git push` and `git fetch` are served over SSH.");
          const receive = m[1]?.includes("receive") ?? false;
          const ref = m[2] ?? "";
          if (!APP_ID.test(ref)) return fail(`pier: '${ref}' is not an app id (see \`pier apps\`).`);
          void (async () => {
            const refusal = keyId
              ? await opts.authorizeRepo(keyId, ref, receive ? "push" : "fetch")
              : "pier: not authenticated.";
            if (refusal) return fail(refusal);
            // An app's name and its id lead to its one repository.
            const appId = await opts.resolveApp(ref);
            if (!appId) {
              return fail(`pier: app '${ref}' not found. Create it with \`pier create\`; see \`pier apps\`.`);
            }
            const repoDir = join(opts.reposDir, `${appId}.git`);
            const env = childEnv();
            let token: string | null = null;
            if (receive) {
              opts.onPushStart?.(appId);
              await ensureBareRepo(repoDir, hookScript(), opts.maxPushBytes);
              token = randomBytes(24).toString("hex");
              pending.set(token, {
                appId,
                fingerprint: fingerprint ?? "unknown",
                repoDir,
                controller: new AbortController(),
                conn: state ?? null,
              });
              env.PIER_HOOK_PORT = String(hookPort);
              env.PIER_PUSH_TOKEN = token;
            } else if (!existsSync(join(repoDir, "HEAD"))) {
              return fail(`pier: app '${appId}' has never been pushed.`);
            }
            const child = spawn(receive ? "git-receive-pack" : "git-upload-pack", [repoDir], {
              env,
              stdio: ["pipe", "pipe", "pipe"],
            });
            children.add(child);
            let received = 0;
            let tooLarge = false;
            let paused = false;
            const resume = () => {
              if (!paused) return;
              paused = false;
              if (state) state.waiting--;
              channel.resume();
            };
            channel.on("data", (c: Buffer) => {
              if (tooLarge) return; // the client keeps sending until it reads the exit
              received += c.length;
              if (received > opts.maxPushBytes) {
                tooLarge = true;
                channel.stderr.write(
                  `pier: the push is larger than the limit of ${opts.maxPushBytes} bytes (PIER_MAX_PUSH_BYTES).\n`,
                );
                child.kill("SIGKILL");
                return;
              }
              // While git has not taken what it was given, the channel is paused: ssh2 then stops opening
              // the SSH window, and the client stops sending. A big push never piles up in the server.
              if (!child.stdin.write(c) && !paused) {
                paused = true;
                if (state) state.waiting++; // not idle: the client waits for git
                channel.pause();
                child.stdin.once("drain", resume);
              }
            });
            child.stdin.on("close", resume);
            channel.on("end", () => child.stdin.end());
            child.stdin.on("error", () => undefined);
            child.stdout.pipe(channel, { end: false });
            child.stderr.pipe(channel.stderr, { end: false });
            channel.on("close", () => {
              if (child.exitCode === null) child.kill("SIGTERM");
              if (token) pending.get(token)?.controller.abort(new Error("The pusher disconnected."));
            });
            child.on("close", (code) => {
              children.delete(child);
              if (token) pending.delete(token);
              channel.exit(code ?? 1);
              channel.end();
            });
          })().catch((e: Error) => fail(`pier: ${e.message}`));
        });
      });
    });
  });

  // Pier's own listener hands sockets to ssh2, so that close() can end connections that never go away
  // (net.Server.close waits for every one of them: `pier server` would not stop on SIGTERM).
  const accept = (sock: Socket) => {
    sock.on("error", () => undefined);
    const state = admitted(sock);
    if (!state) return void sock.destroy();
    state.timer = setTimeout(() => {
      if (state.authenticated) return;
      opts.logger.info({ after: authTimeoutMs / 1000 }, "ssh connection closed: not authenticated in time");
      sock.destroy();
    }, authTimeoutMs);
    states.set(sock, state);
    sock.on("close", () => {
      if (state.timer) clearTimeout(state.timer);
      if (state.idle) clearInterval(state.idle);
    });
    // ssh2 writes a reply in several small writes: with Nagle's algorithm each exchange waits for the
    // client's delayed ACK (40 ms), three times per connection (key exchange, auth, command).
    if (sock.remoteFamily) sock.setNoDelay(true);
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    server.injectSocket(sock);
  };
  const listener = createServer(accept);
  await new Promise<void>((resolve, reject) => {
    listener.once("error", (e) => reject(listenFailed(e, "PIER_SSH_PORT", opts.host, opts.port)));
    listener.listen(opts.port, opts.host, () => resolve());
  });
  let unixListener: NetServer | null = null;
  if (opts.socketPath) {
    const path = opts.socketPath;
    await rm(path, { force: true }); // left by a server that was killed
    unixListener = createServer(accept);
    await new Promise<void>((resolve, reject) => {
      unixListener?.once("error", reject);
      unixListener?.listen(path, () => resolve());
    });
    await chmod(path, 0o600);
  }
  const address = listener.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  opts.logger.info({ port }, "git over SSH listening");

  return {
    port,
    close: async () => {
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      const unixClosed = new Promise<void>((resolve) =>
        unixListener ? unixListener.close(() => resolve()) : resolve(),
      );
      const hookClosed = new Promise<void>((resolve) => hookServer.close(() => resolve()));
      // As when the pushers disconnect: their deploys are cancelled and nothing is accepted.
      for (const p of pending.values()) p.controller.abort(new Error("Pier is stopping."));
      for (const c of children) c.kill("SIGTERM");
      for (const s of hookSockets) s.destroy();
      for (const c of clients) c.end();
      // Connections that do not end when asked (say, one that never finished its handshake) are cut.
      const cut = setTimeout(() => {
        for (const s of sockets) s.destroy();
      }, 2000);
      await closed;
      await unixClosed;
      await hookClosed;
      clearTimeout(cut);
    },
  };
}
