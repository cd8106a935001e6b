/** The deployment health check's verdict and the deploy log lines that explain it (contract section 7.1). */

import type { Runtime } from "./model.js";

export interface HealthResult {
  path: string;
  /** The HTTP status, or why there was none (`ECONNREFUSED`, `no answer (timeout)`). */
  status: number | string;
}

export const HEALTH_CLOSING_LINE =
  "Update the configuration (CC_HEALTH_CHECK_PATH, CC_HEALTH_CHECK_PATH_<n>) or the application, then redeploy.";

/**
 * Passes when every path answered 200. The lines are, for each path in order,
 * `Response from GET <path> is <status>`; on failure then `Health check failed:`, one
 * `- GET <path> returned <status>.` per failing path, and the closing line. No result at all fails:
 * a gate that checked nothing must not let a deployment through.
 */
export function healthReport(results: readonly HealthResult[]): { ok: boolean; lines: string[] } {
  if (results.length === 0)
    return { ok: false, lines: ["Health check failed: no path was checked.", HEALTH_CLOSING_LINE] };
  const lines = results.map((r) => `Response from GET ${r.path} is ${r.status}`);
  const failing = results.filter((r) => r.status !== 200);
  if (failing.length === 0) return { ok: true, lines };
  lines.push("Health check failed:");
  for (const r of failing) lines.push(`- GET ${r.path} returned ${r.status}.`);
  lines.push(HEALTH_CLOSING_LINE);
  return { ok: false, lines };
}

function seconds(s: number): string {
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}

/** Why an instance that never accepted a connection on its HTTP port failed, and what to check, per runtime. */
export function notListeningLines(port: number, waitedSeconds: number, runtime: Runtime): string[] {
  const lines = [`The application did not listen on 0.0.0.0:${port} within ${seconds(waitedSeconds)} s.`];
  switch (runtime) {
    case "node":
      lines.push(
        `A Node.js application must listen on 0.0.0.0:${port}: read the port from process.env.PORT and bind to 0.0.0.0, not localhost or 127.0.0.1 (e.g. server.listen(process.env.PORT, "0.0.0.0")).`,
      );
      break;
    case "docker":
      lines.push(
        `Check that the container's process listens on 0.0.0.0:${port} (not 127.0.0.1), or set CC_DOCKER_EXPOSED_HTTP_PORT to the port it listens on; EXPOSE in the Dockerfile does not change it.`,
      );
      break;
    case "phpserver":
      lines.push(
        `Check CC_PHPSERVER_PORT, and that CC_RUN_COMMAND, if set, starts the server with --listen 0.0.0.0:${port}. In worker mode phpserver listens only once every worker has called frankenphp_handle_request(): the instance's output says why one did not.`,
      );
      break;
  }
  return lines;
}

/**
 * The addresses a port listens on inside an instance, read from /proc/net/tcp and /proc/net/tcp6
 * (`local_address` of the rows in state 0A, LISTEN): e.g. ["127.0.0.1"] for an app bound to loopback only.
 */
export function listeningAddresses(procNetTcp: string, port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const out: string[] = [];
  for (const line of procNetTcp.split("\n")) {
    const cols = line.trim().split(/\s+/);
    const local = cols[1];
    if (!local || cols[3] !== "0A") continue;
    const [addr, p] = local.split(":");
    if (p !== hexPort || !addr) continue;
    if (addr.length === 8) {
      const bytes = (addr.match(/../g) ?? []).map((h) => Number.parseInt(h, 16)).reverse();
      out.push(bytes.join("."));
    } else if (/^0+$/.test(addr)) out.push("::");
    else if (addr === "00000000000000000000000001000000") out.push("::1");
    else out.push(`ipv6:${addr}`);
  }
  return [...new Set(out)];
}

/** True when the port listens only on loopback addresses, so no one outside the instance reaches it. */
export function loopbackOnly(addresses: readonly string[]): boolean {
  return addresses.length > 0 && addresses.every((a) => a.startsWith("127.") || a === "::1");
}
