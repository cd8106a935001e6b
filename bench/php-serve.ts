// The PHP benches' servers: pier/php:8.4 containers serving a folder (phpserver, or Debian's stock nginx +
// php-fpm), loaded with wrk; each figure with the CPU time the server spent per request.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../test/e2e/harness.js";
import { wrk } from "./wrk.js";

export const DOCKER = "/usr/bin/docker";
/** PIER_BENCH_PHP_IMAGE: another build of the image (both modes run on it), to compare phpserver changes. */
export const IMAGE = process.env.PIER_BENCH_PHP_IMAGE ?? "pier/php:8.4";
export const CONCURRENCY = 16;
const temps: string[] = [];
const containers: string[] = [];
export const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "pier-bench-php-"));
  chmodSync(d, 0o755); // Debian's nginx and php-fpm read it as www-data
  temps.push(d);
  return d;
};

/** Starts a container serving `dir` at /app with this command; resolves its address once it answers 200. */
export async function serve(dir: string, cmd: string[], env: string[] = []): Promise<string> {
  const r = await run([
    DOCKER,
    "run",
    "-d",
    "--rm",
    "--cpus",
    "1",
    "-v",
    `${dir}:/app`,
    "-w",
    "/app",
    ...env.flatMap((e) => ["-e", e]),
    IMAGE,
    ...cmd,
  ]);
  if (r.code !== 0) throw new Error(`docker run: ${r.stderr}`);
  const id = r.stdout.trim();
  containers.push(id);
  const ip = (
    await run([DOCKER, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", id])
  ).stdout.trim();
  containerByIp.set(ip, id);
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    try {
      if ((await get(ip, 8080)).status === 200) return ip;
    } catch {
      // not yet
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(
    `${cmd.join(" ")} did not answer 200 within 60 s: ${(await run([DOCKER, "logs", id])).stderr}`,
  );
}

function get(host: string, port: number, agent?: Agent): Promise<{ status: number }> {
  return new Promise((res, rej) => {
    const req = request({ host, port, path: "/", agent: agent ?? false }, (r) => {
      r.resume();
      r.on("end", () => res({ status: r.statusCode ?? 0 }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", rej);
    req.end();
  });
}

/**
 * The CPU time a container has used, in microseconds (cgroup v1 or v2), or null when it cannot be read:
 * CPU per request barely moves with the other load on the machine, where requests/s does.
 */
function cpuUsageMicros(ip: string): number | null {
  const id = containerByIp.get(ip);
  if (!id) return null;
  for (const [file, parse] of [
    [`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, (t: string) => Number(t) / 1000],
    [
      `/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`,
      (t: string) => Number(/usage_usec (\d+)/.exec(t)?.[1]),
    ],
  ] as const) {
    try {
      const v = parse(readFileSync(file, "utf8"));
      if (Number.isFinite(v)) return v;
    } catch {
      // not this cgroup layout
    }
  }
  return null;
}
const containerByIp = new Map<string, string>();

/**
 * CONCURRENCY keep-alive connections of wrk for `seconds` (after a 1 s warm-up): requests/s, p99 in ms,
 * and the server's CPU time per request in microseconds (null if unknown).
 */
export async function load(
  host: string,
  seconds: number,
): Promise<{ rps: number; p99: number; cpu: number | null }> {
  const url = `http://${host}:8080/`;
  await wrk(url, { seconds: 1, connections: CONCURRENCY });
  const cpu0 = cpuUsageMicros(host);
  const r = await wrk(url, { seconds, connections: CONCURRENCY });
  const cpu1 = cpuUsageMicros(host);
  if (r.errors > 0 || r.requests === 0) throw new Error(`${r.errors} requests failed against ${host}`);
  return {
    rps: r.rps,
    p99: r.p99ms,
    cpu: cpu0 !== null && cpu1 !== null ? (cpu1 - cpu0) / r.requests : null,
  };
}

export async function stopAll(): Promise<void> {
  for (const id of containers.splice(0)) await run([DOCKER, "rm", "-f", id]);
}

/** Stops the containers and removes the folders this bench made. */
export async function cleanUp(): Promise<void> {
  await stopAll();
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** The machine's 1-minute load average, printed beside each figure. */
/** `composer install` in `dir` with the flags a deploy uses (ADR 0012), optionally with no network. */
export async function composerInstall(dir: string, opts: { offline?: boolean } = {}): Promise<void> {
  const network = opts.offline ? ["--network", "none"] : [];
  const r = await run([
    DOCKER,
    "run",
    "--rm",
    ...network,
    "-v",
    `${dir}:/app`,
    "-w",
    "/app",
    IMAGE,
    "composer",
    "install",
    "--no-interaction",
    "--no-progress",
    "--no-scripts",
    "--no-dev",
    "-q",
  ]);
  if (r.code !== 0) throw new Error(`composer install: ${r.stderr}`);
}

export const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
