import { type ExecResult, exec } from "./exec.js";

export type PoolRoute =
  | { state: "added" | "present" }
  /** Not claimed: why (not allowed, no `ip`, or the host routes that range somewhere already). */
  | { state: "failed"; reason: string };

/**
 * Pier's subnet pool on the host (ADR 0016): one `unreachable` route for the whole pool, so that an
 * address of the pool that no network uses (a deleted app's, a freed subnet's, one never given) does not
 * leave this machine by its default route. The bridges' own routes (one per network, longer prefixes) win,
 * so the networks work as before; a connection to an unused address fails at once (EHOSTUNREACH). Without
 * it, such a connection went to the host's gateway, and whatever answers there answered (seen: an egress
 * proxy's HTTP 400, taken for an add-on that had had that address). A route the host already has for the
 * pool's range or a wider one (a LAN, a VPN: ADR 0007) is left alone. Idempotent; several Piers share it.
 */
export async function claimPoolRoute(
  pool: string,
  run: (argv: readonly string[]) => Promise<ExecResult> = exec,
): Promise<PoolRoute> {
  try {
    // The routes whose range holds the pool's (the default route always does).
    const routes = (await run(["ip", "-4", "route", "show", "match", pool])).stdout
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("default "));
    if (routes.some((l) => l.startsWith(`unreachable ${pool}`))) return { state: "present" };
    if (routes.length > 0)
      return { state: "failed", reason: `the host routes ${pool} already: ${routes.join("; ")}` };
    await run(["ip", "-4", "route", "add", "unreachable", pool]);
    return { state: "added" };
  } catch (e) {
    return { state: "failed", reason: (e as Error).message };
  }
}

/** The policy rules that close the pool in a network namespace, in order (their priorities first). */
const POOL_RULES = (pool: string) => [
  {
    priority: "100",
    shown: `to ${pool} lookup main suppress_prefixlength 0`,
    add: ["lookup", "main", "suppress_prefixlength", "0"],
  },
  { priority: "101", shown: `to ${pool} unreachable`, add: ["unreachable"] },
];

/**
 * Pier's subnet pool closed in a network namespace that joins networks of the pool itself (the edge's
 * sandbox on a swarm, ADR 0030): a destination of the pool is routed only by a route longer than the
 * default (a joined network's own), else unreachable at once, never out by the default route. Policy rules,
 * not an `unreachable` route as on the host: the engine refuses to put an address of the pool on the
 * namespace's interface while a route covers it. Idempotent (rules already there are left as they are).
 */
export async function closePoolByRules(
  pool: string,
  run: (argv: readonly string[]) => Promise<ExecResult> = exec,
): Promise<PoolRoute> {
  try {
    const shown = (await run(["ip", "-4", "rule", "show"])).stdout;
    const missing = POOL_RULES(pool).filter((r) => !shown.includes(r.shown));
    for (const r of missing)
      await run(["ip", "-4", "rule", "add", "to", pool, ...r.add, "priority", r.priority]);
    return { state: missing.length > 0 ? "added" : "present" };
  } catch (e) {
    return { state: "failed", reason: (e as Error).message };
  }
}
