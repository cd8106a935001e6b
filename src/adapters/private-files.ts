import { closeSync, existsSync, openSync } from "node:fs";
import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * The data dir is Pier's alone (ADR 0024): the store, its WAL, keys, tokens, every app's repository, the
 * edge's configuration and certificates. Directories are 0700 and files 0600 (0700 when they are programs,
 * like git hooks; 0400 when read-only, like git's objects), so no other user of the machine reads a
 * tenant's code or a secret. Pier's own HAProxy runs as the user of `pier server` (its config has no `user`
 * line), so it reads them all.
 */

/** The mode an entry of the data dir must have, or null (symbolic links: their target decides). */
export function privateMode(kind: "dir" | "file" | "socket" | "link" | "other", mode: number): number | null {
  if (kind === "dir") return 0o700;
  if (kind === "link") return null;
  if (kind === "file" && (mode & 0o100) !== 0) return 0o700;
  // Read-only files (git's objects) stay read-only.
  if (kind === "file" && (mode & 0o200) === 0) return 0o400;
  return 0o600;
}

/**
 * Makes `root` (created if missing) and everything under it private to its owner; returns how many entries
 * were changed, and those that could not be (another user's file: EPERM), which the caller reports. A tree
 * that is private already costs one lstat per entry.
 */
export async function makePrivate(root: string): Promise<{ changed: number; failed: string[] }> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  let changed = 0;
  const failed: string[] = [];
  const visit = async (path: string): Promise<void> => {
    const st = await lstat(path).catch(() => null);
    if (!st) return; // removed meanwhile
    const kind = st.isDirectory()
      ? "dir"
      : st.isSymbolicLink()
        ? "link"
        : st.isFile()
          ? "file"
          : st.isSocket()
            ? "socket"
            : "other";
    const want = privateMode(kind, st.mode);
    if (want !== null && (st.mode & 0o7777) !== want) {
      try {
        await chmod(path, want);
        changed++;
      } catch {
        failed.push(path);
      }
    }
    if (kind === "dir") for (const name of await readdir(path).catch(() => [])) await visit(join(path, name));
  };
  await visit(root);
  return { changed, failed };
}

/** Creates an empty file 0600 if it does not exist (SQLite gives its WAL and SHM files the database's mode). */
export function createPrivateFile(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
}
