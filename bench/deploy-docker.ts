// bench/deploy-docker: push-to-first-200 of a small Dockerfile app through Pier, against the bare work
// (`docker build` + `docker run` + first 200) of the same app, measured in the same run; and the idle
// memory of `pier server`. Run: npm run build && node dist/bench/deploy-docker.js [rounds]
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, NODE_DOCKER_APP, Pier, run, until200 } from "../test/e2e/harness.js";

const DOCKER = "/usr/bin/docker";
const rounds = Number(process.argv[2] ?? 3);

function app(nonce: string): Record<string, string> {
  return { ...NODE_DOCKER_APP, "server.js": `${NODE_DOCKER_APP["server.js"]}\n// ${nonce}\n` };
}

async function bare(dir: string, files: Record<string, string>, tag: string): Promise<number> {
  for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, f), c);
  const port = await freePort();
  const t0 = performance.now();
  const b = await run([DOCKER, "build", "-q", "-t", tag, dir]);
  if (b.code !== 0) throw new Error(b.stderr);
  const r = await run([
    DOCKER,
    "run",
    "-d",
    "--rm",
    "--label",
    "pier.bench=1",
    "-p",
    `127.0.0.1:${port}:8080`,
    tag,
  ]);
  if (r.code !== 0) throw new Error(r.stderr);
  await until200(port, "127.0.0.1");
  const ms = performance.now() - t0;
  await run([DOCKER, "rm", "-f", r.stdout.trim()]);
  return ms;
}

async function viaPier(
  pier: Pier,
  repo: string,
  files: Record<string, string>,
  msg: string,
): Promise<number> {
  await pier.commit(repo, files, msg);
  const t0 = performance.now();
  const p = await pier.push(repo);
  if (p.code !== 0) throw new Error(p.stderr);
  await until200(pier.httpPort, "bench.localhost");
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main(): Promise<void> {
  const pier = new Pier();
  const bareDir = mkdtempSync(join(tmpdir(), "pier-bench-bare-"));
  try {
    await pier.start();
    await pier.addKey();
    const created = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "bench"]);
    const repo = await pier.repo("bench", app("seed"), created.id);
    const first = await pier.push(repo);
    if (first.code !== 0) throw new Error(first.stderr);

    const cold = { bare: [] as number[], pier: [] as number[] };
    const warm = { bare: [] as number[], pier: [] as number[] };
    for (let i = 0; i < rounds; i++) {
      const nonceA = randomBytes(4).toString("hex");
      const nonceB = randomBytes(4).toString("hex");
      cold.bare.push(await bare(bareDir, app(nonceA), `pier-bench-bare:${nonceA}`));
      cold.pier.push(await viaPier(pier, repo, app(nonceB), `cold ${i}`));
      // Same files again: every layer is cached.
      warm.bare.push(await bare(bareDir, app(nonceA), `pier-bench-bare:${nonceA}`));
      warm.pier.push(await viaPier(pier, repo, app(nonceB), `warm ${i}`));
      await run([DOCKER, "rmi", "-f", `pier-bench-bare:${nonceA}`]);
    }

    await new Promise((r) => setTimeout(r, 3000));
    const pid = pier.proc?.pid;
    const rssKb = pid
      ? Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0)
      : 0;

    const cb = median(cold.bare);
    const cp = median(cold.pier);
    const wb = median(warm.bare);
    const wp = median(warm.pier);
    console.log(`rounds: ${rounds} (medians)`);
    console.log(
      `new code    bare docker build+run+200: ${fmt(cb)}   pier push-to-200: ${fmt(cp)}   ratio ${(cp / cb).toFixed(2)} (target <= 1.30)`,
    );
    console.log(
      `cached      bare docker build+run+200: ${fmt(wb)}   pier push-to-200: ${fmt(wp)}   ratio ${(wp / wb).toFixed(2)} (target <= 1.15)`,
    );
    console.log(`idle pier server RSS: ${(rssKb / 1024).toFixed(1)} MiB (target < 150 MiB)`);
  } finally {
    await pier.destroy();
    rmSync(bareDir, { recursive: true, force: true });
  }
}

await main();
