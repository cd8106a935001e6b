// The Node.js lifecycle (contract sections 3, 4.4, 8, 9) and its bad input, end to end on real pushes:
// npm's install scripts and prestart/poststart, Pier's build and run hooks, CC_RUN_COMMAND, and every
// planning error ending the deploy with a message while the previous release keeps serving.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const SERVER = `
const fs = require("fs");
const has = (f) => fs.existsSync(f);
require("http").createServer((q, s) => {
  s.setHeader("content-type", "application/json");
  s.end(JSON.stringify({
    which: process.env.WHICH || "server.js",
    postinstall: has("/app/postinstall.txt"),
    postBuildHook: has("/app/post-build.txt"),
    prestart: has("/tmp/prestart.txt"),
    preRunHook: has("/tmp/pre-run.txt"),
    npmPackageName: process.env.npm_package_name || null,
  }));
}).listen(8080, "0.0.0.0");
`;

const pkg = (scripts: Record<string, string>, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ name: "lifecycle", version: "1.0.0", scripts, ...extra }, null, 2)}\n`;

const SCRIPTS = {
  postinstall: "echo postinstall > postinstall.txt",
  prestart: "echo prestart > /tmp/prestart.txt",
  start: "node server.js",
};

interface Body {
  which: string;
  postinstall: boolean;
  postBuildHook: boolean;
  prestart: boolean;
  preRunHook: boolean;
  npmPackageName: string | null;
}

describe("Node.js lifecycle and bad input", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let repo = "";
  const set = async (name: string, value: string, app = "life") => {
    const r = await pier.cli(["env", "set", name, value, "--app", app]);
    assert.equal(r.code, 0, r.stderr);
  };
  const unset = async (name: string, app = "life") => {
    const r = await pier.cli(["env", "rm", name, "--app", app]);
    assert.equal(r.code, 0, r.stderr);
  };
  const body = async () => JSON.parse((await pier.get("life")).body) as Body;

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "life"]);
    await set("CC_NODE_VERSION", "22.16.0");
    await set("NODE_ENV", "production");
    repo = await pier.repo(
      "life",
      {
        "package.json": pkg(SCRIPTS),
        "server.js": SERVER,
        "other.js": SERVER,
        ".gitignore": "/node_modules\n",
      },
      app.id,
    );
  });
  after(() => pier.destroy());

  test("postinstall in the build, CC_POST_BUILD_HOOK after it, CC_PRE_RUN_HOOK and prestart before the start", async () => {
    await set("CC_POST_BUILD_HOOK", "echo built > /app/post-build.txt");
    await set("CC_PRE_RUN_HOOK", "echo pre-run > /tmp/pre-run.txt");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Start command: npm start/, "with prestart, npm runs the start script");
    const b = await body();
    assert.equal(b.postinstall, true, "postinstall ran in the build (its file is in the image)");
    assert.equal(b.postBuildHook, true, "CC_POST_BUILD_HOOK ran in the build");
    assert.equal(b.preRunHook, true, "CC_PRE_RUN_HOOK ran in the instance before the start command");
    assert.equal(b.prestart, true, "prestart ran in the instance before the start command");
    assert.equal(b.npmPackageName, "lifecycle");
  });

  test("a plain node start script runs directly, with npm's variables", async () => {
    await unset("CC_PRE_RUN_HOOK");
    await pier.commit(repo, { "package.json": pkg({ start: "node server.js" }) }, "no prestart");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Start command: node server\.js \(scripts\.start, run directly/);
    const b = await body();
    assert.equal(b.npmPackageName, "lifecycle");
    assert.equal(b.prestart, false);
  });

  test("CC_RUN_COMMAND replaces the start command", async () => {
    await set("CC_RUN_COMMAND", "WHICH=other.js node other.js");
    await pier.commit(repo, {}, "run command");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await body()).which, "other.js");
    await unset("CC_RUN_COMMAND");
  });

  test("poststart runs after the start command (a task app, whose start ends)", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "lifetask"]);
    await set("CC_NODE_VERSION", "22.16.0", "lifetask");
    await set("CC_TASK", "true", "lifetask");
    const taskRepo = await pier.repo(
      "lifetask",
      {
        "package.json": pkg({
          start: "node -e \"console.log('task body ran')\"",
          poststart: "echo poststart ran",
        }),
        ".gitignore": "/node_modules\n",
      },
      app.id,
    );
    const push = await pier.push(taskRepo);
    assert.equal(push.code, 0, push.stderr);
    const body = push.stderr.indexOf("task body ran");
    const post = push.stderr.indexOf("poststart ran");
    assert.ok(body >= 0 && post > body, `poststart after the start script:\n${push.stderr}`);
  });

  test("CC_NODE_BUILD_TOOL=npm-ci installs exactly the lock file with npm ci", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "lifeci"]);
    await set("CC_NODE_VERSION", "22.16.0", "lifeci");
    await set("NODE_ENV", "production", "lifeci");
    await set("CC_NODE_BUILD_TOOL", "npm-ci", "lifeci");
    const lockDir = join(pier.work, "lifeci-lock");
    mkdirSync(lockDir, { recursive: true });
    const manifest = pkg(
      {
        start:
          "node -e \"require('ms'); require('http').createServer((q, s) => s.end(require('ms')('1h') + '')).listen(8080, '0.0.0.0')\"",
      },
      { dependencies: { ms: "2.1.3" } },
    );
    writeFileSync(join(lockDir, "package.json"), manifest);
    const locked = await run(
      [
        "npm",
        "install",
        "--package-lock-only",
        "--no-audit",
        "--no-fund",
        "--omit-lockfile-registry-resolved=false",
      ],
      { cwd: lockDir, timeoutMs: 120_000 },
    );
    assert.equal(locked.code, 0, locked.stderr);
    const ciRepo = await pier.repo(
      "lifeci",
      {
        "package.json": manifest,
        "package-lock.json": readFileSync(join(lockDir, "package-lock.json"), "utf8"),
        ".gitignore": "/node_modules\n",
      },
      app.id,
    );
    const push = await pier.push(ciRepo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /npm ci/);
    assert.equal((await pier.get("lifeci")).body, "3600000");
  });

  // Each of these stops the deploy while planning, with a message naming the problem, and the release
  // above keeps serving.
  const bad: [string, Record<string, string>, Record<string, string>, RegExp][] = [
    ["invalid JSON in package.json", {}, { "package.json": '{ "name": "x", ' }, /package\.json/],
    [
      "an unknown CC_NODE_BUILD_TOOL",
      { CC_NODE_BUILD_TOOL: "pnpm" },
      {},
      /CC_NODE_BUILD_TOOL.*pnpm.*(bun|npm|custom)/s,
    ],
    ["custom without CC_CUSTOM_BUILD_TOOL", { CC_NODE_BUILD_TOOL: "custom" }, {}, /CC_CUSTOM_BUILD_TOOL/],
    [
      "an engines.node range that no release satisfies",
      {},
      { "package.json": pkg({ start: "node server.js" }, { engines: { node: ">=99" } }) },
      /engines\.node/,
    ],
    [
      "conflicting lock files (bun.lock and yarn.lock)",
      {},
      { "bun.lock": "{}\n", "yarn.lock": "# yarn lockfile v1\n" },
      /Conflicting lock files/,
    ],
    ["a Node.js version that does not exist", { CC_NODE_VERSION: "99" }, {}, /CC_NODE_VERSION/],
  ];
  for (const [what, vars, files, message] of bad) {
    test(`${what}: the deploy fails saying so; the previous release keeps serving`, async () => {
      const before = await body();
      for (const [k, v] of Object.entries(vars)) await set(k, v);
      await pier.commit(repo, files, what);
      const push = await pier.push(repo);
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, message);
      assert.deepEqual(await body(), before, "the previous release answers as before");
      // Back to a good state for the next case.
      for (const k of Object.keys(vars)) await unset(k);
      if (vars.CC_NODE_VERSION) await set("CC_NODE_VERSION", "22.16.0");
      await run(["git", "-C", repo, "reset", "-q", "--hard", "HEAD~1"]);
    });
  }
});
