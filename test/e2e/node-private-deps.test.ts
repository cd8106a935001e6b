// Private dependencies (contract section 5.2), end to end: an app's private SSH key, stored encrypted, lets
// its build install a git+ssh:// dependency from a private repository on Pier's own git server (reached
// through the server's unix socket, host key pinned), fetched with a read-only deploy key.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier } from "./harness.js";

const LIB = {
  "package.json": `${JSON.stringify({ name: "private-lib", version: "1.0.0", main: "index.js", scripts: { start: "node server.js" } }, null, 2)}\n`,
  "index.js": 'module.exports = { greeting: "hello from a private repository" };\n',
  // The library's own repository is an app too (a push deploys it): a tiny server keeps that deploy green.
  "server.js":
    'require("http").createServer((q, s) => s.end(require("./index").greeting)).listen(8080, "0.0.0.0");\n',
};

const webPackage = (libUrl: string) =>
  `${JSON.stringify({ name: "web", version: "1.0.0", scripts: { start: "node server.js" }, dependencies: { "private-lib": libUrl } }, null, 2)}\n`;

const WEB_SERVER = `
require("http").createServer((q, s) => s.end(require("private-lib").greeting)).listen(8080, "0.0.0.0");
`;

describe("Node.js private dependencies over SSH", { timeout: 600_000 }, () => {
  const pier = new Pier();
  let lib = { id: "", gitUrl: "" };
  let web = "";
  let deployKey = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    lib = await pier.cliJson<{ id: string; gitUrl: string }>(["create", "--type", "node", "private-lib"]);
    const libRepo = await pier.repo("private-lib", LIB, lib.id);
    const pushed = await pier.push(libRepo);
    assert.equal(pushed.code, 0, pushed.stderr);
    // No version asked for: the newest LTS, saying so; the mandatory conditions it misses are called out.
    assert.match(
      pushed.stderr,
      /neither engines\.node in package\.json nor CC_NODE_VERSION is set, so the newest LTS/,
    );
    assert.match(pushed.stderr, /There is no \.gitignore: add one with the line \/node_modules/);
    assert.match(pushed.stderr, /NODE_ENV is not set: set NODE_ENV=production/);

    deployKey = join(pier.work, "deploy_key");
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "web-deploy", "-f", deployKey]);
    const webApp = await pier.cliJson<{ id: string }>(["create", "--type", "node", "web"]);
    web = await pier.repo(
      "web",
      { "package.json": webPackage(lib.gitUrl), "server.js": WEB_SERVER, ".gitignore": "/node_modules\n" },
      webApp.id,
    );
  });
  after(() => pier.destroy());

  /** The store's files (database and write-ahead log) whose bytes contain `text`. */
  const storeFilesHolding = (text: string) =>
    ["pier.db", "pier.db-wal"].filter((f) => {
      const path = join(pier.dataDir, f);
      return existsSync(path) && readFileSync(path, "latin1").includes(text);
    });

  test("without a private key the git dependency cannot be fetched, and the deploy fails", async () => {
    const push = await pier.push(web);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /Permission denied \(publickey\)/);
    assert.match(push.stderr, /pier ssh-private-key set FILE/, "the failure says how to give the app a key");
  });

  test("ssh-private-key set refuses a public key and a passphrase-protected key, naming the problem", async () => {
    const pub = await pier.cli(["ssh-private-key", "set", `${deployKey}.pub`, "--app", "web"]);
    assert.notEqual(pub.code, 0);
    assert.match(pub.stderr, /not a private key/);
    const locked = join(pier.work, "locked_key");
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "secret-pass", "-f", locked]);
    const r = await pier.cli(["ssh-private-key", "set", locked, "--app", "web"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /passphrase/);
  });

  test("a key granted on another app than the library's cannot fetch it, and the deploy says what to do", async () => {
    const set = await pier.cli(["ssh-private-key", "set", deployKey, "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    const added = await pier.cli(["ssh-keys", "add", `${deployKey}.pub`, "--app", "web", "--read-only"]);
    assert.equal(added.code, 0, added.stderr);
    const push = await pier.push(web);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /may not reach app '[^']+', or there is no such app/);
    assert.match(push.stderr, /pier ssh-keys add KEY\.pub --app <the dependency's app> --read-only/);
    const rm = await pier.cli(["ssh-keys", "rm", "web-deploy", "--app", "web"]);
    assert.equal(rm.code, 0, rm.stderr);
  });

  test("with the key set and its public half granted read-only on the library's app, the build installs the dependency", async () => {
    const set = await pier.cli(["ssh-private-key", "set", deployKey, "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    const pub = readFileSync(`${deployKey}.pub`, "utf8").trim().split(" ").slice(0, 2).join(" ");
    assert.ok(set.stdout.includes(pub), "set prints the public half");
    const shown = await pier.cliJson<{ fingerprint: string; publicKey: string }>([
      "ssh-private-key",
      "--app",
      "web",
    ]);
    assert.equal(shown.publicKey, pub);
    // Granted on the library's app only, fetch only: the key reaches nothing else (ADR 0008).
    const added = await pier.cli([
      "ssh-keys",
      "add",
      `${deployKey}.pub`,
      "--app",
      "private-lib",
      "--read-only",
    ]);
    assert.equal(added.code, 0, added.stderr);

    await pier.commit(web, {}, "with the deploy key");
    const push = await pier.push(web);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /private SSH key/);
    assert.equal((await pier.get("web")).body, "hello from a private repository");

    // The key never reaches a log, nor the database file in clear.
    const key = readFileSync(deployKey, "utf8");
    const keyBody = key.split("\n")[1] ?? "";
    assert.ok(keyBody.length > 20);
    assert.ok(!push.stderr.includes(keyBody), "the push log does not hold the key");
    const logs = await pier.cli(["logs", "--app", "web", "--deployment", "latest"]);
    assert.ok(!logs.stdout.includes(keyBody));
    for (const text of [keyBody, "BEGIN OPENSSH PRIVATE KEY"]) {
      assert.deepEqual(storeFilesHolding(text), [], "the database does not hold a private key in clear");
    }
  });

  test("the deploy key cannot push the library, nor reach another app", async () => {
    const env = pier.gitEnv(deployKey);
    const { run } = await import("./harness.js");
    const libDir = join(pier.work, "src", "private-lib");
    await pier.commit(libDir, { "x.txt": "x\n" }, "by the deploy key");
    const denied = await run(["git", "-C", libDir, "push", "pier", "master"], { env, timeoutMs: 60_000 });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /read-only deploy key on app 'private-lib'/);
    await pier.commit(web, { "x.txt": "x\n" }, "by the deploy key");
    const other = await run(["git", "-C", web, "push", "pier", "master"], { env, timeoutMs: 60_000 });
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /may not reach app/);
    const clone = await run(["git", "ls-remote", "pier"], { env, cwd: web, timeoutMs: 60_000 });
    assert.notEqual(clone.code, 0, "nor fetch it");
  });

  test("variable values are stored encrypted", async () => {
    const secret = "s3cr3t-value-that-must-not-be-in-the-db-file";
    const r = await pier.cli(["env", "set", "API_SECRET", secret, "--app", "web"]);
    assert.equal(r.code, 0, r.stderr);
    // A secret name: masked when listed (ADR 0024), given back to a token that may reveal it.
    const listed = await pier.cliJson<Record<string, string>>(["env", "--app", "web"]);
    assert.equal(JSON.stringify(listed).includes(secret), false, "listed masked");
    const shown = await pier.cliJson<Record<string, string>>(["env", "--reveal", "--app", "web"]);
    assert.equal(JSON.stringify(shown).includes(secret), true, "the API still gives the value back");
    assert.deepEqual(storeFilesHolding(secret), [], "the database does not hold the value in clear");
  });
});
