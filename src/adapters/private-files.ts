import { closeSync, existsSync, openSync } from "node:fs";
import { chmod, lstat, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
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
  const result = { changed: 0, failed: [] as string[] };
  const visit = async (path: string, depth: number): Promise<void> => {
    const kind = await fixEntry(path, result);
    if (kind === "dir" && depth > 0)
      for (const name of await readdir(path).catch(() => [])) await visit(join(path, name), depth - 1);
  };
  await visit(root, Number.POSITIVE_INFINITY);
  return result;
}

/** The file whose content says the whole tree was made private by rules of this generation. */
export const PRIVATE_MARK = ".private";
const PRIVATE_GENERATION = "1";

/**
 * What `pier server` runs at each start: the whole walk of `makePrivate` the first time (or when the rules'
 * generation changed, or when the root was found open to others), then only the root and its entries. A
 * 0700 root is what keeps every other user out of the tree (no one else may traverse it), and everything
 * Pier writes below it is private as it is created (ADR 0024), so a start does not cost one lstat per file
 * of every app's repository: with hundreds of apps, it would grow with their number.
 */
export async function keepPrivate(
  root: string,
): Promise<{ changed: number; failed: string[]; walked: boolean }> {
  const mark = join(root, PRIVATE_MARK);
  const st = await lstat(root).catch(() => null);
  const closed = st?.isDirectory() === true && (st.mode & 0o777) === 0o700;
  const marked = (await readFile(mark, "utf8").catch(() => "")).trim() === PRIVATE_GENERATION;
  if (!closed || !marked) {
    const result = await makePrivate(root);
    if (result.failed.length === 0) await writeFile(mark, `${PRIVATE_GENERATION}\n`, { mode: 0o600 });
    return { ...result, walked: true };
  }
  const result = { changed: 0, failed: [] as string[] };
  await fixEntry(root, result);
  for (const name of await readdir(root).catch(() => [])) await fixEntry(join(root, name), result);
  return { ...result, walked: false };
}

/** Gives one entry its private mode (counted in `result`); returns its kind, or null when it is gone. */
async function fixEntry(
  path: string,
  result: { changed: number; failed: string[] },
): Promise<"dir" | "file" | "socket" | "link" | "other" | null> {
  const st = await lstat(path).catch(() => null);
  if (!st) return null; // removed meanwhile
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
      result.changed++;
    } catch {
      result.failed.push(path);
    }
  }
  return kind;
}

/** Creates an empty file 0600 if it does not exist (SQLite gives its WAL and SHM files the database's mode). */
export function createPrivateFile(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
}
