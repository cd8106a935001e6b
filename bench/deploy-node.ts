// bench/deploy-node: push-to-first-200 of an Express hello-world (with a package-lock.json) through Pier, first
// deploy and redeploy with an unchanged lock file, against the bare work on this machine (`npm ci` in a fresh
// folder with an empty npm cache, then `node server.js` to the first 200; also with a warm cache), measured
// in the same run. Run: npm run build && node dist/bench/deploy-node.js [rounds]
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, httpGet, Pier, run, until200 } from "../test/e2e/harness.js";

const rounds = Number(process.argv[2] ?? 3);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`rounds must be a positive integer, not ${process.argv[2]}`);
/** The whole run, cleanup included; every step has its own, shorter bound. */
const LIMIT_MS = (10 + 8 * rounds) * 60_000;
const NPM = "npm"; // the host's npm, from PATH (the bare work runs on the host's Node.js, process.execPath)
const BARE_CI = ["ci", "--omit=dev", "--no-audit", "--no-fund"];
const APP_ENV = [
  ["CC_NODE_VERSION", "22.16.0"],
  ["NODE_ENV", "production"],
] as const;

const server = (text: string) =>
  [
    'const express = require("express");',
    "const app = express();",
    `app.get("/", (req, res) => res.send(${JSON.stringify(text)}));`,
    'app.listen(Number(process.env.PORT || 8080), "0.0.0.0");',
    "",
  ].join("\n");

const temps: string[] = [];
const children = new Set<ChildProcess>();
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
};

/** Polls until `GET /` answers 200 with this body: the new release, not the one it replaces. */
async function untilBody(port: number, host: string, body: string, limitMs = 120_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    try {
      const r = await httpGet(port, host, "/", 2000);
      if (r.status === 200 && r.body === body) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no 200 with ${JSON.stringify(body)} from ${host} within ${limitMs / 1000} s`);
}

/** The bare work: npm ci in a fresh folder with this npm cache, then node server.js until the first 200. */
async function bare(pkg: string, lock: string, cache: string): Promise<number> {
  const dir = tempDir("pier-bench-node-");
  writeFileSync(join(dir, "package.json"), pkg);
  writeFileSync(join(dir, "package-lock.json"), lock);
  writeFileSync(join(dir, "server.js"), server("bare"));
  const port = await freePort();
  const env = { ...process.env, NODE_ENV: "production", PORT: String(port) };
  const t0 = performance.now();
  const ci = await run([NPM, ...BARE_CI, "--cache", cache], { cwd: dir, env, timeoutMs: 300_000 });
  if (ci.code !== 0) throw new Error(`npm ci failed (${ci.code}): ${ci.stderr}`);
  const child = spawn(process.execPath, ["server.js"], { cwd: dir, env, stdio: "ignore" });
  children.add(child);
  try {
    await until200(port, "127.0.0.1");
    return performance.now() - t0;
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

function stop(child: ChildProcess): Promise<void> {
  children.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      res();
    });
    child.kill("SIGTERM");
  });
}

/** Commits these files, then times `git push` to the first 200 with `text` through the edge. */
async function viaPier(
  pier: Pier,
  repo: string,
  name: string,
  files: Record<string, string>,
  text: string,
  msg: string,
): Promise<{ ms: number; log: string }> {
  await pier.commit(repo, files, msg);
  const t0 = performance.now();
  const p = await pier.push(repo);
  if (p.code !== 0) throw new Error(`push of ${name} failed (${p.code}): ${p.stderr}`);
  await untilBody(pier.httpPort, `${name}.localhost`, text);
  return { ms: performance.now() - t0, log: p.stderr };
}

async function createApp(pier: Pier, name: string): Promise<string> {
  const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", name]);
  for (const [k, v] of APP_ENV) {
    const r = await pier.cli(["env", "set", k, v, "--app", name]);
    if (r.code !== 0) throw new Error(`env set ${k} failed: ${r.stderr}`);
  }
  return app.id;
}

async function deleteApp(pier: Pier, id: string): Promise<void> {
  const r = await pier.api("DELETE", `/v1/apps/${id}`);
  if (r.status >= 300) throw new Error(`deleting app ${id} answered ${r.status}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const all = (xs: number[]) => `(${xs.map((x) => (x / 1000).toFixed(2)).join(", ")})`;
const line = (label: string, xs: number[], extra = "") =>
  console.log(`${label.padEnd(38)}${fmt(median(xs)).padStart(8)}  ${all(xs)}${extra}`);

async function main(): Promise<void> {
  const pier = new Pier();
  let cleaning: Promise<void> | null = null;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const c of [...children]) await stop(c);
      await pier.destroy();
      for (const d of temps) rmSync(d, { recursive: true, force: true });
    })();
    return cleaning;
  };
  const abort = (why: string) => {
    console.error(`bench: ${why}; cleaning up`);
    void cleanup().finally(() => process.exit(1));
  };
  const watchdog = setTimeout(() => abort(`over the time limit of ${LIMIT_MS / 60_000} min`), LIMIT_MS);
  const onSigint = () => abort("interrupted");
  process.once("SIGINT", onSigint);
  try {
    // The app: package.json and package-lock.json of express@4 made by the host's npm (own cache), in npm's
    // default form whatever the host's npmrc says: with `resolved` URLs, which spare npm ci a packument
    // request per package (and make a warm cache pay off).
    const lockDir = tempDir("pier-bench-lock-");
    writeFileSync(
      join(lockDir, "package.json"),
      `${JSON.stringify({ name: "express-hello", version: "1.0.0", scripts: { start: "node server.js" } }, null, 2)}\n`,
    );
    const locked = await run(
      [
        NPM,
        "install",
        "--package-lock-only",
        "--no-audit",
        "--no-fund",
        "--omit-lockfile-registry-resolved=false",
        "--cache",
        tempDir("pier-bench-npm-cache-"),
        "express@4",
      ],
      { cwd: lockDir, timeoutMs: 180_000 },
    );
    if (locked.code !== 0) throw new Error(`npm install --package-lock-only failed: ${locked.stderr}`);
    const pkg = readFileSync(join(lockDir, "package.json"), "utf8");
    const lock = readFileSync(join(lockDir, "package-lock.json"), "utf8");
    const packages = (
      JSON.parse(lock) as { packages?: Record<string, { version?: string; resolved?: string }> }
    ).packages;
    const express = packages?.["node_modules/express"]?.version;
    if (!packages?.["node_modules/express"]?.resolved) throw new Error("the lock file has no resolved URLs");
    const files = (text: string) => ({
      "package.json": pkg,
      "package-lock.json": lock,
      "server.js": server(text),
      ".gitignore": "/node_modules\n",
    });

    const npmVersion = (await run([NPM, "--version"], { timeoutMs: 30_000 })).stdout.trim();
    const npmPath = (await run(["which", NPM], { timeoutMs: 10_000 })).stdout.trim();

    await pier.start();
    await pier.addKey();

    // Warm-up (not timed): a throwaway app whose deploy builds the toolchain image if no earlier run did.
    const warmId = await createApp(pier, "warmup");
    const warmRepo = await pier.repo("warmup", {}, warmId);
    const warm = await viaPier(pier, warmRepo, "warmup", files("warm-up"), "warm-up", "warm-up");
    const built = warm.log.includes("Preparing the toolchain image");
    const tool = /Build tool: (.*)\./.exec(warm.log)?.[1] ?? "(not in the deploy log)";
    await deleteApp(pier, warmId);

    const warmCache = tempDir("pier-bench-npm-cache-");
    await bare(pkg, lock, warmCache); // fills the warm cache; not timed

    const bareCold: number[] = [];
    const bareWarm: number[] = [];
    const first: number[] = [];
    const again: number[] = [];
    let restored = 0;
    for (let i = 0; i < rounds; i++) {
      const empty = tempDir("pier-bench-npm-cache-");
      bareCold.push(await bare(pkg, lock, empty));
      rmSync(empty, { recursive: true, force: true });
      bareWarm.push(await bare(pkg, lock, warmCache));

      // A new app each round: its first deploy starts from an empty dependency cache.
      const name = `bench${i}`;
      const id = await createApp(pier, name);
      const repo = await pier.repo(name, {}, id);
      first.push((await viaPier(pier, repo, name, files(`first ${i}`), `first ${i}`, "first")).ms);
      const r = await viaPier(
        pier,
        repo,
        name,
        { "server.js": server(`again ${i}`) },
        `again ${i}`,
        "same lock",
      );
      again.push(r.ms);
      if (r.log.includes("node_modules reused from the current release")) restored++;
      await deleteApp(pier, id);
    }

    const bc = median(bareCold);
    console.log(
      `bench/deploy-node: Express ${express} hello-world, package-lock.json of ${Object.keys(packages).length - 1} packages with resolved URLs; ${rounds} rounds, medians (each round)`,
    );
    console.log(
      `bare work: host Node.js ${process.version} (${process.execPath}), npm ${npmVersion} (${npmPath}): npm ${BARE_CI.join(" ")} --cache <dir>, node server.js, first 200`,
    );
    console.log(
      `pier: ${APP_ENV.map(([k, v]) => `${k}=${v}`).join(" ")}; build tool: ${tool}; push start to first 200 through the edge`,
    );
    console.log(
      `warm-up deploy before timing (not timed): ${built ? "built the toolchain image" : "toolchain image already present"}`,
    );
    line("bare, empty npm cache:", bareCold);
    line("bare, warm npm cache:", bareWarm);
    line(
      "pier first deploy:",
      first,
      `   ratio to bare cold ${(median(first) / bc).toFixed(2)} (target <= 1.5)`,
    );
    line(
      "pier redeploy, same lock file:",
      again,
      `   ratio to bare cold ${(median(again) / bc).toFixed(2)} (target <= 1.0)`,
    );
    console.log(`redeploys that reused the current release's node_modules: ${restored} of ${rounds}`);
  } finally {
    clearTimeout(watchdog);
    process.off("SIGINT", onSigint);
    await cleanup();
  }
}

await main();
