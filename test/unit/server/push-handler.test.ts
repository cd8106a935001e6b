// What the pusher reads (src/server/push-handler.ts): the deploy log as remote: lines, then the outcome
// that accepts or refuses the push; a pusher that goes away cancels its deployment.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Dropped } from "../../../src/core/bounded-queue.js";
import { PierError } from "../../../src/core/errors.js";
import type { App, Deployment, LogLine } from "../../../src/core/model.js";
import type { PushRequest } from "../../../src/server/git-ssh.js";
import { type PushHandlerDeps, pushHandler } from "../../../src/server/push-handler.js";

const app = { id: "app-1", name: "web" } as App;
const dep = (state: Deployment["state"]) => ({ id: "dep-1", appId: app.id, state }) as Deployment;

function setup(o: { end?: Deployment; refuse?: Error; lines?: (LogLine | Dropped)[]; found?: boolean }) {
  const seen = { log: [] as string[], cancelled: [] as string[] };
  let finish: (d: Deployment) => void = () => undefined;
  const done = new Promise<Deployment>((r) => {
    finish = r;
  });
  const deps: PushHandlerDeps = {
    store: { findApp: async () => (o.found === false ? null : app) },
    deployer: {
      enqueue: async () => {
        if (o.refuse) throw o.refuse;
        if (o.end) setTimeout(() => finish(o.end as Deployment), 5);
        return { deployment: dep("queued"), done };
      },
      cancel: async (_appId, id) => {
        seen.cancelled.push(id);
        finish(dep("cancelled"));
        return dep("cancelled");
      },
    },
    logs: {
      follower: async () => ({
        lines: (async function* () {
          yield* o.lines ?? [];
        })(),
        stop: () => undefined,
      }),
    },
    appUrl: async (a) => `http://${a.name}.localhost:8000`,
    drainMs: 50,
  };
  const controller = new AbortController();
  const req: PushRequest = {
    appId: app.id,
    keyFingerprint: "SHA256:abc",
    ref: "refs/heads/master",
    oldSha: "0".repeat(40),
    newSha: "1".repeat(40),
    gitEnv: {},
    repoDir: "/nonexistent",
    log: async (l) => void seen.log.push(l),
    signal: controller.signal,
  };
  return { handler: pushHandler(deps), req, seen, controller };
}

describe("a push's outcome", () => {
  test("a deploy that succeeds accepts the push with the app's URL, after its log", async () => {
    const line = (s: string): LogLine => ({ at: "t", line: s });
    const { handler, req, seen } = setup({
      end: dep("succeeded"),
      lines: [line("Deploying web"), { dropped: 3 }],
    });
    assert.deepEqual(await handler(req), { ok: true, message: "Deployed web: http://web.localhost:8000" });
    assert.deepEqual(seen.log, ["Deploying web", "... 3 lines dropped"]);
  });

  test("a deploy that fails refuses the push: the previous release keeps serving", async () => {
    const { handler, req } = setup({ end: dep("failed") });
    assert.deepEqual(await handler(req), {
      ok: false,
      message: "Push rejected: deployment dep-1 failed; the previous release, if any, keeps serving.",
    });
  });

  test("an app being deleted refuses the push with why (APP_BUSY), not an internal error", async () => {
    const refuse = new PierError(
      "APP_BUSY",
      "web is being deleted: nothing else can change it until that ends.",
      "Try again.",
    );
    const { handler, req } = setup({ refuse });
    assert.deepEqual(await handler(req), {
      ok: false,
      message:
        "Push rejected: web is being deleted: nothing else can change it until that ends. (Try again.)",
    });
  });

  test("an app gone meanwhile refuses the push", async () => {
    const { handler, req } = setup({ found: false });
    assert.deepEqual(await handler(req), { ok: false, message: "App app-1 not found." });
  });

  test("a pusher that disconnects cancels its deployment", async () => {
    const { handler, req, seen, controller } = setup({});
    const outcome = handler(req);
    await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error("The pusher disconnected."));
    assert.equal((await outcome).ok, false);
    assert.deepEqual(seen.cancelled, ["dep-1"]);
  });
});
