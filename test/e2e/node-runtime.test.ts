// The Node.js runtime end to end: a real app pushed over git, built with a Node.js from the npm registry.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run, scopeOf } from "./harness.js";

const pkg = (extra: Record<string, unknown> = {}) =>
  `${JSON.stringify(
    {
      name: "node-hello",
      version: "1.0.0",
      scripts: { start: "node server.js" },
      dependencies: { ms: "2.1.3" },
      devDependencies: { "is-number": "7.0.0" },
      ...extra,
    },
    null,
    2,
  )}\n`;

const SERVER = `
const http = require("http");
const ms = require("ms");
let dev = false;
try { require("is-number"); dev = true; } catch {}
const server = http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ node: process.version, twoHours: ms("2h"), dev, env: process.env }));
});
process.on("SIGTERM", () => { console.log("SIGTERM received, closing"); server.close(() => process.exit(0)); });
server.listen(8080, "0.0.0.0", () => console.log("listening on 8080"));
`;

interface Body {
  node: string;
  twoHours: number;
  dev: boolean;
  env: Record<string, string>;
}

describe("Node.js runtime", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let repo = "";
  const env = async (...pairs: string[]) => {
    for (let i = 0; i < pairs.length; i += 2) {
      const r = await pier.cli(["env", "set", pairs[i]!, pairs[i + 1]!, "--app", "nodeapp"]);
      assert.equal(r.code, 0, r.stderr);
    }
  };
  const body = async () => JSON.parse((await pier.get("nodeapp")).body) as Body;

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string; type: string }>(["create", "--type", "node", "nodeapp"]);
    assert.equal(app.type, "node");
    repo = await pier.repo(
      "nodeapp",
      { "package.json": pkg(), "server.js": SERVER, ".gitignore": "/node_modules\n" },
      app.id,
    );
  });
  after(async () => {
    await pier.destroy();
    const scope = scopeOf(pier.dataDir);
    const volumes = await run([
      "/usr/bin/docker",
      "volume",
      "ls",
      "-q",
      "--filter",
      `label=pier.scope=${scope}`,
    ]);
    assert.equal(volumes.stdout.trim(), "", "deleting the apps removed their dependency caches");
  });

  test("push builds with the chosen Node.js and npm, without dev dependencies in production", async () => {
    await env("CC_NODE_VERSION", "22.16.0", "NODE_ENV", "production");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /22\.16\.0/);
    const b = await body();
    assert.equal(b.node, "v22.16.0");
    assert.equal(b.twoHours, 7_200_000, "dependencies are installed");
    assert.equal(b.dev, false, "NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: no dev dependencies");
    assert.equal(b.env.NODE_ENV, "production");
    assert.equal(b.env.PORT, "8080");
    assert.equal(b.env.INSTANCE_TYPE, "production");
    assert.equal(b.env.APP_HOME, "/app");
  });

  test("CC_NODE_DEV_DEPENDENCIES=install installs them", async () => {
    await env("CC_NODE_DEV_DEPENDENCIES", "install");
    await pier.commit(repo, {}, "dev deps");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await body()).dev, true);
  });

  test("a redeploy sends SIGTERM to the old instance, whose handler runs and is seen in pier logs", async () => {
    let seen = "";
    for (let i = 0; i < 50 && !seen.includes("SIGTERM received"); i++) {
      seen = (await pier.cli(["logs", "--app", "nodeapp"])).stdout;
      if (!seen.includes("SIGTERM received")) await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(seen, /SIGTERM received, closing/);
  });

  test("a package.json with neither scripts.start nor main fails, saying what to add", async () => {
    await pier.commit(repo, { "package.json": pkg({ scripts: {} }) }, "no start");
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /scripts\.start/);
    assert.match(push.stderr, /main/);
    assert.equal((await body()).node, "v22.16.0", "the previous release keeps serving");
  });

  test("a failing preinstall script fails the deploy; the previous release keeps serving", async () => {
    await pier.commit(
      repo,
      {
        "package.json": pkg({
          scripts: { start: "node server.js", preinstall: "echo broken-preinstall && exit 3" },
        }),
      },
      "bad preinstall",
    );
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /broken-preinstall/);
    assert.match(push.stderr, /build failed/i);
    assert.equal((await body()).node, "v22.16.0");
  });

  test("an app that listens on 127.0.0.1 only fails the health gate with a message that says so", async () => {
    await pier.commit(
      repo,
      { "package.json": pkg(), "server.js": SERVER.replace('"0.0.0.0"', '"127.0.0.1"') },
      "loopback only",
    );
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /listens on 127\.0\.0\.1:8080 only/);
    assert.match(push.stderr, /0\.0\.0\.0:8080/);
    // Said once seen, not after the listen timeout (which says "did not listen ... within").
    assert.doesNotMatch(push.stderr, /did not listen on 0\.0\.0\.0:8080 within/);
    assert.equal((await body()).node, "v22.16.0");
    await pier.commit(repo, { "server.js": SERVER }, "all interfaces");
  });

  test("CC_RUN_SUCCEEDED_HOOK and CC_RUN_FAILED_HOOK run in the instance after the gate, logged only", async () => {
    await env(
      "CC_RUN_SUCCEEDED_HOOK",
      "echo succeeded-hook on $INSTANCE_NUMBER",
      "CC_RUN_FAILED_HOOK",
      "echo failed-hook ran; exit 5",
    );
    await pier.commit(repo, { "package.json": pkg(), "server.js": SERVER }, "hooks");
    const ok = await pier.push(repo);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /succeeded-hook on 0/);
    await env("CC_HEALTH_CHECK_PATH", "/missing");
    await pier.commit(
      repo,
      {
        "server.js": SERVER.replace(
          "res.setHeader",
          "if (req.url === '/missing') { res.statusCode = 404; return res.end(); }\n  res.setHeader",
        ),
      },
      "404 health",
    );
    const bad = await pier.push(repo);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /failed-hook ran/);
    assert.match(bad.stderr, /CC_RUN_FAILED_HOOK exited with code 5 \(logged only\)/);
    assert.match(bad.stderr, /- GET \/missing returned 404\./);
    const r = await pier.cli([
      "env",
      "rm",
      "CC_HEALTH_CHECK_PATH",
      "CC_RUN_SUCCEEDED_HOOK",
      "CC_RUN_FAILED_HOOK",
      "--app",
      "nodeapp",
    ]);
    assert.equal(r.code, 0, r.stderr);
    await pier.commit(repo, { "server.js": SERVER }, "back");
  });

  test("a Node.js version that does not exist fails naming CC_NODE_VERSION", async () => {
    await pier.commit(repo, { "package.json": pkg() }, "back");
    await env("CC_NODE_VERSION", "99");
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /CC_NODE_VERSION/);
    assert.equal((await body()).node, "v22.16.0");
    await env("CC_NODE_VERSION", "22.16.0");
  });

  test("engines.node takes priority over CC_NODE_VERSION", async () => {
    await pier.commit(repo, { "package.json": pkg({ engines: { node: "22.16.0" } }) }, "engines");
    await env("CC_NODE_VERSION", "20");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /engines\.node/);
    assert.equal((await body()).node, "v22.16.0");
  });

  test("CC_TASK=true runs the start command once to completion: no HTTP, no health check", async () => {
    const task = await pier.cliJson<{ id: string }>(["create", "--type", "node", "nodetask"]);
    for (const [k, v] of [
      ["CC_TASK", "true"],
      ["CC_NODE_VERSION", "22.16.0"],
      ["NODE_ENV", "production"],
    ] as const) {
      assert.equal((await pier.cli(["env", "set", k, v, "--app", "nodetask"])).code, 0);
    }
    const files = {
      "package.json": JSON.stringify({ name: "t", version: "1.0.0", scripts: { start: "node task.js" } }),
      "task.js": 'console.log("task ran on instance " + process.env.INSTANCE_NUMBER);',
      ".gitignore": "/node_modules\n",
    };
    const taskRepo = await pier.repo("nodetask", files, task.id);
    const push = await pier.push(taskRepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /task ran on instance 0/);
    assert.doesNotMatch(push.stderr, /Health check/);
    await pier.commit(taskRepo, { "task.js": "process.exit(4);" }, "failing task");
    const failing = await pier.push(taskRepo);
    assert.notEqual(failing.code, 0);
    assert.match(failing.stderr, /exited with code 4/);
  });

  test("CC_WORKER_COMMAND runs a worker beside the web process, restarted when it fails", async () => {
    await env(
      "CC_WORKER_COMMAND",
      "echo worker-tick-$INSTANCE_NUMBER; exit 1",
      "CC_WORKER_RESTART_DELAY",
      "1",
    );
    await pier.commit(repo, { "package.json": pkg() }, "worker");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("nodeapp")).status, 200);
    let logs = "";
    for (let i = 0; i < 40 && (logs.match(/worker-tick-0/g) ?? []).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 250));
      logs = (await pier.cli(["logs", "--app", "nodeapp", "--since", "1m"])).stdout;
    }
    assert.ok((logs.match(/worker-tick-0/g) ?? []).length >= 2, logs.slice(-1500));
    assert.match(logs, /worker 0 exited with code 1/);
  });

  test("yarn.lock selects Yarn Classic; the start script runs through yarn", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "yarnapp"]);
    for (const [k, v] of [
      ["CC_NODE_VERSION", "22.16.0"],
      ["NODE_ENV", "production"],
    ] as const) {
      assert.equal((await pier.cli(["env", "set", k, v, "--app", "yarnapp"])).code, 0);
    }
    const files = {
      "package.json": JSON.stringify({
        name: "y",
        version: "1.0.0",
        scripts: { start: "node server.js" },
        dependencies: { ms: "2.1.3" },
      }),
      "yarn.lock": [
        "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.",
        "# yarn lockfile v1",
        "",
        "",
        "ms@2.1.3:",
        '  version "2.1.3"',
        '  resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#574c8138ce1d2b5861f0b44579dbadd60c6615b2"',
        "  integrity sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==",
        "",
      ].join("\n"),
      "server.js": SERVER.replace('require("is-number")', 'require("ms")'),
      ".gitignore": "/node_modules\n",
    };
    const yarnRepo = await pier.repo(
      "yarnapp",
      { ...files, "old.txt": "removed by the next commit\n" },
      app.id,
    );
    const push = await pier.push(yarnRepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /yarn\.lock/);
    assert.match(push.stderr, /yarn install/);
    const r = JSON.parse((await pier.get("yarnapp")).body) as Body;
    assert.equal(r.twoHours, 7_200_000);

    rmSync(join(yarnRepo, "old.txt"));
    await pier.commit(
      yarnRepo,
      { "server.js": `${files["server.js"]}\n// changed code, same lock file\n` },
      "code only",
    );
    const again = await pier.push(yarnRepo);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /node_modules reused from the current release/);
    assert.doesNotMatch(again.stderr, /-----> Installing dependencies/, "nothing is installed again");
    assert.equal((JSON.parse((await pier.get("yarnapp")).body) as Body).twoHours, 7_200_000);
    // The new release holds the new commit's files only (old.txt is gone), beside the reused node_modules.
    const [release] = await pier.cliJson<{ image: string }[]>(["releases", "--app", "yarnapp"]);
    const files2 = await run([
      "/usr/bin/docker",
      "run",
      "--rm",
      "--entrypoint",
      "sh",
      release?.image ?? "",
      "-c",
      "ls -A /app; tail -n1 /app/server.js",
    ]);
    assert.equal(files2.code, 0, files2.stderr);
    assert.doesNotMatch(files2.stdout, /old\.txt/);
    assert.match(files2.stdout, /node_modules/);
    assert.match(files2.stdout, /changed code, same lock file/);
  });

  test("an app that declares no dependency redeploys without an install, lock file or not; one added is installed", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "plainapp"]);
    const plain = (says: string) =>
      `require("http").createServer((q, s) => s.end(${JSON.stringify(says)})).listen(8080, "0.0.0.0");\n`;
    const noDeps = `${JSON.stringify({ name: "plain", version: "1.0.0", scripts: { start: "node server.js" } })}\n`;
    const plainRepo = await pier.repo(
      "plainapp",
      { "package.json": noDeps, "server.js": plain("one"), ".gitignore": "/node_modules\n" },
      app.id,
    );
    const first = await pier.push(plainRepo);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /-----> Installing dependencies/);
    assert.equal((await pier.get("plainapp")).body, "one");

    await pier.commit(plainRepo, { "server.js": plain("two") }, "code only");
    const again = await pier.push(plainRepo);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /Dependencies unchanged .*node_modules reused from the current release/);
    assert.doesNotMatch(again.stderr, /-----> Installing dependencies/, "nothing to install");
    assert.equal((await pier.get("plainapp")).body, "two");

    const withMs = `${JSON.stringify({ name: "plain", version: "1.0.0", scripts: { start: "node server.js" }, dependencies: { ms: "2.1.3" } })}\n`;
    await pier.commit(
      plainRepo,
      {
        "package.json": withMs,
        "server.js": `require("http").createServer((q, s) => s.end(String(require("ms")("2h")))).listen(8080, "0.0.0.0");\n`,
      },
      "a dependency",
    );
    const added = await pier.push(plainRepo);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stderr, /-----> Installing dependencies/);
    assert.equal((await pier.get("plainapp")).body, "7200000");
  });

  test("CC_NODE_BUILD_TOOL=bun installs with Bun (from the npm registry)", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "bunapp"]);
    for (const [k, v] of [
      ["CC_NODE_VERSION", "22.16.0"],
      ["NODE_ENV", "production"],
      ["CC_NODE_BUILD_TOOL", "bun"],
    ] as const) {
      assert.equal((await pier.cli(["env", "set", k, v, "--app", "bunapp"])).code, 0);
    }
    const files = {
      "package.json": pkg(),
      "server.js": SERVER,
      ".gitignore": "/node_modules\n",
    };
    const bunRepo = await pier.repo("bunapp", files, app.id);
    const push = await pier.push(bunRepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /bun install/);
    const r = JSON.parse((await pier.get("bunapp")).body) as Body;
    assert.equal(r.twoHours, 7_200_000);
    assert.equal(r.dev, false, "bun install --production without dev dependencies");
  });

  test("the pnpm recipe of section 9: custom tool, pre-build hook installs pnpm; --without-cache empties the cache", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "pnpmapp"]);
    for (const [k, v] of [
      ["CC_NODE_VERSION", "22.16.0"],
      ["NODE_ENV", "production"],
      ["CC_NODE_BUILD_TOOL", "custom"],
      ["CC_PRE_BUILD_HOOK", "npm install -g --no-audit --no-fund pnpm@9"],
      ["CC_CUSTOM_BUILD_TOOL", "pnpm install --prod"],
      ["CC_RUN_COMMAND", "node server.js"],
    ] as const) {
      assert.equal((await pier.cli(["env", "set", k, v, "--app", "pnpmapp"])).code, 0);
    }
    const pnpmRepo = await pier.repo(
      "pnpmapp",
      { "package.json": pkg(), "server.js": SERVER, ".gitignore": "/node_modules\n" },
      app.id,
    );
    const push = await pier.push(pnpmRepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /using pnpm v9/);
    const r = JSON.parse((await pier.get("pnpmapp")).body) as Body;
    assert.equal(r.twoHours, 7_200_000);
    const clean = await pier.cli(["restart", "--without-cache", "--app", "pnpmapp"]);
    assert.equal(clean.code, 0, clean.stderr);
    assert.match(clean.stderr, /dependency cache of this app is emptied/);
  });

  test("pier runtimes node lists versions with LTS and end-of-life marked", async () => {
    const versions = await pier.cliJson<{ version: string; lts: string | null; eol: boolean }[]>([
      "runtimes",
      "node",
    ]);
    assert.ok(versions.some((v) => v.version.startsWith("22.") && v.lts));
    assert.ok(versions.some((v) => v.eol));
    const human = await pier.cli(["runtimes", "node"]);
    assert.match(human.stdout, /LTS/);
  });
});
