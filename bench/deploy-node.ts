// bench/deploy-node: push-to-first-200 of an Express hello-world (with a lock file) through Pier, first
// deploy and redeploy with an unchanged lock file, against the bare work on this machine (`npm ci` in a
// fresh folder, then `node server.js` to the first 200), measured in the same run.
// Run: npm run build && node dist/bench/deploy-node.js [rounds]

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, Pier, run, until200 } from "../test/e2e/harness.js";

const rounds = Number(process.argv[2] ?? 3);

const PACKAGE = `${JSON.stringify({ name: "express-hello", version: "1.0.0", scripts: { start: "node server.js" }, dependencies: { express: "^4.21.0" } }, null, 2)}\n`;
const server = (text: string) =>
  `const express = require("express");\nconst app = express();\napp.get("/", (req, res) => res.send(${JSON.stringify(text)}));\napp.listen(Number(process.env.PORT || 8080), "0.0.0.0");\n`;

/** The bare work: npm ci with an empty (or the given) cache, then node server.js until the first 200. */
async function bare(lock: string, cache: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "pier-bench-node-"));
  try {
    writeFileSync(join(dir, "package.json"), PACKAGE);
    writeFileSync(join(dir, "package-lock.json"), lock);
    writeFileSync(join(dir, "server.js"), server("bare"));
    const port = await freePort();
    const t0 = performance.now();
    const ci = await run(["npm", "ci", "--no-audit", "--no-fund", "--omit=dev", "--cache", cache], {
      cwd: dir,
      timeoutMs: 300_000,
    });
    if (ci.code !== 0) throw new Error(ci.stderr);
    const child = spawn(process.execPath, ["server.js"], {
      cwd: dir,
      env: { ...process.env, PORT: String(port) },
      stdio: "ignore",
    });
    try {
      await until200(port, "127.0.0.1");
      return performance.now() - t0;
    } finally {
      child.kill();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "pier-bench-lock-"));
  const pier = new Pier();
  try {
    writeFileSync(join(work, "package.json"), PACKAGE);
    const lockRun = await run(["npm", "install", "--package-lock-only", "--no-audit", "--no-fund"], {
      cwd: work,
    });
    if (lockRun.code !== 0) throw new Error(lockRun.stderr);
    const lock = readFileSync(join(work, "package-lock.json"), "utf8");
    const files = (text: string) => ({
      "package.json": PACKAGE,
      "package-lock.json": lock,
      "server.js": server(text),
      ".gitignore": "/node_modules\n",
    });

    await pier.start();
    await pier.addKey();
    const setEnv = async (name: string) => {
      for (const [k, v] of [
        ["CC_NODE_VERSION", "22.16.0"],
        ["NODE_ENV", "production"],
        ["CC_NODE_BUILD_TOOL", "npm-ci"],
      ]) {
        const r = await pier.cli(["env", "set", k!, v!, "--app", name]);
        if (r.code !== 0) throw new Error(r.stderr);
      }
    };
    // Warm-up: the toolchain image (Node.js 22.16.0) is built once, before anything is timed.
    const warm = await pier.cliJson<{ id: string }>(["create", "--type", "node", "warmup"]);
    await setEnv("warmup");
    const warmRepo = await pier.repo("warmup", files("warm"), warm.id);
    const w = await pier.push(warmRepo);
    if (w.code !== 0) throw new Error(w.stderr);
    console.log("warm-up deploy done (toolchain image ready; not timed)");

    const bareCold: number[] = [];
    const bareWarm: number[] = [];
    const first: number[] = [];
    const again: number[] = [];
    const warmCache = mkdtempSync(join(tmpdir(), "pier-bench-npm-cache-"));
    await bare(lock, warmCache);
    for (let i = 0; i < rounds; i++) {
      const empty = mkdtempSync(join(tmpdir(), "pier-bench-npm-cache-"));
      bareCold.push(await bare(lock, empty));
      rmSync(empty, { recursive: true, force: true });
      bareWarm.push(await bare(lock, warmCache));

      const name = `bench${i}`;
      const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", name]);
      await setEnv(name);
      const repo = await pier.repo(name, files(`first ${i}`), app.id);
      let t0 = performance.now();
      const p1 = await pier.push(repo);
      if (p1.code !== 0) throw new Error(p1.stderr);
      await until200(pier.httpPort, `${name}.localhost`);
      first.push(performance.now() - t0);

      await pier.commit(repo, { "server.js": server(`again ${i}`) }, "same lock file");
      t0 = performance.now();
      const p2 = await pier.push(repo);
      if (p2.code !== 0) throw new Error(p2.stderr);
      await until200(pier.httpPort, `${name}.localhost`);
      again.push(performance.now() - t0);
    }
    rmSync(warmCache, { recursive: true, force: true });

    const bc = median(bareCold);
    console.log(
      `rounds: ${rounds} (medians); bare work with the host's Node.js ${process.version} and npm; Pier builds with Node.js 22.16.0`,
    );
    console.log(
      `bare: npm ci + node + first 200: cold cache ${fmt(bc)}, warm cache ${fmt(median(bareWarm))}`,
    );
    console.log(
      `pier first deploy (push to first 200):           ${fmt(median(first))}   ratio to bare cold ${(median(first) / bc).toFixed(2)} (target <= 1.5)`,
    );
    console.log(
      `pier redeploy, same lock file (push to first 200): ${fmt(median(again))}   ratio to bare cold ${(median(again) / bc).toFixed(2)} (target <= 1.0)`,
    );
  } finally {
    await pier.destroy();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
