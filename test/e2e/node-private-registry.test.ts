// A private npm registry (contract section 5.1), end to end: a real Verdaccio (from the npm registry) that
// requires a token, run in a container on a network this test creates; Pier's builds join that network
// (PIER_BUILD_NETWORK). NPM_TOKEN + CC_NPM_REGISTRY make the build's .npmrc; the token never reaches a log.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const DOCKER = "/usr/bin/docker";
const VERDACCIO = "6.10.4";

/** Verdaccio installed once into Pier's cache folder (about 20 s the first time). */
async function verdaccioDir(): Promise<string> {
  const dir = join(
    process.env.PIER_CACHE_DIR ?? join(homedir(), ".cache", "pier"),
    "test-tools",
    `verdaccio-${VERDACCIO}`,
  );
  if (existsSync(join(dir, "node_modules", ".installed"))) return dir;
  mkdirSync(dir, { recursive: true });
  // verdaccio-audit asks for node-fetch@cjs, a dist-tag registry mirrors may not carry: pinned to what it names.
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      private: true,
      dependencies: { verdaccio: VERDACCIO },
      overrides: { "node-fetch": "2.7.0" },
    }),
  );
  const r = await run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: dir,
    timeoutMs: 300_000,
  });
  assert.equal(r.code, 0, `installing verdaccio failed: ${r.stderr}`);
  writeFileSync(join(dir, "node_modules", ".installed"), "");
  return dir;
}

const CONFIG = `storage: /conf/storage
auth:
  htpasswd:
    file: /conf/htpasswd
    max_users: 10
uplinks: {}
packages:
  '**':
    access: $authenticated
    publish: $authenticated
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
`;

const SERVER = `
const { greeting } = require("@private/greeting");
require("http").createServer((q, s) => s.end(greeting)).listen(8080, "0.0.0.0");
`;

describe("Node.js private npm registry", { timeout: 600_000 }, () => {
  const suffix = randomBytes(4).toString("hex");
  const network = `pier-e2e-registry-${suffix}`;
  const container = `pier-e2e-verdaccio-${suffix}`;
  const pier = new Pier({ PIER_BUILD_NETWORK: network });
  let token = "";
  let repo = "";

  const inRegistry = (script: string) =>
    run([DOCKER, "exec", container, "node", "-e", script], { timeoutMs: 30_000 });

  before(async () => {
    const tools = await verdaccioDir();
    const conf = join(pier.work, "verdaccio");
    mkdirSync(join(conf, "pkg"), { recursive: true });
    writeFileSync(join(conf, "config.yaml"), CONFIG);
    writeFileSync(
      join(conf, "pkg", "package.json"),
      JSON.stringify({ name: "@private/greeting", version: "1.0.0", main: "index.js" }),
    );
    writeFileSync(
      join(conf, "pkg", "index.js"),
      'module.exports = { greeting: "hello from a private registry" };\n',
    );

    let r = await run([DOCKER, "network", "create", "--label", "pier.e2e=true", network]);
    assert.equal(r.code, 0, r.stderr);
    r = await run([
      DOCKER,
      "run",
      "-d",
      "--name",
      container,
      "--label",
      "pier.e2e=true",
      "--network",
      network,
      "--network-alias",
      "registry",
      "-v",
      `${tools}:/opt/verdaccio:ro`,
      "-v",
      `${conf}:/conf`,
      "pier/node:22",
      "node",
      "/opt/verdaccio/node_modules/verdaccio/bin/verdaccio",
      "-c",
      "/conf/config.yaml",
      "-l",
      "0.0.0.0:4873",
    ]);
    assert.equal(r.code, 0, r.stderr);
    for (let i = 0; ; i++) {
      const ping = await inRegistry(
        'fetch("http://localhost:4873/-/ping").then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))',
      );
      if (ping.code === 0) break;
      assert.ok(i < 60, `verdaccio did not answer: ${(await run([DOCKER, "logs", container])).stderr}`);
      await new Promise((res) => setTimeout(res, 500));
    }
    // A user (htpasswd) and its token, then the private package published with it.
    const user = await inRegistry(`
      fetch("http://localhost:4873/-/user/org.couchdb.user:e2e", {
        method: "PUT", headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "e2e", password: "e2e-password" }),
      }).then(async (r) => { const b = await r.json(); if (!b.token) { console.error(JSON.stringify(b)); process.exit(1); } console.log(b.token); });`);
    assert.equal(user.code, 0, user.stderr);
    token = user.stdout.trim();
    const pub = await run(
      [
        DOCKER,
        "exec",
        "-e",
        `TOKEN=${token}`,
        "-w",
        "/conf/pkg",
        container,
        "sh",
        "-c",
        'echo "//localhost:4873/:_authToken=$TOKEN" > /tmp/npmrc && npm publish --userconfig /tmp/npmrc --registry http://localhost:4873/',
      ],
      { timeoutMs: 60_000 },
    );
    assert.equal(pub.code, 0, pub.stderr);

    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "regapp"]);
    repo = await pier.repo(
      "regapp",
      {
        "package.json": `${JSON.stringify({ name: "regapp", version: "1.0.0", scripts: { start: "node server.js" }, dependencies: { "@private/greeting": "1.0.0" } })}\n`,
        ".npmrc": "@private:registry=http://registry:4873/\n",
        ".gitignore": "/node_modules\n",
        "server.js": SERVER,
      },
      app.id,
    );
    for (const [k, v] of [
      ["CC_NODE_VERSION", "22.16.0"],
      ["NODE_ENV", "production"],
      ["CC_NPM_REGISTRY", "registry:4873"],
    ] as const) {
      const set = await pier.cli(["env", "set", k, v, "--app", "regapp"]);
      assert.equal(set.code, 0, set.stderr);
    }
  });
  after(async () => {
    await pier.destroy();
    await run([DOCKER, "rm", "-f", container]);
    await run([DOCKER, "network", "rm", network]);
  });

  test("without NPM_TOKEN the registry refuses the install and the deploy fails", async () => {
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /E401|401|authori[sz]ation required/i);
    assert.match(push.stderr, /CC_NPM_REGISTRY is set but NPM_TOKEN is not/);
  });

  test("with NPM_TOKEN the build writes .npmrc for CC_NPM_REGISTRY and installs; the token is in no log", async () => {
    const set = await pier.cli(["env", "set", "NPM_TOKEN", token, "--app", "regapp"]);
    assert.equal(set.code, 0, set.stderr);
    await pier.commit(repo, {}, "with the token");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Writing \.npmrc with the NPM_TOKEN of registry:4873/);
    assert.equal((await pier.get("regapp")).body, "hello from a private registry");
    assert.ok(!push.stderr.includes(token), "the push log does not hold the token");
    const logs = await pier.cli(["logs", "--app", "regapp", "--deployment", "latest"]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.ok(!logs.stdout.includes(token), "the deploy log does not hold the token");
    const inImage = await run([
      DOCKER,
      "run",
      "--rm",
      "--entrypoint",
      "sh",
      await releaseImage(),
      "-c",
      "cat /app/.npmrc; env",
    ]);
    assert.ok(!inImage.stdout.includes(token), "the release image holds neither the token nor its .npmrc");
  });

  async function releaseImage(): Promise<string> {
    const releases = await pier.cliJson<{ image: string }[]>(["releases", "--app", "regapp"]);
    assert.ok(releases[0]);
    return releases[0].image;
  }
});

test("PIER_BUILD_NETWORK naming a network that does not exist stops pier server at start, saying so", async () => {
  const pier = new Pier({ PIER_BUILD_NETWORK: `pier-e2e-missing-${randomBytes(4).toString("hex")}` });
  try {
    await assert.rejects(
      pier.start(),
      /PIER_BUILD_NETWORK: there is no Docker network named 'pier-e2e-missing-/,
    );
  } finally {
    await pier.destroy();
  }
});
