// The engine ports' contract (src/core/ports.ts), one suite for every implementation (as Hono's routers
// share common.case.test.ts): the Docker adapter passes it in test/e2e/engine-conformance.test.ts, the unit
// tests' in-memory fake in test/unit/adapters/fake-engine.test.ts. A new engine is proven by one call.
// A driver that implements only the instance ports so far (the Swarm driver, ADR 0030) runs their cases
// with `instancePortsConformance`; `engineConformance` runs every case, those included.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PierError } from "../../src/core/errors.js";
import { LABEL, ROLE } from "../../src/core/labels.js";
import { releaseImageTag } from "../../src/core/model.js";
import type {
  AppNetworks,
  BuildContainer,
  ContainerBuild,
  Engine,
  EngineEvent,
  EngineEvents,
  InstanceSlots,
  InstanceSpec,
  ReleaseInstances,
} from "../../src/core/ports.js";
import { RELEASE_VOLUME_ROLE } from "../../src/core/release-volumes.js";
import { addonServerConformance } from "./engine-addons.js";

/** The ports a driver of instances implements first: instances, their networks, slots, a ping. */
export type InstancePorts = ReleaseInstances &
  AppNetworks &
  InstanceSlots &
  Pick<EngineEvents, "ping" | "ownerAppIds" | "events">;

export interface EngineUnderTest<E extends InstancePorts = Engine> {
  engine: E;
  /** An image with `sh`, `echo`, `sleep` and `false` (on Docker: Pier's base image). */
  image: string;
  /** A name unique to this run: every object the suite makes is named and labelled after it. */
  prefix: string;
  /** Removes whatever the suite made (the suite removes what it can itself). */
  cleanUp(): Promise<void>;
}

/** Polls `probe` until it returns a value that is not undefined (a real engine answers asynchronously). */
async function eventually<T>(probe: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const MiB = 2 ** 20;

/** What the cases are given once the suite's `before` ran. */
interface Bed<E extends InstancePorts> {
  t: EngineUnderTest<E>;
  engine: E;
  /** The labels of everything the suite runs (its own app). */
  labels: Record<string, string>;
  /** The app's network, made by `before`. */
  network: string;
  /** A web instance of the suite's image running `cmd`, named and labelled for this run. */
  spec(cmd: string, over?: Partial<InstanceSpec>): InstanceSpec;
  signal: AbortSignal;
}

/** A describe whose `before` makes the engine and its app's network, and whose `after` removes them. */
function suite<E extends InstancePorts>(
  title: string,
  make: () => Promise<EngineUnderTest<E>>,
  cases: (get: () => Bed<E>) => void,
): void {
  describe(title, () => {
    let bed: Bed<E> | undefined;
    let n = 0;
    before(async () => {
      const t = await make();
      const labels = { [LABEL.app]: t.prefix };
      const network = `${t.prefix}-net`;
      await t.engine.ensureNetwork(network, labels, { ipv4: null, ipv6: null });
      const spec = (cmd: string, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
        name: `${t.prefix}-i${++n}`,
        image: t.image,
        env: { GREETING: "hello" },
        labels: { ...labels, [LABEL.deployment]: `d${n}` },
        cmd: ["/bin/sh", "-c", cmd],
        httpPort: 8080,
        tcpPort: null,
        memoryBytes: 64 * MiB,
        network: { name: network, ipv6Subnet: null },
        mountDockerSocket: false,
        restart: false,
        slot: null,
        buckets: [],
        ...over,
      });
      bed = { t, engine: t.engine, labels, network, spec, signal: new AbortController().signal };
    });
    after(async () => {
      if (!bed) return;
      const { engine, labels, t } = bed;
      for (const i of await engine.listInstances(labels)) await engine.removeInstance(i.id, 0);
      await engine.removeSlots(t.prefix);
      await engine.removeNetworks(labels);
      await t.cleanUp();
    });
    cases(() => {
      if (!bed) throw new Error("the suite's before did not run");
      return bed;
    });
  });
}

/** Runs every case of the engine ports' contract against the engine `make` gives. */
export function engineConformance(name: string, make: () => Promise<EngineUnderTest>): void {
  suite(`engine conformance: ${name}`, make, (get) => {
    instanceCases(get);
    engineCases(get);
    // The AddonServers port (test/conformance/engine-addons.ts).
    addonServerConformance(() => {
      const { engine, t, network, labels } = get();
      return { engine, image: t.image, prefix: t.prefix, network, labels };
    });
  });
}

/**
 * Runs the cases of the instance ports (ReleaseInstances, AppNetworks, InstanceSlots, ping, ownerAppIds and events)
 * against a driver that implements those so far (the Swarm driver, ADR 0030).
 */
export function instancePortsConformance(
  name: string,
  make: () => Promise<EngineUnderTest<InstancePorts>>,
): void {
  suite(`engine conformance, instance ports: ${name}`, make, instanceCases);
}

/** Instances, their logs and commands, unknown ids, an app's network, slot requests. */
function instanceCases(get: () => Bed<InstancePorts>): void {
  test("the engine answers a ping", async () => {
    const { engine } = get();
    await engine.ping();
  });

  test("events: an instance's start and its end (with its exit code) are told", async () => {
    const { engine, t, spec } = get();
    const seen: EngineEvent[] = [];
    const stop = new AbortController();
    const listening = engine.events((e) => void seen.push(e), stop.signal);
    // The subscription is live once the engine answers a call made after it.
    await new Promise((r) => setTimeout(r, 200));
    const run = await engine.runInstance(spec("exec sleep 600"));
    await eventually(() => seen.find((e) => e.containerId === run.id && e.type === "start"), "start");
    await engine.stopInstance(run.id, 1000);
    const died = await eventually(
      () => seen.find((e) => e.containerId === run.id && e.type === "die"),
      "die",
    );
    // A number, or null where the engine cannot tell it any more (a swarm deletes a scaled-down task).
    assert.ok(died.exitCode === null || Number.isInteger(died.exitCode), String(died.exitCode));
    assert.equal(died.labels[LABEL.app], t.prefix);
    stop.abort();
    await listening;
    await engine.removeInstance(run.id, 0);
  });

  test("a running instance is listed with its labels, inspected, routable, and its log comes back", async () => {
    const { engine, t, labels, spec, signal } = get();
    const run = await engine.runInstance(spec("echo ready; exec sleep 600"));
    assert.equal(run.running, true);
    assert.equal(run.labels[LABEL.app], t.prefix);
    assert.equal(run.labels[LABEL.role], ROLE.instance);
    const listed = (await engine.listInstances(labels)).find((i) => i.id === run.id);
    assert.ok(listed, "listed by its labels");
    assert.equal(listed.labels[LABEL.deployment], run.labels[LABEL.deployment]);
    assert.equal((await engine.listInstances({ [LABEL.app]: `${t.prefix}-other` })).length, 0);
    const inspected = await engine.inspectInstance(run.id);
    assert.equal(inspected?.name, run.name);
    assert.equal(inspected?.running, true);
    assert.ok(inspected?.http, "its HTTP port is published");
    const routable = (await engine.listRoutable(labels)).find((r) => r.id === run.id);
    assert.deepEqual(routable?.http, inspected?.http);
    const lines = await eventually(async () => {
      const got: string[] = [];
      await engine.logs(run.id, { follow: false }, (l) => void got.push(l.line), signal);
      return got.includes("ready") ? got : undefined;
    }, "the instance's log");
    assert.ok(lines.includes("ready"), lines.join("\n"));
    await engine.removeInstance(run.id, 1000);
  });

  test("a followed log brings the lines printed after it started, until its signal aborts", async () => {
    const { engine, spec } = get();
    const run = await engine.runInstance(spec("exec sleep 600"));
    const got: string[] = [];
    const stop = new AbortController();
    const following = engine.logs(
      run.id,
      { follow: true, tail: 0 },
      (l) => void got.push(l.line),
      stop.signal,
    );
    // A line printed once the follower is attached (exec's output is not the log: the instance's is).
    await new Promise((r) => setTimeout(r, 500));
    await engine.execInInstance(run.id, ["sh", "-c", "echo late > /proc/1/fd/1"], () => undefined);
    await eventually(() => (got.includes("late") ? got : undefined), "the followed line");
    stop.abort();
    await following.catch(() => undefined);
    await engine.removeInstance(run.id, 0);
  });

  test("stop, start, restart and remove: the instance's state follows, and it is gone at the end", async () => {
    const { engine, labels, spec } = get();
    const run = await engine.runInstance(spec("exec sleep 600"));
    await engine.stopInstance(run.id, 1000);
    const stopped = await engine.inspectInstance(run.id);
    assert.equal(stopped?.running, false);
    assert.notEqual(stopped?.exitCode, null, "a stopped instance has an exit code");
    await engine.startInstance(run.id);
    assert.equal((await engine.inspectInstance(run.id))?.running, true);
    await engine.startInstance(run.id);
    await engine.restartInstance(run.id, 1000);
    assert.equal((await engine.inspectInstance(run.id))?.running, true);
    await engine.removeInstance(run.id, 1000);
    assert.equal(await engine.inspectInstance(run.id), null);
    assert.ok(!(await engine.listInstances(labels)).some((i) => i.id === run.id));
    await engine.removeInstance(run.id, 1000);
  });

  test("a stopped instance's log stays readable until it is removed, with what it printed on SIGTERM", async () => {
    const { engine, spec, signal } = get();
    // A shell that says goodbye on SIGTERM (its `wait` is interrupted by the signal, so the trap runs).
    const run = await engine.runInstance(spec("trap 'echo bye; exit 0' TERM; echo ready; sleep 600 & wait"));
    const read = async () => {
      const got: string[] = [];
      await engine.logs(run.id, { follow: false }, (l) => void got.push(l.line), signal);
      return got;
    };
    await eventually(async () => ((await read()).includes("ready") ? true : undefined), "the instance's log");
    await engine.stopInstance(run.id, 5000);
    // A swarm deletes a scaled-down task (and its node the container, with its log) about a second after
    // it ended: read once that has happened.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal((await engine.inspectInstance(run.id))?.exitCode, 0, "its trap ended it");
    const kept = await read();
    assert.deepEqual(
      kept.filter((l) => l === "ready" || l === "bye"),
      ["ready", "bye"],
      kept.join("\n"),
    );
    // Read again: the same lines, once each.
    assert.deepEqual(await read(), kept);
    await engine.removeInstance(run.id, 0);
    await assert.rejects(read(), (e: PierError) => e.code === "NOT_FOUND");
  });

  test("a task's exit code comes back from wait", async () => {
    const { engine, spec, signal } = get();
    const run = await engine.runInstance(spec("echo working; exit 3", { httpPort: null }));
    assert.equal(await engine.waitInstance(run.id, signal), 3);
    assert.equal((await engine.inspectInstance(run.id))?.exitCode, 3);
    await engine.removeInstance(run.id, 0);
  });

  test("a command runs inside a running instance: its output and exit code", async () => {
    const { engine, spec } = get();
    const run = await engine.runInstance(spec("exec sleep 600"));
    const out: string[] = [];
    assert.equal(await engine.execInInstance(run.id, ["echo", "inside"], (l) => void out.push(l)), 0);
    assert.deepEqual(out, ["inside"]);
    assert.equal(await engine.execInInstance(run.id, ["false"], () => undefined), 1);
    await engine.stopInstance(run.id, 0);
    await assert.rejects(
      engine.execInInstance(run.id, ["true"], () => undefined),
      (e: PierError) => e.code === "CONFLICT",
      "not in a stopped instance",
    );
    await engine.removeInstance(run.id, 0);
  });

  test("unknown ids: inspect is null, stop and remove do nothing; start, restart, wait, exec and logs reject with NOT_FOUND", async () => {
    const { engine, t, signal } = get();
    const id = `${t.prefix}-no-such-instance`;
    assert.equal(await engine.inspectInstance(id), null);
    await engine.stopInstance(id, 0);
    await engine.removeInstance(id, 0);
    const notFound = (e: PierError) => e.code === "NOT_FOUND";
    await assert.rejects(engine.startInstance(id), notFound);
    await assert.rejects(engine.restartInstance(id, 0), notFound);
    await assert.rejects(engine.waitInstance(id, signal), notFound);
    await assert.rejects(
      engine.execInInstance(id, ["true"], () => undefined),
      notFound,
    );
    await assert.rejects(
      engine.logs(id, { follow: false }, () => undefined, signal),
      notFound,
    );
    await assert.rejects(
      engine.logs(id, { follow: true }, () => undefined, signal),
      notFound,
    );
  });

  test("an app's network: ensure is idempotent, it is listed with its subnet, an overlap is refused, remove takes it", async () => {
    const { engine, t, labels } = get();
    const name = `${t.prefix}-net2`;
    const own = { ...labels, [LABEL.network]: "second" };
    await engine.ensureNetwork(name, own, { ipv4: null, ipv6: null });
    await engine.ensureNetwork(name, own, { ipv4: null, ipv6: null });
    assert.equal(await engine.networkExists(name), true);
    const listed = (await engine.networksWithSubnets()).filter((x) => x.name === name);
    assert.equal(listed.length, 1, "made once");
    assert.equal(listed[0]?.labels[LABEL.network], "second");
    const subnet = listed[0]?.subnets.find((s) => !s.includes(":"));
    assert.ok(subnet, "it has an IPv4 subnet");
    await assert.rejects(
      engine.ensureNetwork(`${t.prefix}-net3`, labels, { ipv4: subnet, ipv6: null }),
      (e: PierError) => e.code === "SUBNET_OVERLAPS",
    );
    assert.deepEqual(await engine.removeNetworks(own), [name]);
    assert.equal(await engine.networkExists(name), false);
    assert.deepEqual(await engine.removeNetworks(own), []);
    assert.ok((await engine.ownerAppIds()).has(t.prefix), "the app owns the network it still has");
  });

  test("instances asked to start in a slot run, each at an address of its own, inspected and routed there; slots are not instances", async () => {
    const { engine, t, labels, network, spec } = get();
    const shape = { httpPort: 8080, tcpPort: null, network: { name: network, ipv6Subnet: null } };
    const inSlot = { slot: { appId: t.prefix }, restart: true };
    await engine.prepareSlots(t.prefix, shape, 2);
    const a = await engine.runInstance(spec("exec sleep 600", inSlot));
    const b = await engine.runInstance(spec("exec sleep 600", inSlot));
    assert.ok(a.http && b.http, "each answers HTTP somewhere");
    assert.notDeepEqual(a.http, b.http, "the second starts beside the first");
    assert.deepEqual((await engine.inspectInstance(b.id))?.http, b.http);
    assert.deepEqual((await engine.listRoutable(labels)).find((r) => r.id === b.id)?.http, b.http);
    assert.deepEqual((await engine.listInstances(labels)).map((i) => i.id).sort(), [a.id, b.id].sort());
    for (const id of [a.id, b.id]) await engine.removeInstance(id, 0);
  });
}

/**
 * The rest of the Engine: slots as the Docker adapter keeps them (a network holder started
 * ahead, whose address a later instance takes), volumes, builds, release images.
 */
function engineCases(get: () => Bed<Engine>): void {
  test("instance slots: web instances start in prepared slots, each its own; a stopped one frees its slot; only instances are listed", async () => {
    const { engine, t, labels, network, spec } = get();
    const shape = { httpPort: 8080, tcpPort: null, network: { name: network, ipv6Subnet: null } };
    const inSlot = { slot: { appId: t.prefix }, restart: true };
    await engine.prepareSlots(t.prefix, shape, 2);
    const a = await engine.runInstance(spec("exec sleep 600", inSlot));
    const b = await engine.runInstance(spec("exec sleep 600", inSlot));
    assert.ok(a.http && b.http, "each answers where its slot publishes");
    assert.notDeepEqual(
      a.http,
      b.http,
      "a slot holds one running instance: the second starts beside the first",
    );
    assert.deepEqual((await engine.inspectInstance(a.id))?.http, a.http);
    assert.deepEqual((await engine.listRoutable(labels)).find((r) => r.id === a.id)?.http, a.http);
    await engine.stopInstance(a.id, 0);
    const c = await engine.runInstance(spec("exec sleep 600", inSlot));
    assert.deepEqual(c.http, a.http, "a stopped instance does not hold its slot");
    await engine.startInstance(b.id);
    const listed = (await engine.listInstances(labels)).map((i) => i.id);
    assert.deepEqual(
      [a.id, b.id, c.id].filter((id) => listed.includes(id)),
      [a.id, b.id, c.id],
    );
    assert.equal(listed.length, 3, "slots are not instances");
    for (const id of [a.id, b.id, c.id]) await engine.removeInstance(id, 0);
  });

  test("an app's slots and build slot hold its network until removeSlots, and the slots of unknown apps go with removeStraySlots", async () => {
    const { engine, t } = get();
    const shape = (appId: string) => ({
      httpPort: 8080,
      tcpPort: null,
      network: { name: `${appId}-net`, ipv6Subnet: null },
    });
    for (const appId of [`${t.prefix}-kept`, `${t.prefix}-gone`]) {
      await engine.ensureNetwork(`${appId}-net`, { [LABEL.app]: appId }, { ipv4: null, ipv6: null });
      await engine.prepareSlots(appId, shape(appId), 1);
      await engine.prepareBuildSlot({ appId, network: `${appId}-net` });
      assert.deepEqual(await engine.removeNetworks({ [LABEL.app]: appId }), [], "its slots are on it");
    }
    await engine.removeStraySlots(new Set([t.prefix, `${t.prefix}-kept`]));
    assert.deepEqual(await engine.removeNetworks({ [LABEL.app]: `${t.prefix}-gone` }), [
      `${t.prefix}-gone-net`,
    ]);
    assert.deepEqual(
      await engine.removeNetworks({ [LABEL.app]: `${t.prefix}-kept` }),
      [],
      "a known app's stay",
    );
    await engine.removeSlots(`${t.prefix}-kept`);
    assert.deepEqual(await engine.removeNetworks({ [LABEL.app]: `${t.prefix}-kept` }), [
      `${t.prefix}-kept-net`,
    ]);
    await engine.removeSlots(`${t.prefix}-kept`);
  });

  test("an app's volumes: its release volumes are listed, one in use stays, the cache is dropped alone, all go with the app", async () => {
    const { engine, t } = get();
    const appId = `${t.prefix}-vols`;
    const release = `${t.prefix}-release-vol`;
    const build: BuildContainer & { scriptPath: string } = {
      from: t.image,
      appDir: "/app",
      env: {},
      binds: [],
      flavor: "S",
      memoryBytes: 64 * MiB,
      labels: { [LABEL.app]: appId },
      slot: null,
      scriptPath: "/nothing.sh",
      volumes: [
        {
          name: `${t.prefix}-cache`,
          target: "/cache",
          labels: { [LABEL.app]: appId, [LABEL.cache]: "deps" },
        },
        {
          name: release,
          target: "/app/vendor",
          labels: { [LABEL.app]: appId, [LABEL.deployment]: "d1", [LABEL.role]: RELEASE_VOLUME_ROLE },
        },
      ],
    };
    const prepared = await engine.prepareBuild(build);
    assert.deepEqual(await engine.releaseVolumes(appId), [{ name: release, deploymentId: "d1" }]);
    assert.equal(await engine.removeReleaseVolume(release), false, "a build still mounts it: it stays");
    await engine.discardPreparedBuild(prepared);
    await engine.dropDependencyCache(appId);
    assert.deepEqual(await engine.releaseVolumes(appId), [{ name: release, deploymentId: "d1" }]);
    assert.equal(await engine.removeReleaseVolume(release), true);
    assert.equal(await engine.removeReleaseVolume(release), true, "gone already");
    assert.ok(!(await engine.ownerAppIds()).has(appId), "the cache went with dropDependencyCache");
    await engine.discardPreparedBuild(await engine.prepareBuild(build));
    assert.ok((await engine.ownerAppIds()).has(appId));
    await engine.removeAppVolumes(appId);
    assert.deepEqual(await engine.releaseVolumes(appId), []);
    assert.ok(!(await engine.ownerAppIds()).has(appId), "nothing of the app is left");
  });

  test("unknown prepared builds and images: not alive, discarding does nothing, an image is not there", async () => {
    const { engine, t } = get();
    const id = `${t.prefix}-no-such-build`;
    await engine.discardPreparedBuild({ ref: id });
    assert.equal(await engine.preparedBuildAlive({ ref: id }), false);
    assert.equal(await engine.imageInfo(`${t.prefix}/none:x`), null);
    assert.equal(await engine.imageExists(`${t.prefix}/none:x`), false);
    await engine.removeImage(`${t.prefix}/none:x`);
  });

  test("a release built by its script, or in a build prepared ahead (which serves one build); a failed script fails it", async () => {
    const { engine, t, labels, network, signal } = get();
    const context = mkdtempSync(join(tmpdir(), "pier-conformance-"));
    const bound = mkdtempSync(join(tmpdir(), "pier-conformance-bind-"));
    writeFileSync(join(context, "hello.txt"), "hello\n");
    const build = (deployment: string, script: string): ContainerBuild => ({
      from: t.image,
      appDir: "/app",
      env: {},
      volumes: [],
      binds: [{ source: bound, target: "/pier" }],
      flavor: "S",
      memoryBytes: 256 * MiB,
      labels: { ...labels, [LABEL.deployment]: deployment },
      // On the app's network, through its build slot.
      slot: { appId: t.prefix, network },
      tag: releaseImageTag(t.prefix, deployment),
      contextDir: context,
      script,
      image: { cmd: ["/bin/sh", "-c", "exec sleep 600"], env: {}, workdir: "/app", user: "root" },
    });
    try {
      const lines: string[] = [];
      await engine.buildRelease(build("b1", "echo built plainly"), (l) => void lines.push(l), signal);
      assert.ok(lines.includes("built plainly"), lines.join("\n"));
      assert.equal(await engine.imageExists(releaseImageTag(t.prefix, "b1")), true);

      const ahead = build("b2", "echo not this one");
      const prepared = await engine.prepareBuild({ ...ahead, scriptPath: "/pier/build.sh" });
      assert.equal(await engine.preparedBuildAlive(prepared), true);
      writeFileSync(join(bound, "build.sh"), "echo built ahead\n");
      const aheadLines: string[] = [];
      await engine.buildRelease(ahead, (l) => void aheadLines.push(l), signal, prepared);
      assert.ok(aheadLines.includes("built ahead"), aheadLines.join("\n"));
      assert.ok(!aheadLines.includes("not this one"));
      assert.equal(await engine.imageExists(ahead.tag), true);
      assert.equal(await engine.preparedBuildAlive(prepared), false, "used up");

      const unused = await engine.prepareBuild({ ...ahead, scriptPath: "/pier/build.sh" });
      await engine.discardPreparedBuild(unused);
      assert.equal(await engine.preparedBuildAlive(unused), false);
      await engine.discardPreparedBuild(unused);

      await assert.rejects(
        engine.buildRelease(build("b3", "echo failing; exit 3"), () => undefined, signal),
        (e: PierError) => e.code === "BUILD_FAILED",
      );
      assert.equal(await engine.imageExists(releaseImageTag(t.prefix, "b3")), false);
    } finally {
      for (const tag of await engine.releaseImages(t.prefix)) await engine.removeImage(tag);
      rmSync(context, { recursive: true, force: true });
      rmSync(bound, { recursive: true, force: true });
    }
  });

  test("a release image made from files: it exists with its labels, is listed for its app, and is removed", async () => {
    const { engine, t, labels } = get();
    const dir = mkdtempSync(join(tmpdir(), "pier-conformance-"));
    writeFileSync(join(dir, "hello.txt"), "hello\n");
    const tag = releaseImageTag(t.prefix, "d1");
    const build: ContainerBuild = {
      from: t.image,
      appDir: "/app",
      env: {},
      volumes: [],
      binds: [],
      flavor: "S",
      memoryBytes: 256 * MiB,
      labels: { ...labels, [LABEL.deployment]: "d1" },
      slot: null,
      tag,
      contextDir: dir,
      script: "true",
      image: { cmd: ["/bin/sh", "-c", "exec sleep 600"], env: {}, workdir: "/app", user: "root" },
    };
    try {
      await engine.imageFromFiles(build);
      assert.equal(await engine.imageExists(tag), true);
      assert.equal((await engine.imageInfo(tag))?.labels[LABEL.deployment], "d1");
      assert.deepEqual(await engine.releaseImages(t.prefix), [tag]);
      await engine.removeImage(tag);
      assert.equal(await engine.imageExists(tag), false);
      assert.deepEqual(await engine.releaseImages(t.prefix), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
