// The deploy queue: one deployment at a time per app, a newer one supersedes a queued one, cancel, time
// limit, size limit, and a deployment interrupted by a restart of the control plane ends as failed.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier, type RunResult } from "./harness.js";

interface Dep {
  id: string;
  state: string;
  reason: string | null;
  cause: string;
}

const slow = (seconds: number) => ({
  ...NODE_DOCKER_APP,
  Dockerfile: NODE_DOCKER_APP.Dockerfile!.replace(
    "WORKDIR /app",
    `WORKDIR /app\nCOPY nonce.txt .\nRUN sleep ${seconds}`,
  ),
  "nonce.txt": randomBytes(8).toString("hex"),
});

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  ms = 60_000,
): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("deploy queue", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let repo = "";
  const deployments = () => pier.cliJson<Dep[]>(["deployments", "--app", "q"]);

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "q"]);
    repo = await pier.repo("q", NODE_DOCKER_APP, app.id);
    const first = await pier.push(repo);
    assert.equal(first.code, 0, first.stderr);
  });
  after(async () => {
    await pier.destroy();
  });

  test("a newer deployment supersedes a queued one; cancel stops the running one", async () => {
    await pier.commit(repo, slow(6), "slow");
    const pushing = pier.push(repo);
    await waitFor("the push to build", async () => (await deployments())[0]?.state === "building");
    const b = await pier.cli(["restart", "--exit-on", "deploy-start", "--app", "q"]);
    assert.equal(b.code, 0, b.stderr);
    const c = await pier.cli(["restart", "--exit-on", "deploy-start", "--app", "q"]);
    assert.equal(c.code, 0, c.stderr);
    let list = await deployments();
    assert.equal(list[0]?.state, "queued");
    assert.equal(list[1]?.state, "cancelled");
    assert.match(list[1]?.reason ?? "", /Superseded/);
    assert.equal(list[2]?.state, "building");

    const cancel = await pier.cli(["cancel-deploy", "--app", "q"]);
    assert.equal(cancel.code, 0, cancel.stderr);
    const push: RunResult = await pushing;
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /cancelled/i);

    await waitFor(
      "the queued restart to succeed",
      async () => (await deployments())[0]?.state === "succeeded",
    );
    list = await deployments();
    assert.equal(list[2]?.state, "cancelled");
    assert.equal((await pier.get("q")).status, 200);
  });

  test("concurrent pushes to one app: both get an answer, the app keeps serving", async () => {
    const other = await pier.repo(
      "q2",
      NODE_DOCKER_APP,
      (await pier.cliJson<{ app: { id: string } }>(["status", "--app", "q"])).app.id,
    );
    await pier.commit(other, { "server.js": `${NODE_DOCKER_APP["server.js"]}\n// other\n` }, "other");
    await pier.commit(repo, { "server.js": `${NODE_DOCKER_APP["server.js"]}\n// mine\n` }, "mine");
    const [a, b] = await Promise.all([
      pier.push(repo, "master", ["--force"]),
      pier.push(other, "master", ["--force"]),
    ]);
    assert.ok(a.code === 0 || b.code === 0, `${a.stderr}\n${b.stderr}`);
    assert.equal((await pier.get("q")).status, 200);
    const list = await deployments();
    assert.ok(list.every((d) => ["succeeded", "failed", "cancelled"].includes(d.state)));
  });

  test("a deployment interrupted by a crash of pier server ends as failed, with the reason", async () => {
    await pier.commit(repo, slow(8), "interrupted");
    const pushing = pier.push(repo, "master", ["--force"]);
    await waitFor("the push to build", async () => (await deployments())[0]?.state === "building");
    pier.kill();
    const push = await pushing;
    assert.notEqual(push.code, 0);
    assert.equal((await pier.get("q")).status, 200, "the app serves without the control plane");
    await pier.start();
    const d = (await deployments())[0];
    assert.equal(d?.state, "failed");
    assert.match(d?.reason ?? "", /Interrupted/);
    assert.equal((await pier.get("q")).status, 200);
  });
});

describe("deploy limits", { timeout: 600_000 }, () => {
  const pier = new Pier({ PIER_DEPLOY_TIMEOUT: "6", PIER_MAX_PUSH_BYTES: "300000" });
  let id = "";
  before(async () => {
    await pier.start();
    await pier.addKey();
    id = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "lim"])).id;
  });
  after(async () => {
    await pier.destroy();
  });

  test("a deployment that exceeds its time limit fails and says so", async () => {
    const repo = await pier.repo("lim", slow(30), id);
    const started = Date.now();
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /time limit \(6 s\)/);
    assert.ok(Date.now() - started < 25_000, "the build was stopped, not waited for");
  });

  test("a push larger than PIER_MAX_PUSH_BYTES is refused", async () => {
    const repo = await pier.repo(
      "big",
      { ...NODE_DOCKER_APP, "blob.bin": randomBytes(600_000).toString("base64") },
      id,
    );
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /maximum allowed size|larger than the limit/);
  });
});
