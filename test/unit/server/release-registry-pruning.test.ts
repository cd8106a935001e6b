// On a swarm (ADR 0030) the releases the manager prunes, and a deleted app's images, are forgotten by the
// swarm's registry too; a registry that refuses is logged (never with its password) and fails nothing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { keptImages, pruneImages } from "../../../src/server/deploy/cleanup.js";
import { KEPT_RELEASES } from "../../../src/server/deployer.js";
import { forgetReleases } from "../../../src/server/forget-releases.js";
import { newApp } from "../../conformance/store.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { FakeReleaseRegistry } from "../../support/fake-release-registry.js";
import { MemoryStore } from "../../support/memory-store.js";

const REPO = "pier-app/app-1";

/** A logger that keeps what it is told. */
function recorder() {
  const lines: { level: string; obj: object; msg: string }[] = [];
  return {
    lines,
    info: (obj: object, msg: string) => void lines.push({ level: "info", obj, msg }),
    warn: (obj: object, msg: string) => void lines.push({ level: "warn", obj, msg }),
  };
}

/** app-1 with `n` releases d1..dn, each image built on the engine and published to the registry. */
async function releases(n: number, content: (i: number) => string = (i) => `code ${i}`) {
  const store = new MemoryStore();
  await store.createApp(newApp("web", { id: "app-1" }));
  const engine = new FakeEngine();
  const registry = new FakeReleaseRegistry();
  const refs: string[] = [];
  for (let i = 1; i <= n; i++) {
    const image = `${REPO}:d${i}`;
    engine.images.set(image, { id: `sha256:${i}`, labels: {} });
    registry.addLocal(image, content(i));
    refs.push(await registry.publish(image));
    await store.createRelease({
      id: `r${i}`,
      appId: "app-1",
      deploymentId: `d${i}`,
      image,
      commit: "c",
      env: {},
      httpPort: 8080,
      tcpPort: null,
      task: false,
    });
  }
  return { store, engine, registry, refs };
}

describe("the swarm's registry forgets pruned releases", () => {
  test("only the kept releases' images still pull after a prune; nothing is forgotten while a deployment is under way", async () => {
    const n = KEPT_RELEASES + 2;
    const live = await releases(n);
    // d(n+1) is being deployed: published already, no release yet (its tasks may be pulling on the nodes).
    const busy = `${REPO}:d${n + 1}`;
    live.registry.addLocal(busy, "code under way");
    const busyRef = await live.registry.publish(busy);
    const logger = recorder();
    await pruneImages({ ...live, logger }, "app-1", () => `d${n + 1}`);
    assert.ok(live.refs.every((r) => live.registry.pullable(r)));
    assert.ok(live.registry.pullable(busyRef));
    assert.equal(live.registry.forgets.length, 0);
    assert.deepEqual(
      (await live.engine.releaseImages("app-1")).sort(),
      [3, 4, 5, 6, 7].map((i) => `${REPO}:d${i}`),
    );
    // The next clean-up, with no deployment under way, forgets the pruned releases.
    await pruneImages({ ...live, logger }, "app-1", () => null);
    const pulls = live.refs.map((r) => live.registry.pullable(r));
    assert.deepEqual(pulls, [false, false, true, true, true, true, true]);
    assert.match(logger.lines[0]?.msg ?? "", /forgot pruned release images/);
  });

  test("a pruned release built identically to a kept one: its digest still pulls", async () => {
    const n = KEPT_RELEASES + 1;
    // d1 and d6 are identical builds: one digest.
    const live = await releases(n, (i) => (i === 1 || i === n ? "same code" : `code ${i}`));
    await pruneImages({ ...live, logger: recorder() }, "app-1", () => null);
    assert.ok(live.registry.pullable(live.refs[0]!), "d1's digest is d6's");
    assert.ok(live.refs.every((r) => live.registry.pullable(r)));
    assert.deepEqual(live.registry.forgets.at(-1)?.keep.length, KEPT_RELEASES);
  });

  test("a registry that refuses: the prune completes, a warning says why and what to do, without the password", async () => {
    const live = await releases(KEPT_RELEASES + 1);
    const logger = recorder();
    const refusing = live.registry.refusing("unauthorized: authentication required");
    await pruneImages({ ...live, registry: refusing, logger }, "app-1", () => null);
    assert.equal((await live.engine.releaseImages("app-1")).length, KEPT_RELEASES);
    const warn = logger.lines.find((l) => l.level === "warn");
    assert.match(warn?.msg ?? "", /could not forget/);
    assert.match(JSON.stringify(warn?.obj), /unauthorized/);
    assert.match(
      (warn?.obj as { hint?: string } | undefined)?.hint ?? "",
      /its password is the registry's/,
      "what to do",
    );
  });

  test("on one dockerd (no registry) nothing is asked of one", async () => {
    const live = await releases(KEPT_RELEASES + 1);
    const logger = recorder();
    await pruneImages({ ...live, registry: null, logger }, "app-1", () => null);
    assert.equal(live.registry.forgets.length, 0);
    assert.equal(logger.lines.length, 0);
  });

  test("a deleted app: every image of its repository is forgotten", async () => {
    const live = await releases(3);
    await forgetReleases(live.registry, recorder(), "app-1", []);
    assert.ok(live.refs.every((r) => !live.registry.pullable(r)));
    assert.equal(live.registry.digests(REPO).size, 0);
  });
});

describe("the images rollbacks can go back to", () => {
  const r = (image: string) => ({ image });

  test("the newest KEPT_RELEASES distinct images: scales and restarts, which reuse an image, keep older builds", () => {
    // Newest first: v9 and v8 are scales of v7's build, v5 a restart of v4's.
    const list = ["d7", "d7", "d7", "d6", "d4", "d4", "d3", "d2", "d1"].map(r);
    assert.deepEqual(keptImages(list), ["d7", "d6", "d4", "d3", "d2"]);
  });

  test("fewer builds than places: every one is kept", () => {
    assert.deepEqual(keptImages(["d2", "d2", "d1"].map(r)), ["d2", "d1"]);
    assert.deepEqual(keptImages([]), []);
  });

  test("a prune after scales leaves the last builds' images on the engine", async () => {
    const live = await releases(KEPT_RELEASES + 1);
    // Two scales of the newest build: releases with its image again.
    for (const n of [1, 2])
      await live.store.createRelease({
        id: `s${n}`,
        appId: "app-1",
        deploymentId: `s${n}`,
        image: `${REPO}:d${KEPT_RELEASES + 1}`,
        commit: "c",
        env: {},
        httpPort: 8080,
        tcpPort: null,
        task: false,
      });
    await pruneImages({ ...live, logger: recorder() }, "app-1", () => null);
    assert.deepEqual(
      (await live.engine.releaseImages("app-1")).sort(),
      [2, 3, 4, 5, 6].map((i) => `${REPO}:d${i}`),
    );
  });
});
