// The edge's sandbox as this process sees it (ADR 0030): its process found from the engine's pid or its
// cgroup, its network namespace, a handle that keeps that namespace, and the interfaces listed in it.
import { openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The network namespace of process `pid` (`net:[inode]`), or null when it is gone. */
export const netnsOf = (pid: number): string | null => {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
};

/** Whether process `pid` belongs to container `id` (its cgroup path names the container's full id). */
function inContainer(pid: number, id: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(id);
  } catch {
    return false;
  }
}

/**
 * The container's process as this process sees it. The engine says its pid in the engine's own PID
 * namespace, which is this one's on a plain manager; when the engine runs in a namespace of its own (as the
 * swarm lab's nodes do) the process is found by its cgroup, which names the container.
 */
export function hostPidOf(id: string, enginePid: number): number | null {
  if (enginePid > 0 && inContainer(enginePid, id)) return enginePid;
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (Number.isInteger(pid) && pid > 0 && inContainer(pid, id)) return pid;
  }
  return null;
}

/** A read handle on a process's network namespace; null when the process is gone. */
export function openHandle(pid: number): number | null {
  try {
    return openSync(`/proc/${pid}/ns/net`, "r");
  } catch {
    return null;
  }
}

/** The interface names of `ip -o link show` (`2: eth0@if18: <...>`: the name before any `@`). */
export function linkNames(out: string): string[] {
  return out
    .split("\n")
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined);
}
