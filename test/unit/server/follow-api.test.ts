// `GET /v1/apps/:app/logs?follow=true` (`pier logs -f`, the console) follows the app for as long as its reader
// reads: open before the app has an instance, joined by each deploy's instances, saying it is alive while
// quiet (a client that ends a quiet body would end it), and ended by the app's deletion.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { LABEL, ROLE } from "../../../src/core/labels.js";
import { TERMINAL_STATES } from "../../../src/core/model.js";
import { type ApiOverFakes, apiOverFakes } from "./api-setup.js";

const ADMIN = "admin-token-0123456789abcdef";

/** The body of a followed stream as it comes, read by one reader. */
function reading(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let ended = false;
  const done = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    ended = true;
  })();
  return {
    text: () => text,
    ended: () => ended,
    done,
    until: async (what: (t: string) => boolean, label: string) => {
      for (let i = 0; i < 400 && !what(text); i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(what(text), `${label}: ${text}`);
    },
    cancel: () => reader.cancel(),
  };
}

describe("a followed runtime log over the API", () => {
  let s: ApiOverFakes;
  before(async () => {
    s = await apiOverFakes({ keepAliveMs: 30 });
    await s.token("root", ADMIN);
  });
  after(() => s.close());

  const deploy = async () => {
    const a = await s.call(ADMIN, "POST", "/v1/apps/web/deployments", {});
    assert.equal(a.status, 202);
    const id = String((a.body as { id: string }).id);
    for (let i = 0; i < 500; i++) {
      const d = await s.store.getDeployment(id);
      if (d && TERMINAL_STATES.includes(d.state)) return d;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error("the deployment did not end");
  };
  const serving = async () => {
    const release = await s.store.currentRelease((await s.store.findApp("web"))?.id ?? "");
    return s.engine.instances.filter(
      (i) =>
        i.running &&
        i.labels[LABEL.role] === ROLE.instance &&
        i.labels[LABEL.deployment] === release?.deploymentId,
    );
  };

  test("a reader that leaves ends its follow: nothing of it stays in the server", async () => {
    assert.equal((await s.call(ADMIN, "POST", "/v1/apps", { name: "quiet", type: "docker" })).status, 201);
    const app = await s.store.findApp("quiet");
    assert.ok(app);
    const r = await s.api.request("/v1/apps/quiet/logs?follow=true", {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.ok(r.body);
    const log = reading(r.body);
    for (let i = 0; i < 200 && s.starts.followers(app.id) === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.starts.followers(app.id), 1, "followed");
    await log.cancel();
    for (let i = 0; i < 200 && s.starts.followers(app.id) > 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.starts.followers(app.id), 0, "the follow ended with its reader");
  });

  test("it waits for the first deploy, goes on across the next, says it is alive, and ends with the app", async () => {
    assert.equal((await s.call(ADMIN, "POST", "/v1/apps", { name: "web", type: "docker" })).status, 201);
    const r = await s.api.request("/v1/apps/web/logs?follow=true&tail=0", {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(r.status, 200);
    assert.ok(r.body);
    const log = reading(r.body);
    try {
      await log.until((t) => t.includes(": alive"), "a comment while nothing runs");
      assert.equal(log.ended(), false, "no instance yet: the follow waits");

      assert.equal((await deploy()).state, "succeeded");
      const [first] = await serving();
      assert.ok(first);
      s.engine.print(first.id, "release one says hello");
      await log.until((t) => t.includes("release one says hello"), "the first release's line");

      assert.equal((await deploy()).state, "succeeded");
      const [second] = await serving();
      assert.ok(second && second.id !== first.id, "a new instance serves");
      s.engine.print(second.id, "release two says hello");
      await log.until(
        (t) => t.includes("release two says hello"),
        "the next release's line, on the same stream",
      );
      assert.equal(log.ended(), false);

      assert.equal((await s.call(ADMIN, "DELETE", "/v1/apps/web")).status, 204);
      await log.until(() => log.ended(), "the stream ends with the app");
    } finally {
      await log.cancel();
    }
  });

  test("`after` that is not cursors, or without follow, is refused naming it", async () => {
    assert.equal((await s.call(ADMIN, "POST", "/v1/apps", { name: "cursed", type: "docker" })).status, 201);
    const bad = await s.call(ADMIN, "GET", "/v1/apps/cursed/logs?follow=true&after=nope");
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /after: 'nope' is not the cursor of a followed log line/);
    const key = "2026-11-29T07:55:01.100000000Z";
    const unfollowed = await s.call(ADMIN, "GET", `/v1/apps/cursed/logs?after=c-1@${key}@1`);
    assert.equal(unfollowed.status, 400);
    assert.match(JSON.stringify(unfollowed.body), /after: only a followed log \(follow=true\)/);
  });
});
