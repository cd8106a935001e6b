// Receive-pack (and upload-pack): an authenticated connection's one command, `git push` or `git fetch` of
// an app's repository, run by git itself with the push's token for its hook; the channel is paused while
// git has not taken what it was sent (backpressure), and git's output and exit go back to the client.
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Connection, ServerChannel } from "ssh2";
import { childEnv } from "../../adapters/exec.js";
import { ensureBareRepo } from "../../adapters/git.js";
import { maskUrlCredentials } from "../../core/env-secrets.js";
import type { ConnState, Identity, SshConnections } from "./auth.js";
import { hookScript, type MiniLogger, type PendingPush } from "./hook.js";

const APP_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
const COMMAND =
  /^(git-receive-pack|git-upload-pack|git receive-pack|git upload-pack) '?\/?([^'\s]+?)(?:\.git)?\/?'?$/;

/** A git command as a client sends it: push (receive-pack) or fetch (upload-pack) of an app id or name. */
export function parseGitCommand(command: string): { receive: boolean; ref: string } | string {
  const m = COMMAND.exec(command.trim());
  if (!m) return "pier: only `git push` and `git fetch` are served over SSH.";
  const ref = m[2] ?? "";
  if (!APP_ID.test(ref)) return `pier: '${ref}' is not an app id (see \`pier apps\`).`;
  return { receive: m[1]?.includes("receive") ?? false, ref };
}

export interface ReceivePackDeps {
  connections: SshConnections;
  /** Pushes whose hook has not called yet, by token (the hook protocol's). */
  pending: Map<string, PendingPush>;
  /** The hook server's loopback port, given to the hook. */
  hookPort: number;
  /** git processes running, stopped when Pier stops. */
  children: Set<ChildProcess>;
  reposDir: string;
  maxPushBytes: number;
  maxPerKey: number;
  authorizeRepo(keyId: string, appId: string, op: "fetch" | "push"): Promise<string | null>;
  resolveApp(ref: string): Promise<string | null>;
  onPushStart?: (appId: string) => void;
  logger: MiniLogger;
}

/** The client's sessions: no shell, pty or sftp; one `exec` of git each. */
export function serveSessions(client: Connection, identity: Identity, deps: ReceivePackDeps): void {
  client.on("session", (acceptSession) => {
    const session = acceptSession();
    const refuse = (what: string) => (_accept: unknown, reject?: () => void) => {
      deps.logger.info({ what }, "refused ssh request");
      reject?.();
    };
    session.on("pty", refuse("pty"));
    session.on("shell", refuse("shell") as never);
    session.on("sftp", refuse("sftp") as never);
    session.on("subsystem", refuse("subsystem") as never);
    session.on("env", (accept) => accept?.());
    session.on("exec", (accept, _reject, info) => {
      const channel = accept();
      const fail = failer(channel);
      const state = deps.connections.stateOf(client);
      if (state?.overCap) {
        fail(
          `pier: this key has ${deps.maxPerKey} SSH connections open already, the most one key may have (PIER_SSH_MAX_CONNECTIONS_PER_KEY). Wait for one to end (a push ends with its deploy), or close idle ones.`,
        );
        return void setTimeout(() => client.end(), 100);
      }
      const command = parseGitCommand(info.command);
      if (typeof command === "string") return fail(command);
      void runGit(deps, channel, identity, state, command).catch((e: Error) => fail(`pier: ${e.message}`));
    });
  });
}

/** Ends the channel with a message on stderr and exit code 1. */
const failer = (channel: ServerChannel) => (message: string) => {
  channel.stderr.write(`${maskUrlCredentials(message)}\n`);
  channel.exit(1);
  channel.end();
};

/**
 * The key may reach the repository (authorizeRepo), the app exists (by id or name); a push gets its bare
 * repository with Pier's hook and a one-time token for it, then git runs.
 */
async function runGit(
  deps: ReceivePackDeps,
  channel: ServerChannel,
  identity: Identity,
  state: ConnState | undefined,
  command: { receive: boolean; ref: string },
): Promise<void> {
  const fail = failer(channel);
  const { receive, ref } = command;
  const refusal = identity.keyId
    ? await deps.authorizeRepo(identity.keyId, ref, receive ? "push" : "fetch")
    : "pier: not authenticated.";
  if (refusal) return fail(refusal);
  // An app's name and its id lead to its one repository.
  const appId = await deps.resolveApp(ref);
  if (!appId) return fail(`pier: app '${ref}' not found. Create it with \`pier create\`; see \`pier apps\`.`);
  const repoDir = join(deps.reposDir, `${appId}.git`);
  const env = childEnv();
  let token: string | null = null;
  if (receive) {
    deps.onPushStart?.(appId);
    await ensureBareRepo(repoDir, hookScript(), deps.maxPushBytes);
    token = randomBytes(24).toString("hex");
    deps.pending.set(token, {
      appId,
      fingerprint: identity.fingerprint ?? "unknown",
      repoDir,
      controller: new AbortController(),
      conn: state ?? null,
    });
    env.PIER_HOOK_PORT = String(deps.hookPort);
    env.PIER_PUSH_TOKEN = token;
  } else if (!existsSync(join(repoDir, "HEAD"))) {
    return fail(`pier: app '${appId}' has never been pushed.`);
  }
  const child = spawn(receive ? "git-receive-pack" : "git-upload-pack", [repoDir], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  pipeGit(deps, channel, child, state, token);
}

/**
 * The channel into git's stdin, at git's pace and within the push limit; git's stdout and stderr back to
 * the client; a closed channel stops git and cancels the push's deploy; git's exit ends the channel.
 */
function pipeGit(
  deps: ReceivePackDeps,
  channel: ServerChannel,
  child: ChildProcessWithoutNullStreams,
  state: ConnState | undefined,
  token: string | null,
): void {
  deps.children.add(child);
  feedGit(deps.maxPushBytes, channel, child, state);
  child.stdout.pipe(channel, { end: false });
  child.stderr.pipe(channel.stderr, { end: false });
  channel.on("close", () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    if (token) deps.pending.get(token)?.controller.abort(new Error("The pusher disconnected."));
  });
  child.on("close", (code) => {
    deps.children.delete(child);
    if (token) deps.pending.delete(token);
    channel.exit(code ?? 1);
    channel.end();
  });
}

/**
 * What the client sends goes to git's stdin. While git has not taken what it was given, the channel is
 * paused: ssh2 then stops opening the SSH window, and the client stops sending. A big push never piles up
 * in the server; one past `maxPushBytes` kills git.
 */
function feedGit(
  maxPushBytes: number,
  channel: ServerChannel,
  child: ChildProcessWithoutNullStreams,
  state: ConnState | undefined,
): void {
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
    if (received > maxPushBytes) {
      tooLarge = true;
      channel.stderr.write(
        `pier: the push is larger than the limit of ${maxPushBytes} bytes (PIER_MAX_PUSH_BYTES).\n`,
      );
      child.kill("SIGKILL");
      return;
    }
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
}
