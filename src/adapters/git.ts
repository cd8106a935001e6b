import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { appendFile, chmod, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { childEnv, ExecError, exec } from "./exec.js";

const SHA = /^[0-9a-f]{40}$/;
const REV = /^(refs\/heads\/[A-Za-z0-9._/-]+|HEAD|[0-9a-f]{40})$/;

/** What git needs beyond childEnv's: the quarantine of a push being received. */
const envWith = (gitEnv?: Record<string, string>): Record<string, string> => gitEnv ?? {};

/** One ensureBareRepo at a time per repository: `git config` takes a lock and fails at once if it is held. */
const ensuring = new Map<string, Promise<void>>();

/**
 * Creates the app's bare repository if needed (HEAD -> master), sets its receive.* settings and writes its
 * pre-receive hook. Idempotent and cheap when nothing changed: it runs on every push, so the config is read
 * once and only values that differ are written, and the hook is replaced by a rename, never rewritten in
 * place (a push running the hook meanwhile would find it truncated, and git runs an empty hook with sh:
 * exit 0, a push accepted with no deploy).
 */
export function ensureBareRepo(repoDir: string, hookScript: string, maxInputBytes: number): Promise<void> {
  const run = (ensuring.get(repoDir) ?? Promise.resolve())
    .catch(() => undefined)
    .then(() => ensureNow(repoDir, hookScript, maxInputBytes));
  ensuring.set(repoDir, run);
  const forget = () => {
    if (ensuring.get(repoDir) === run) ensuring.delete(repoDir);
  };
  run.then(forget, forget);
  return run;
}

/** core.sharedRepository: the exact mode of the repository's files (directories get the x bits too). */
const PRIVATE_REPOSITORY = "0600";

async function ensureNow(repoDir: string, hookScript: string, maxInputBytes: number): Promise<void> {
  const wanted: Record<string, string> = {
    "receive.fsckobjects": "true",
    "receive.maxinputsize": String(maxInputBytes),
    "receive.denydeletes": "true",
  };
  // Every file git writes in the repository is 0600 and every directory 0700, whatever the umask: a
  // tenant's code is readable by Pier's user only (ADR 0024).
  const shared = { "core.sharedrepository": PRIVATE_REPOSITORY };
  if (!existsSync(join(repoDir, "HEAD"))) {
    // A new repository: one git process (the first push waits for it), its receive section appended.
    await mkdir(repoDir, { recursive: true, mode: 0o700 });
    await exec([
      "git",
      "init",
      "--quiet",
      "--bare",
      `--shared=${PRIVATE_REPOSITORY}`,
      "--initial-branch=master",
      repoDir,
    ]);
    const section = Object.entries(wanted).map(([k, v]) => `\t${k.slice("receive.".length)} = ${v}\n`);
    await appendFile(join(repoDir, "config"), `[receive]\n${section.join("")}`);
  } else {
    const current = new Map<string, string>();
    const list = await exec(["git", "-C", repoDir, "config", "--local", "--list"]);
    for (const line of list.stdout.split("\n")) {
      const eq = line.indexOf("=");
      if (eq > 0) current.set(line.slice(0, eq).toLowerCase(), line.slice(eq + 1));
    }
    for (const [name, value] of Object.entries({ ...wanted, ...shared })) {
      if (current.get(name) !== value) await exec(["git", "-C", repoDir, "config", name, value]);
    }
  }

  const hooks = join(repoDir, "hooks");
  const hook = join(hooks, "pre-receive");
  const existing = await readFile(hook, "utf8").catch(() => null);
  if (existing === hookScript && ((await stat(hook)).mode & 0o111) !== 0) return;
  await mkdir(hooks, { recursive: true, mode: 0o700 });
  const tmp = join(hooks, `.pre-receive.${randomBytes(6).toString("hex")}`);
  await writeFile(tmp, hookScript, { mode: 0o700 });
  await chmod(tmp, 0o700);
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

/** Writes the files of a commit into destDir (`git archive | tar -x`, never through a shell). */
export function archiveCommit(
  repoDir: string,
  sha: string,
  destDir: string,
  gitEnv?: Record<string, string>,
): Promise<void> {
  if (!SHA.test(sha)) return Promise.reject(new Error(`archiveCommit: '${sha}' is not a commit id`));
  return new Promise((resolve, reject) => {
    const git = spawn("git", ["-C", repoDir, "archive", "--format=tar", sha], {
      env: childEnv(envWith(gitEnv)),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const tar = spawn("tar", ["-x", "-C", destDir, "--no-same-owner"], {
      env: childEnv(),
      stdio: ["pipe", "ignore", "pipe"],
    });
    git.stdout.pipe(tar.stdin);
    let gitErr = "";
    let tarErr = "";
    git.stderr.on("data", (c: Buffer) => {
      gitErr += c.toString();
    });
    tar.stderr.on("data", (c: Buffer) => {
      tarErr += c.toString();
    });
    let gitCode: number | null = null;
    git.on("error", reject);
    tar.on("error", reject);
    git.on("close", (code) => {
      gitCode = code;
    });
    tar.on("close", (code) => {
      if (gitCode !== 0 && gitCode !== null) {
        reject(new ExecError(["git", "archive", sha], gitCode, gitErr));
      } else if (code !== 0) {
        reject(new ExecError(["tar", "-x"], code, tarErr));
      } else resolve();
    });
  });
}

export async function commitInfo(
  repoDir: string,
  sha: string,
  gitEnv?: Record<string, string>,
): Promise<{ sha: string; subject: string; author: string }> {
  if (!SHA.test(sha)) throw new Error(`commitInfo: '${sha}' is not a commit id`);
  const r = await exec(["git", "-C", repoDir, "log", "-1", "--format=%s%x00%an <%ae>", sha], {
    env: envWith(gitEnv),
  });
  const [subject = "", author = ""] = r.stdout.trim().split("\0");
  return { sha, subject, author };
}
