// bench/php-symfony: a real framework page in worker mode against classic mode, in one run on this machine
// (issue 17's speed line: at least 3x). The app is the e2e tests' Symfony 6.4 app from Debian's packages
// (test/e2e/php-framework-fixtures.ts); the page is its Twig `/` (kernel, router, controller, Twig).
// Classic: phpserver's nginx + php-fpm, a kernel per request. Worker: Symfony Runtime with the app's
// FrankenPHP runner, the kernel booted once per worker. Each mode is served in a container with 1 CPU and
// loaded with wrk (bench/wrk.ts); the rounds alternate the modes and the best of each is kept.
// Run: npm run build && node dist/bench/php-symfony.js [seconds per load run] [rounds]
import { symfonyApp } from "../test/e2e/php-framework-fixtures.js";
import {
  CONCURRENCY,
  cleanUp,
  composerInstall,
  IMAGE,
  load,
  loadAverage,
  serve,
  stopAll,
  tempDir,
} from "./php-serve.js";
import { ensureTools } from "./wrk.js";

const seconds = Number(process.argv[2] ?? 8);
const rounds = Number(process.argv[3] ?? 2);
const SERVER = ["phpserver", "php-server", "--listen", "0.0.0.0:8080", "--root", "public"];
const ENV = ["APP_CACHE_DIR=/tmp/cache", "APP_LOG_DIR=/tmp/log"];
const MODES = {
  classic: { cmd: SERVER, env: ENV },
  worker: {
    cmd: [...SERVER, "--worker", "public/index.php,2"],
    env: [...ENV, "APP_RUNTIME=App\\Runtime\\FrankenPhpRuntime"],
  },
};

/** The app, with vendor/ installed as a deploy installs it (Pier's composer flags, no network). */
async function app(): Promise<string> {
  const dir = tempDir();
  await symfonyApp(dir);
  await composerInstall(dir, { offline: true });
  return dir;
}

type Run = { rps: number; p99: number; cpu: number | null };

async function main(): Promise<void> {
  ensureTools();
  const dir = await app();
  const runs: Record<keyof typeof MODES, Run[]> = { classic: [], worker: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [mode, { cmd, env }] of Object.entries(MODES) as [
      keyof typeof MODES,
      (typeof MODES)["worker"],
    ][]) {
      runs[mode].push(await load(await serve(dir, cmd, env), seconds));
      await stopAll();
    }
  }
  const best = (xs: Run[]) => xs.reduce((a, b) => (b.rps > a.rps ? b : a));
  const [classic, worker] = [best(runs.classic), best(runs.worker)];
  const line = (name: string, r: Run) =>
    `  ${name.padEnd(20)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99.toFixed(1)} ms${r.cpu === null ? "" : `  CPU ${r.cpu.toFixed(0)} us/request`}`;
  console.log(
    `Symfony 6.4 Twig page on ${IMAGE}, ${CONCURRENCY} clients, ${seconds} s each, 1 CPU per server, best of ${rounds} (load ${loadAverage()}):`,
  );
  console.log(line("classic mode", classic));
  console.log(line("worker mode", worker));
  console.log(`  ratio (target >= 3x) ${(worker.rps / classic.rps).toFixed(2)}x`);
  // CPU time per request moves less with the machine's other load than requests/s do.
  if (classic.cpu !== null && worker.cpu !== null)
    console.log(`  CPU per request, classic / worker: ${(classic.cpu / worker.cpu).toFixed(2)}x`);
}

main()
  .catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(cleanUp);
