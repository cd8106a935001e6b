// The machine's processes as /proc shows them (the density benches follow a daemon's children there).
import { readdirSync, readFileSync } from "node:fs";

export interface Proc {
  pid: number;
  ppid: number;
  args: string[];
}

/** Every process with its parent and command line (one that ends while read is left out). */
export function processes(): Proc[] {
  const out: Proc[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const args = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").filter(Boolean);
      const ppid = Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${e}/status`, "utf8"))?.[1]);
      out.push({ pid: Number(e), ppid, args });
    } catch {
      // gone
    }
  }
  return out;
}

/**
 * Runs a bench's `main` bounded by `limitS` seconds and ended by SIGINT/SIGTERM, `cleanup` always run last
 * (and before a forced exit): what a bench leaves on the machine goes however it ends.
 */
export async function runBounded(main: () => Promise<void>, cleanup: () => Promise<void>, limitS: number) {
  const guard = setTimeout(() => {
    console.error(`bench: over ${limitS} s: stopping`);
    void cleanup().then(() => process.exit(2));
  }, limitS * 1000);
  for (const sig of ["SIGINT", "SIGTERM"] as const)
    process.once(sig, () => {
      void cleanup().then(() => process.exit(130));
    });
  try {
    await main();
  } catch (e) {
    console.error(`bench: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  } finally {
    await cleanup();
    clearTimeout(guard);
  }
}

/** A process's proportional set size in KiB (0 once it is gone). */
export const pssKb = (pid: number): number => {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

/** A process's resident set size in KiB (0 once it is gone). */
export const rssKb = (pid: number): number => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
};
