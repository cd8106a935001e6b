import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ExecError, exec } from "./exec.js";

const SHA = /^[0-9a-f]{40}$/;
const REV = /^(refs\/heads\/[A-Za-z0-9._/-]+|HEAD|[0-9a-f]{40})$/;

function envWith(gitEnv?: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...(gitEnv ?? {}) };
}

export interface BareRepoOptions {
  /** receive.maxInputSize: git-receive-pack refuses a pack larger than this. */
  maxInputBytes?: number;
}

/** One ensureBareRepo at a time per repository: two first pushes must not race on `git config`'s lock. */
const ensuring = new Map<string, Promise<void>>();

/**
 * Creates the app's bare repository if needed (HEAD -> master), sets its receive.* settings and writes
 * its pre-receive hook. Idempotent, and cheap when nothing changed: the config is read once and only
 * differing values are written; the hook is replaced by a rename, never rewritten in place, so a push
 * running the hook at that moment never sees a truncated file (git runs an empty hook with sh: exit 0).
 */
export function ensureBareRepo(repoDir: string, hookScript: string, opts: BareRepoOptions = {}): Promise<void> {
  const previous = ensuring.get(repoDir) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(() => ensureNow(repoDir, hookScript, opts));
  ensuring.set(repoDir, run);
  const forget = () => {
    if (ensuring.get(repoDir) === run) ensuring.delete(repoDir);
  };
  run.then(forget, forget);
  return run;
}

async function ensureNow(repoDir: string, hookScript: string, opts: BareRepoOptions): Promise<void> {
  if (!existsSync(join(repoDir, "HEAD"))) {
    await mkdir(repoDir, { recursive: true });
    await exec(["git", "init", "--quiet", "--bare", repoDir]);
    await exec(["git", "-C", repoDir, "symbolic-ref", "HEAD", "refs/heads/master"]);
  }
  const wanted: Record<string, string> = {
    "receive.fsckobjects": "true",
    "receive.denydeletes": "true",
    ...(opts.maxInputBytes !== undefined ? { "receive.maxinputsize": String(opts.maxInputBytes) } : {}),
  };
  const current = new Map<string, string>();
  const list = await exec(["git", "-C", repoDir, "config", "--local", "--list"]);
  for (const line of list.stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) current.set(line.slice(0, eq).toLowerCase(), line.slice(eq + 1));
  }
  for (const [name, value] of Object.entries(wanted)) {
    if (current.get(name) !== value) await exec(["git", "-C", repoDir, "config", name, value]);
  }

  const hooks = join(repoDir, "hooks");
  const hook = join(hooks, "pre-receive");
  const existing = await readFile(hook, "utf8").catch(() => null);
  if (existing === hookScript) return;
  await mkdir(hooks, { recursive: true });
  const tmp = join(hooks, `.pre-receive.${randomBytes(6).toString("hex")}`);
  await writeFile(tmp, hookScript, { mode: 0o755 });
  await chmod(tmp, 0o755);
  await rename(tmp, hook);
}

export async function removeRepo(repoDir: string): Promise<void> {
  await rm(repoDir, { recursive: true, force: true });
}

/** The commit a revision names, or null if it does not exist. */
export async function revParse(
  repoDir: string,
  rev: string,
  gitEnv?: Record<string, string>,
): Promise<string | null> {
  if (!REV.test(rev)) throw new Error(`revParse: refusing revision '${rev}'`);
  if (!existsSync(repoDir)) return null;
  try {
    const r = await exec(["git", "-C", repoDir, "rev-parse", "--verify", "--quiet", `${rev}^{commit}`], {
      env: envWith(gitEnv),
    });
    return r.stdout.trim() || null;
  } catch (e) {
    if (e instanceof ExecError) return null;
    throw e;
  }
}

/**
 * Writes the files of a commit into destDir (which must exist): `git archive | tar -x`, two processes
 * piped here, never through a shell. With the hook's gitEnv it reads objects still in git's quarantine.
 * Note that `git archive` honours the commit's own `.gitattributes` (export-ignore, export-subst).
 */
export function archiveCommit(
  repoDir: string,
  sha: string,
  destDir: string,
  gitEnv?: Record<string, string>,
): Promise<void> {
  if (!SHA.test(sha)) return Promise.reject(new Error(`archiveCommit: '${sha}' is not a commit id`));
  const gitArgv = ["git", "-C", repoDir, "archive", "--format=tar", sha];
  const tarArgv = ["tar", "-x", "-C", destDir, "--no-same-owner"];
  return new Promise((resolve, reject) => {
    const git = spawn(gitArgv[0]!, gitArgv.slice(1), {
      env: envWith(gitEnv),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const tar = spawn(tarArgv[0]!, tarArgv.slice(1), { stdio: ["pipe", "ignore", "pipe"] });
    git.stdout.pipe(tar.stdin);
    // tar may exit first (bad archive): git then gets EPIPE, which its exit code reports.
    tar.stdin.on("error", () => undefined);
    let gitErr = "";
    let tarErr = "";
    git.stderr.on("data", (c: Buffer) => {
      gitErr += c.toString();
    });
    tar.stderr.on("data", (c: Buffer) => {
      tarErr += c.toString();
    });
    let settled = false;
    const fail = (e: Error) => {
      if (settled) return;
      settled = true;
      git.kill();
      tar.kill();
      reject(e);
    };
    git.on("error", fail);
    tar.on("error", fail);
    // Both must have ended, and both must have succeeded: tar alone exits 0 on a truncated stream.
    const codes: { git?: number | null; tar?: number | null } = {};
    const done = () => {
      if (settled || !("git" in codes) || !("tar" in codes)) return;
      settled = true;
      if (codes.git !== 0) reject(new ExecError(gitArgv, codes.git ?? null, gitErr));
      else if (codes.tar !== 0) reject(new ExecError(tarArgv, codes.tar ?? null, tarErr));
      else resolve();
    };
    git.on("close", (code) => {
      codes.git = code;
      done();
    });
    tar.on("close", (code) => {
      codes.tar = code;
      done();
    });
  });
}

export async function commitInfo(
  repoDir: string,
  sha: string,
  gitEnv?: Record<string, string>,
): Promise<{ sha: string; subject: string; author: string }> {
  if (!SHA.test(sha)) throw new Error(`commitInfo: '${sha}' is not a commit id`);
  const r = await exec(["git", "-C", repoDir, "log", "-1", "--format=%s%x00%an <%ae>", sha, "--"], {
    env: envWith(gitEnv),
  });
  const [subject = "", author = ""] = r.stdout.trim().split("\0");
  return { sha, subject, author };
}
