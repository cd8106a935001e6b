// The deploy's steps alone (src/server/deploy/*): what each gives the next, and what a user reads in the
// deploy log or the deployment's reason when it refuses.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { LinkedBucket } from "../../../src/core/buckets.js";
import type { App, Deployment, Release } from "../../../src/core/model.js";
import { type BuildStepContext, buildImage } from "../../../src/server/deploy/build.js";
import type { DeployRequest, Plan } from "../../../src/server/deploy/context.js";
import { runHook } from "../../../src/server/deploy/gate.js";
import { releaseToRun } from "../../../src/server/deploy/start.js";
import { checkSocket, mountedBuckets, runSettings } from "../../../src/server/deploy/variables.js";
import type { RunSettings, Runtime } from "../../../src/server/runtimes/runtime.js";
import { appRecord } from "../../conformance/store.js";

const app: App = appRecord("web", { id: "app-1", type: "docker", instances: 2 });
const deployment = { id: "dep-1", appId: app.id, commit: "a".repeat(40), cause: "test" } as Deployment;
const settings: RunSettings = {
  httpPort: 8080,
  tcpPort: null,
  ipv6Subnet: null,
  mountDockerSocket: false,
  cmd: null,
};
const runtime: Runtime = {
  settings: (vars) => ({ settings, errors: vars.BAD ? [`BAD: ${vars.BAD}`] : [] }),
  build: async () => "pier-app/app-1:dep-1",
};
const plan: Plan = {
  app,
  vars: { A: "1" },
  linked: null,
  runtime,
  settings,
  task: false,
  healthPaths: ["/"],
  common: { APP_ID: app.id, INSTANCE_NUMBER: "0", INSTANCE_ID: "" },
  addonNetwork: null,
  buckets: [],
};
const release = (n: number, image: string) =>
  ({ id: `rel-${n}`, number: n, image, commit: "b".repeat(40) }) as Release;

describe("the variables step", () => {
  test("an app whose runtime this Pier lacks, or a bad setting, fails with what to fix", () => {
    assert.throws(() => runSettings({ runtimes: {} }, app, {}), {
      code: "INVALID_INPUT",
      message: "The docker runtime is not available yet on this Pier.",
    });
    assert.throws(() => runSettings({ runtimes: { docker: runtime } }, app, { BAD: "x" }), {
      code: "INVALID_VARIABLE",
      message: "Invalid settings: BAD: x",
    });
    assert.equal(runSettings({ runtimes: { docker: runtime } }, app, {}).settings, settings);
  });

  test("the engine socket is mounted only where an admin allowed it", () => {
    const mount = { ...settings, mountDockerSocket: true };
    assert.throws(() => checkSocket(app, mount), {
      code: "FORBIDDEN",
      message: /CC_MOUNT_DOCKER_SOCKET=true/,
    });
    assert.doesNotThrow(() => checkSocket({ ...app, allowDockerSocket: true }, mount));
  });
});

describe("the buckets of a deploy (CC_FS_BUCKET)", () => {
  const linked: LinkedBucket[] = [{ id: "adn-1", name: "uploads", host: "pier-addon-adn-1" }];
  const context = (buckets = linked) => {
    const lines: string[] = [];
    return {
      ctx: { deps: { links: { buckets: async () => buckets } }, write: (l: string) => void lines.push(l) },
      lines,
    };
  };
  const node: App = { ...app, type: "node" };

  test("a linked bucket is mounted under /app, and the log says where", async () => {
    const { ctx, lines } = context();
    const vars = { CC_FS_BUCKET: "/wp-content/uploads:pier-addon-adn-1" };
    assert.deepEqual(await mountedBuckets(ctx, node, vars), [
      { addonId: "adn-1", target: "/app/wp-content/uploads" },
    ]);
    assert.deepEqual(lines, [
      "The fs add-on uploads (bucket pier-addon-adn-1) is mounted at /app/wp-content/uploads.",
    ]);
    assert.deepEqual(await mountedBuckets(ctx, node, {}), [], "no variable, no mount");
  });

  test("on a swarm the deploy says its instances run on the bucket's node, and refuses buckets on two", async () => {
    const { ctx, lines } = context([
      { id: "adn-1", name: "uploads", host: "pier-addon-adn-1", node: "node2" },
      { id: "adn-2", name: "media", host: "pier-addon-adn-2", node: "node3" },
    ]);
    assert.deepEqual(await mountedBuckets(ctx, node, { CC_FS_BUCKET: "/up:uploads" }), [
      { addonId: "adn-1", target: "/app/up", node: "node2" },
    ]);
    assert.equal(lines.at(-1), "Instances of web run on node node2, where bucket uploads lives.");
    await assert.rejects(
      mountedBuckets(ctx, node, { CC_FS_BUCKET: "/up:uploads", CC_FS_BUCKET_1: "/m:media" }),
      {
        code: "INVALID_VARIABLE",
        message:
          "web mounts fs buckets on different nodes (uploads on node2, media on node3): its instances can run on one node only, where its buckets live.",
      },
    );
  });

  test("a bucket unlinked since the variable was set fails the deploy, naming the variable and the bucket", async () => {
    const { ctx, lines } = context([]);
    await assert.rejects(mountedBuckets(ctx, node, { CC_FS_BUCKET: "/up:pier-addon-adn-1" }), {
      code: "INVALID_VARIABLE",
      message: "CC_FS_BUCKET names the bucket 'pier-addon-adn-1', which is not an fs add-on linked to web.",
    });
    assert.deepEqual(lines, []);
  });

  test("a docker app has no buckets (runtime contract, section 1)", async () => {
    const { ctx } = context();
    await assert.rejects(mountedBuckets(ctx, app, { CC_FS_BUCKET_1: "/up:pier-addon-adn-1" }), {
      code: "INVALID_VARIABLE",
      message: "CC_FS_BUCKET_1: the docker runtime has no file-system buckets (runtime contract, section 1).",
    });
  });
});

describe("the build step", () => {
  function context(request: Partial<DeployRequest>, current: Release | null, kept: boolean) {
    const lines: string[] = [];
    const ctx: BuildStepContext = {
      deps: {
        store: { currentRelease: async () => current, getAppSecret: async () => null },
        engine: { imageExists: async () => kept },
        repoDir: () => "/nonexistent",
      },
      deployment,
      request: { commit: deployment.commit, cause: "test", withoutCache: false, ...request },
      signal: new AbortController().signal,
      write: (l) => void lines.push(l),
    };
    return { ctx, lines };
  }

  test("a scale reuses the current release's image, and says so", async () => {
    const { ctx, lines } = context({ reuseCurrentImage: true }, release(3, "pier-app/app-1:dep-0"), true);
    assert.equal(await buildImage(ctx, plan), "pier-app/app-1:dep-0");
    assert.deepEqual(lines, ["Reusing the image of release v3."]);
  });

  test("a scale of an app never deployed fails: push first", async () => {
    const { ctx } = context({ reuseCurrentImage: true }, null, true);
    await assert.rejects(buildImage(ctx, plan), { code: "NOTHING_TO_DEPLOY" });
  });

  test("a rollback to a release whose image is gone names its commit to push again", async () => {
    const { ctx } = context({ rollbackTo: release(1, "pier-app/app-1:old") }, null, false);
    await assert.rejects(buildImage(ctx, plan), {
      code: "RELEASE_NOT_FOUND",
      message: "The image of release v1 is no longer kept (an app keeps the images of its last 5 builds).",
      hint: `Redeploy its commit ${"b".repeat(12)} with git push instead.`,
    });
  });

  test("a cancel during the build ends the step with the cancel's reason", async () => {
    const { ctx } = context({ reuseCurrentImage: true }, release(3, "img"), true);
    const controller = new AbortController();
    controller.abort(new Error("Cancelled by the user."));
    await assert.rejects(buildImage({ ...ctx, signal: controller.signal }, plan), /Cancelled by the user/);
  });
});

describe("the start step", () => {
  const request: DeployRequest = { commit: deployment.commit, cause: "scale", withoutCache: false };

  test("a web release runs the app's size, a scale's new size wins", () => {
    const r = releaseToRun({ deployment, request: { ...request, resize: { flavor: "S" } } }, plan, "img");
    assert.equal(r.instances, 2);
    assert.equal(r.flavor, "S");
    assert.equal(r.httpPort, 8080);
    assert.equal(r.restart, true);
    assert.equal(r.env.INSTANCE_TYPE, "production");
    assert.equal(r.env.INSTANCE_NUMBER, undefined, "each instance gets its own number");
  });

  test("a task runs once, one instance, no HTTP port, its command by a shell", () => {
    const task = { ...plan, app: { ...app, task: "node migrate.js" }, task: true };
    const r = releaseToRun({ deployment, request }, task, "img");
    assert.deepEqual(
      [r.instances, r.httpPort, r.restart, r.cmd],
      [1, null, false, ["/bin/sh", "-c", "node migrate.js"]],
    );
  });
});

describe("the gate step's hooks", () => {
  test("where the engine cannot enter an instance (a swarm), the hook runs like instance 0", async () => {
    const lines: string[] = [];
    const ran: string[] = [];
    const ctx = {
      deps: {
        engine: {
          execInInstance: async () => {
            throw new Error("no exec on a swarm");
          },
          runLike: async (id: string, cmd: string[], on: (l: string) => void) => {
            ran.push(`${id} ${cmd.join(" ")}`);
            on("hook ran");
            return 0;
          },
        },
      },
      write: (l: string) => void lines.push(l),
    };
    const started = [{ id: "svc-1" }] as Parameters<typeof runHook>[3];
    await runHook(ctx, "CC_RUN_SUCCEEDED_HOOK", { CC_RUN_SUCCEEDED_HOOK: "echo ok" }, started);
    assert.deepEqual(ran, ["svc-1 /bin/sh -c echo ok"]);
    assert.deepEqual(lines, [
      "-----> Running CC_RUN_SUCCEEDED_HOOK like instance 0 (its image, variables, network)",
      "hook ran",
      "CC_RUN_SUCCEEDED_HOOK exited with code 0.",
    ]);
  });

  test("a hook's exit code is logged and never fails the deploy", async () => {
    const lines: string[] = [];
    const ctx = {
      deps: {
        engine: {
          execInInstance: async (_id: string, _cmd: string[], on: (l: string) => void) => {
            on("hi");
            return 3;
          },
        },
      },
      write: (l: string) => void lines.push(l),
    };
    const started = [{ id: "c-1" }] as Parameters<typeof runHook>[3];
    await runHook(ctx, "CC_RUN_FAILED_HOOK", { CC_RUN_FAILED_HOOK: "echo hi" }, started);
    await runHook(ctx, "CC_RUN_SUCCEEDED_HOOK", {}, started);
    assert.deepEqual(lines, [
      "-----> Running CC_RUN_FAILED_HOOK in instance 0",
      "hi",
      "CC_RUN_FAILED_HOOK exited with code 3 (logged only).",
    ]);
  });
});
