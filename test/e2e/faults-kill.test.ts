// SIGKILL of `pier server` during a build, during the health gate and during the switch: the app keeps
// answering 200 through the edge from the old or the new release (never neither), the deployment ends
// `failed` or `succeeded` once pier server is back (matching what serves), and the push that waited on the
// deploy exits non-zero with a line saying so.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { failures, livePush, markedApp, waitFor, watchApp } from "./faults-harness.js";
import { Pier, run } from "./harness.js";

interface Dep {
  id: string;
  state: string;
  reason: string | null;
}

describe("SIGKILL of pier server during a deploy", { timeout: 900_000 }, () => {
  const pier = new Pier({ PIER_LISTEN_TIMEOUT: "60", PIER_LOG_LEVEL: "info" });
  let repo = "";
  let id = "";
  const deployments = () => pier.cliJson<Dep[]>(["deployments", "--app", "k"]);
  const serving = async () => (await pier.get("k")).body;
  const containersOf = async (deploymentId: string) =>
    (
      await run(["docker", "ps", "-a", "-q", "--filter", `label=pier.deployment=${deploymentId}`])
    ).stdout.trim();

  before(async () => {
    await pier.start();
    await pier.addKey();
    id = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "k"])).id;
    repo = await pier.repo("k", markedApp("v1"), id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal(await serving(), "mark=v1");
  });
  after(async () => {
    await pier.destroy();
  });

  /**
   * Pushes `files`, kills pier server once the push printed `when` (plus `delayMs`), restarts it. With
   * `freezeEdge`, HAProxy is stopped (SIGSTOP) once the push printed that, and continued after the kill:
   * the switch then hangs on the edge's runtime API, and the kill lands inside it.
   */
  async function killDuring(
    files: Record<string, string>,
    when: RegExp,
    delayMs = 0,
    freezeEdge: RegExp | null = null,
  ) {
    await pier.commit(repo, files, `deploy ${files.Dockerfile}`);
    const watch = watchApp(pier, "k");
    const push = livePush(pier, repo);
    const edgePid = Number(readFileSync(join(pier.dataDir, "edge", "haproxy.pid"), "utf8").trim());
    if (freezeEdge) {
      await push.waitFor(freezeEdge);
      process.kill(edgePid, "SIGSTOP");
    }
    await push.waitFor(when);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const killedAt = Date.now();
    pier.kill();
    if (freezeEdge) process.kill(edgePid, "SIGCONT");
    const pushed = await push.done;
    await new Promise((r) => setTimeout(r, 1000));
    await pier.start();
    const d = await waitFor("the deployment to end", async () => {
      const last = (await deployments())[0];
      return last && ["succeeded", "failed"].includes(last.state) ? last : null;
    });
    // Once the control plane is back (recovered, reconciled), what serves stays put.
    await new Promise((r) => setTimeout(r, 1500));
    const seen = await watch.stop();
    const restartedAt = Date.now();
    if (failures(seen).length > 0)
      console.error(
        `killed at ${killedAt}, restarted ${restartedAt}\n${pushed.stderr}\n${pier.output.slice(-6000)}`,
      );
    return { pushed, d, seen };
  }

  test("during a build: the old release serves throughout, the deployment fails, the push says why", async () => {
    const { pushed, d, seen } = await killDuring(markedApp("v2", { buildSleep: 60 }), /RUN sleep 60/);
    assert.deepEqual(failures(seen), [], "the app answered 200 the whole time");
    assert.ok(
      seen.every((s) => s === "mark=v1"),
      "the old release served",
    );
    assert.equal(d.state, "failed");
    assert.match(
      d.reason ?? "",
      /Interrupted during the build: pier server stopped\. Release v1 keeps serving/,
    );
    assert.notEqual(pushed.code, 0, "the push did not report success");
    assert.match(pushed.stderr, /hung up|closed by remote host|Connection .*closed/i, pushed.stderr);
    const log = await pier.cli(["logs", "--deployment", d.id, "--app", "k"]);
    assert.match(log.stdout + log.stderr, /Interrupted during the build/);
    assert.equal(await serving(), "mark=v1");
  });

  test("during the health gate: the old release serves, the new instance is removed, the deployment fails", async () => {
    const { pushed, d, seen } = await killDuring(
      markedApp("v3", { listenDelayMs: 8000 }),
      /Instance 0 started/,
      300,
    );
    assert.deepEqual(failures(seen), []);
    assert.ok(seen.every((s) => s === "mark=v1"));
    assert.equal(d.state, "failed");
    assert.match(d.reason ?? "", /Interrupted before its release went live.*Release v1 keeps serving/);
    assert.notEqual(pushed.code, 0);
    assert.equal(await containersOf(d.id), "", "the interrupted deployment's instance is gone");
    assert.equal(await serving(), "mark=v1");
  });

  test("during the switch: old or new serves throughout, and the deployment's state matches what serves", async (t) => {
    // The switch (release, current release, edge) takes milliseconds after the health check's lines: each
    // round kills a little later, so the kill lands before, inside or after it.
    const outcomes: string[] = [];
    const rounds: [RegExp, number, RegExp | null][] = [
      // The switch hangs on a frozen edge: the kill lands after the gate, inside the switch.
      [/Response from GET \/ is 200/, 500, /Instance 0 started/],
      // Timed from the health check's lines: the kill lands inside the switch or just after it.
      [/Health check of instance 0/, 0, null],
      [/Health check of instance 0/, 40, null],
    ];
    for (const [n, [when, delayMs, freeze]] of rounds.entries()) {
      const before = await serving();
      const mark = `s${n}`;
      const { pushed, d, seen } = await killDuring(markedApp(mark), when, delayMs, freeze);
      assert.deepEqual(failures(seen), [], `round ${n}: the app answered 200 the whole time`);
      assert.ok(
        seen.every((s) => s === before || s === `mark=${mark}`),
        `round ${n}: only the old or the new release answered: ${[...new Set(seen)].join(", ")}`,
      );
      const now = await serving();
      if (d.state === "succeeded") {
        assert.equal(now, `mark=${mark}`, `round ${n}: a succeeded deployment serves`);
      } else {
        assert.equal(now, before, `round ${n}: a failed deployment leaves the old release serving`);
        assert.match(d.reason ?? "", /Interrupted/);
        assert.notEqual(pushed.code, 0, `round ${n}: the push of a failed deployment fails`);
        assert.equal(await containersOf(d.id), "", `round ${n}: its instances are gone`);
      }
      // Whatever the outcome, one release's instance runs, not two.
      const running = await waitFor("the other release's instance to stop", async () => {
        const ids = (
          await run([
            "docker",
            "ps",
            "-q",
            "--filter",
            `label=pier.app=${id}`,
            "--filter",
            "label=pier.deployment",
          ])
        ).stdout.trim();
        return ids.split("\n").length === 1 ? ids : null;
      });
      assert.ok(running, `round ${n}`);
      outcomes.push(`round ${n}: ${d.state}`);
    }
    t.diagnostic(`kills during the switch: ${outcomes.join("; ")}`);
  });
});
