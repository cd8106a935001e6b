// Operations on one app submitted together through the API (issue 15): a scale and a restart sent at the
// same time once failed the scale with "cannot join network of a non running container" (2 tries in 4).
// Now both succeed, one after the other, or one is refused with 409 APP_BUSY and says why; the app ends
// with the recorded size running, all of the current release, and answers throughout.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier } from "./harness.js";
import { PHP_DOCKER_APP } from "./php-fixtures.js";

interface Dep {
  id: string;
  state: string;
  reason: string | null;
  cause: string;
}
interface Status {
  app: { instances: number };
  release: { number: number } | null;
  instances: { id: string; state: string }[];
}
type Answer = { status: number; json: unknown };

describe("concurrent operations on one app", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let appId = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    appId = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "cc"])).id;
    const push = await pier.push(await pier.repo("cc", PHP_DOCKER_APP, appId));
    assert.equal(push.code, 0, push.stderr);
  });
  after(() => pier.destroy());

  const waitEnded = async (id: string): Promise<Dep> => {
    for (let i = 0; i < 600; i++) {
      const d = (await pier.api("GET", `/v1/apps/${appId}/deployments/${id}`)).json as Dep;
      if (["succeeded", "failed", "cancelled"].includes(d.state)) return d;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`deployment ${id} did not end`);
  };

  /** The deployment an accepted answer started, or null for a 409 APP_BUSY (checked to say why). */
  const accepted = (what: string, a: Answer): string | null => {
    if (a.status === 409) {
      const e = (a.json as { error: { code: string; message: string; hint?: string } }).error;
      assert.equal(e.code, "APP_BUSY", `${what}: ${JSON.stringify(a.json)}`);
      assert.match(e.message, /cc/);
      assert.ok(e.hint, "the refusal has a hint");
      return null;
    }
    assert.ok(a.status === 200 || a.status === 202, `${what}: ${a.status} ${JSON.stringify(a.json)}`);
    const body = a.json as { id?: string; app?: unknown; deployment?: { id: string } | null };
    // A scale to the size the app has already: nothing to deploy.
    if (body.app && body.deployment === null) return null;
    const id = body.deployment?.id ?? body.id;
    assert.ok(id, `${what} started a deployment: ${JSON.stringify(a.json)}`);
    return id;
  };

  test("a scale and a restart submitted together: both succeed in order (or one is refused), the app ends consistent", async () => {
    for (const [i, size] of [2, 1, 3, 1].entries()) {
      const [scale, restart] = await Promise.all([
        pier.api("PATCH", `/v1/apps/${appId}`, { instances: size }),
        pier.api("POST", `/v1/apps/${appId}/deployments`, {}),
      ]);
      const ids = [accepted(`try ${i}: scale`, scale), accepted(`try ${i}: restart`, restart)];
      assert.ok(
        ids.some((id) => id !== null),
        `try ${i}: at least one is taken`,
      );
      const ended = await Promise.all(ids.flatMap((id) => (id ? [waitEnded(id)] : [])));
      for (const d of ended) assert.equal(d.state, "succeeded", `try ${i}: ${d.cause}: ${d.reason}`);
      // The old instances are retired after the switch (SIGTERM, grace): wait until only the new ones run.
      let status: Status | null = null;
      for (let t = 0; t < 100; t++) {
        status = (await pier.api("GET", `/v1/apps/${appId}/status`)).json as Status;
        if (status.instances.length === status.app.instances) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const scaled = ids[0] !== null;
      assert.equal(status?.app.instances, scaled ? size : status?.app.instances, `try ${i}: the new size`);
      assert.equal(status?.instances.length, status?.app.instances, `try ${i}: the recorded size runs`);
      assert.ok(
        status?.instances.every((x) => x.state === "running"),
        JSON.stringify(status?.instances),
      );
      assert.equal((await pier.get("cc")).status, 200);
    }
  });

  test("a deploy sent while the app is being stopped gets 409 APP_BUSY; the app ends stopped", async () => {
    const [stop, restart] = await Promise.all([
      pier.api("POST", `/v1/apps/${appId}/stop`),
      new Promise((r) => setTimeout(r, 50)).then(() => pier.api("POST", `/v1/apps/${appId}/deployments`, {})),
    ]);
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    const id = accepted("restart during stop", restart);
    const status = (await pier.api("GET", `/v1/apps/${appId}/status`)).json as { state: string };
    if (id === null) {
      // Refused: the stop is what happened.
      assert.equal(status.state, "stopped");
      assert.equal((await pier.get("cc")).status, 503);
    } else {
      // Taken after the stop ended: it starts the app again, whole.
      assert.equal((await waitEnded(id)).state, "succeeded");
      assert.equal((await pier.get("cc")).status, 200);
    }
  });
});
