// The hook protocol (ADR 0002): the pre-receive hook hands its push to Pier over a loopback TCP port with
// the push's one-time token, and reads the deploy log and the outcome back. Plain text lines, so the hook
// can be a few lines of bash (a Node hook costs ~90 ms of start-up per push).
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { maskUrlCredentials } from "../../core/env-secrets.js";

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

export interface MiniLogger {
  info: (o: object, m?: string) => void;
  warn: (o: object, m?: string) => void;
  error: (o: object, m?: string) => void;
}

/** A push received by git-receive-pack whose hook has not called yet: known by its token. */
export interface PendingPush {
  appId: string;
  fingerprint: string;
  repoDir: string;
  controller: AbortController;
  /** The connection it came on: busy while its deploy runs. */
  conn: { deploys: number } | null;
}

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

/** What the hook sent: `PUSH <token> <old> <new> <ref>`, `ENV <name> <value>` lines, `END`. */
export interface HookRequest {
  token: string;
  oldSha: string;
  newSha: string;
  ref: string;
  gitEnv: Record<string, string>;
}

/** The hook's request, or null if it is not one; only git's quarantine variables are taken from ENV lines. */
export function parseHookRequest(text: string): HookRequest | null {
  const lines = text.split("\n");
  const [verb, token, oldSha, newSha, ref] = (lines[0] ?? "").split(" ");
  if (verb !== "PUSH" || !token || !oldSha || !newSha || !ref) return null;
  const gitEnv: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const m = /^ENV (GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES|GIT_QUARANTINE_PATH) (.+)$/.exec(
      l,
    );
    if (m?.[1] && m[2]) gitEnv[m[1]] = m[2];
  }
  return { token, oldSha, newSha, ref, gitEnv };
}

/** The lines Pier writes to the hook: `L <log line>`, and one `R ok|failed <message>` at the end. */
class HookReply {
  constructor(private readonly sock: Socket) {}

  /** Resolves once the socket takes more (the pusher reads), or is gone: log lines never pile up here. */
  readonly log = async (text: string): Promise<void> => {
    const { sock } = this;
    if (sock.destroyed) return;
    let room = true;
    // Deploy log lines come masked with the app's secrets; anything else still gets URLs' credentials masked.
    for (const line of maskUrlCredentials(text).split("\n"))
      room = sock.write(`L ${line.replace(/\r/g, "")}\n`) && room;
    if (!room && !sock.destroyed) await drained(sock);
  };

  /** The hook reads one `R` line: the lines of a longer message go first, as log lines. */
  async result(ok: boolean, message: string): Promise<void> {
    const lines = maskUrlCredentials(message).split("\n");
    const last = lines.pop() ?? "";
    if (lines.length) await this.log(lines.join("\n"));
    if (!this.sock.destroyed) this.sock.write(`R ${ok ? "ok" : "failed"} ${last.replace(/\r/g, "")}\n`);
  }
}

interface HookDeps {
  pending: Map<string, PendingPush>;
  onPush: PushHandler;
  logger: MiniLogger;
}

/** Runs the push the hook named (its deploy), streaming the log back, then the outcome. */
async function handleHookRequest(deps: HookDeps, sock: Socket, text: string): Promise<void> {
  const reply = new HookReply(sock);
  const req = parseHookRequest(text);
  const push = req ? deps.pending.get(req.token) : undefined;
  if (!req || !push) {
    await reply.result(false, "pier: this push is not known to the server (expired token)");
    sock.end();
    return;
  }
  sock.on("close", () => push.controller.abort(new Error("The pusher disconnected.")));
  if (push.conn) push.conn.deploys++;
  try {
    const r = await deps.onPush({
      appId: push.appId,
      keyFingerprint: push.fingerprint,
      ref: req.ref,
      oldSha: req.oldSha,
      newSha: req.newSha,
      gitEnv: req.gitEnv,
      repoDir: push.repoDir,
      log: reply.log,
      signal: push.controller.signal,
    });
    await reply.result(r.ok, r.message);
  } catch (e) {
    deps.logger.error({ err: e }, "push handler failed");
    await reply.result(false, `pier: internal error: ${(e as Error).message}`);
  } finally {
    if (push.conn) push.conn.deploys--;
  }
  sock.end();
}

/** One hook connection: its request is read up to `END` (64 KiB at most, within 30 s), then handled. */
function hookConnection(deps: HookDeps, sock: Socket, live: Set<Socket>): void {
  sock.setNoDelay(true); // each log line reaches the pusher at once
  live.add(sock);
  sock.on("close", () => live.delete(sock));
  let buf = "";
  let received = 0;
  // One streaming decoder: a variable's UTF-8 character split across two chunks stays whole.
  const decoder = new TextDecoder();
  let handled = false;
  sock.on("error", () => undefined);
  sock.setTimeout(30_000, () => {
    if (!handled) sock.destroy();
  });
  sock.on("data", (c: Buffer) => {
    if (handled) return;
    received += c.length;
    if (received > 64 * 1024) return void sock.destroy();
    buf += decoder.decode(c, { stream: true });
    if (!/(^|\n)END\n/.test(buf)) return;
    handled = true;
    void handleHookRequest(deps, sock, buf);
  });
}

/**
 * The hook's side channel: a loopback TCP port where a hook hands over its push (with its one-time token)
 * and reads the deploy log. The hook sends `PUSH <token> <old> <new> <ref>`, `ENV <name> <value>` lines and
 * `END`; Pier answers `L <log line>` lines, then `R ok <message>` or `R failed <message>`. `live` holds the
 * hooks' open connections (cut when Pier stops).
 */
export async function startHookServer(deps: HookDeps, live: Set<Socket>): Promise<NetServer> {
  const server = createServer((sock: Socket) => hookConnection(deps, sock, live));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return server;
}
