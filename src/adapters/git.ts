import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ExecError, exec } from "./exec.js";

const SHA = /^[0-9a-f]{40}$/;
const REV = /^(refs\/heads\/[A-Za-z0-9._/-]+|HEAD|[0-9a-f]{40})$/;

function envWith(gitEnv?: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...(gitEnv ?? {}) };
}

/** Creates the app's bare repository if needed and (re)writes its pre-receive hook. Idempotent. */
export async function ensureBareRepo(
  repoDir: string,
  hookScript: string,
  maxInputBytes: number,
): Promise<void> {
  if (!existsSync(join(repoDir, "HEAD"))) {
    await mkdir(repoDir, { recursive: true });
    await exec(["git", "init", "--quiet", "--bare", repoDir]);
    await exec(["git", "-C", repoDir, "symbolic-ref", "HEAD", "refs/heads/master"]);
  }
  await exec(["git", "-C", repoDir, "config", "receive.fsckObjects", "true"]);
  await exec(["git", "-C", repoDir, "config", "receive.maxInputSize", String(maxInputBytes)]);
  await exec(["git", "-C", repoDir, "config", "receive.denyDeletes", "true"]);
  const hook = join(repoDir, "hooks", "pre-receive");
  await mkdir(join(repoDir, "hooks"), { recursive: true });
  await writeFile(hook, hookScript);
  await chmod(hook, 0o755);
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
      env: envWith(gitEnv),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const tar = spawn("tar", ["-x", "-C", destDir, "--no-same-owner"], { stdio: ["pipe", "ignore", "pipe"] });
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
