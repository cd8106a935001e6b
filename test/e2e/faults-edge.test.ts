// HAProxy killed under a running pier server: the watchdog notices within about a second, starts it again
// with the current routes, says so in the server log, and the apps answer again within a few seconds.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { markedApp, waitFor } from "./faults-harness.js";
import { Pier } from "./harness.js";

describe("HAProxy killed", { timeout: 600_000 }, () => {
  const pier = new Pier();
  let repo = "";
  const edgePid = () => Number(readFileSync(join(pier.dataDir, "edge", "haproxy.pid"), "utf8").trim());
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z");
    } catch {
      return false;
    }
  };
  /** How many times the server log says the watchdog started HAProxy again. */
  const restarts = () =>
    pier.output.match(/the edge \(HAProxy\) is not running: starting it again with the current routes/g)
      ?.length ?? 0;
  /** SIGKILLs HAProxy; returns the ms until the app answered 200 again (a diagnostic, not asserted). */
  async function killEdge(): Promise<number> {
    const pid = edgePid();
    assert.ok(alive(pid));
    process.kill(pid, "SIGKILL");
    const killed = Date.now();
    await waitFor("HAProxy to die", async () => !alive(pid), 5000);
    await waitFor(
      "the app to answer again through the edge",
      async () => (await pier.get("e")).body === "mark=e1",
      10_000,
    );
    return Date.now() - killed;
  }

  before(async () => {
    await pier.start();
    await pier.addKey();
    const id = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "e"])).id;
    repo = await pier.repo("e", markedApp("e1"), id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("e")).body, "mark=e1");
  });
  after(async () => {
    await pier.destroy();
  });

  test("Pier starts it again with the current routes within a few seconds, and logs it", async (t) => {
    const before = edgePid();
    const ms = await killEdge();
    t.diagnostic(`routes served again ${ms} ms after the kill`);
    assert.notEqual(edgePid(), before, "a new HAProxy process serves");
    assert.match(
      pier.output,
      /the edge \(HAProxy\) is not running: starting it again with the current routes/,
    );
    assert.equal((await pier.get("nope")).status, 404, "unknown hosts still get the edge's 404");
  });

  test("the restarted edge takes route changes: a deploy switches it, and a second kill is survived too", async () => {
    await pier.commit(repo, markedApp("e2"), "e2");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("e")).body, "mark=e2");
    await pier.commit(repo, markedApp("e1"), "back to e1");
    assert.equal((await pier.push(repo)).code, 0);
    const [pid, logged] = [edgePid(), restarts()];
    await killEdge();
    assert.notEqual(edgePid(), pid, "a new HAProxy process serves again");
    assert.ok(restarts() > logged, "the watchdog started it again, and said so");
  });

  test("killed while pier server is down: pier server starts it on its start", async () => {
    pier.kill();
    process.kill(edgePid(), "SIGKILL");
    await pier.start();
    await waitFor("the app", async () => (await pier.get("e")).body === "mark=e1", 10_000);
  });
});
