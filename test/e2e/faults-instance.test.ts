// Instances that exit: one that exits at once fails its deploy at the gate, with its last output in the deploy
// log, and the release before keeps serving; one of a live release that crashes later is restarted by the
// engine with backoff, and `pier status` counts the restarts and shows the last exit code.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { markedApp, waitFor } from "./faults-harness.js";
import { Pier, run } from "./harness.js";

interface Status {
  state: string;
  instances: { number: number; state: string; restarts: number; lastExit: { code: number | null } | null }[];
}

describe("instances that exit", { timeout: 600_000 }, () => {
  const pier = new Pier();
  let repo = "";
  let id = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    id = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "x"])).id;
    repo = await pier.repo("x", markedApp("x1"), id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
  });
  after(async () => {
    await pier.destroy();
  });

  test("an instance that exits at once fails the deploy at the gate, with its last output", async () => {
    await pier.commit(repo, markedApp("x2", { exitAtOnce: true }), "boom");
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /Last output of instance 0:/);
    assert.match(push.stderr, /remote: {3}boom/);
    assert.match(push.stderr, /remote: {3}the end/, "stderr lines too");
    assert.match(push.stderr, /Instance 0 exited with code 3/);
    assert.match(push.stderr, /Deployment failed/);
    // The exit is seen as it happens: the gate did not wait for its listen timeout (that says "did not listen").
    assert.doesNotMatch(push.stderr, /did not listen on 0\.0\.0\.0:8080 within/);
    const deps = await pier.cliJson<{ id: string; state: string; reason: string }[]>([
      "deployments",
      "--app",
      "x",
    ]);
    assert.equal(deps[0]?.state, "failed");
    assert.match(deps[0]?.reason ?? "", /exited with code 3/);
    assert.equal((await pier.get("x")).body, "mark=x1", "the previous release serves");
    const left = await run(["docker", "ps", "-a", "-q", "--filter", `label=pier.deployment=${deps[0]?.id}`]);
    assert.equal(left.stdout.trim(), "", "the failed instance does not stay in a restart loop");
  });

  test("a live instance that crashes is restarted with backoff; pier status counts it", async () => {
    const crashes = 3;
    const upAgain: number[] = [];
    for (let n = 1; n <= crashes; n++) {
      const t0 = Date.now();
      assert.equal((await pier.get("x", "/crash")).body, "bye");
      await waitFor(
        `restart ${n}`,
        async () => {
          const s = await pier.cliJson<Status>(["status", "--app", "x"]);
          return s.instances[0]?.restarts === n && (await pier.get("x")).body === "mark=x1";
        },
        60_000,
      );
      upAgain.push(Date.now() - t0);
    }
    const s = await pier.cliJson<Status>(["status", "--app", "x"]);
    assert.equal(s.state, "running");
    assert.equal(s.instances[0]?.restarts, crashes);
    assert.equal(s.instances[0]?.lastExit?.code, 3);
    // The engine waits longer before each restart of an instance that keeps crashing (100 ms, 200 ms, ...).
    assert.ok(upAgain[crashes - 1]! >= 300, `restart delays: ${upAgain.join(", ")} ms`);
    const human = await pier.cli(["status", "--app", "x"]);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /RESTARTS/i);
    assert.match(human.stdout, new RegExp(`\\b${crashes}\\b.*\\b3 at `));
    const logs = await pier.cli(["logs", "--app", "x"]);
    assert.match(logs.stdout, /crashing on purpose/);
  });
});
