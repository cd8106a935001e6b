// The AddonServers port's contract (src/core/ports.ts), a part of the engine suite (test/conformance/engine.ts
// calls it inside its own describe): the Docker adapter passes it on the real dockerd, the fake engine in the
// unit run. What each kind of add-on does with these verbs is test/conformance/addon-provider.ts.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, test } from "node:test";
import type { PierError } from "../../src/core/errors.js";
import { LABEL } from "../../src/core/labels.js";
import type { AddonServerSpec, Engine, InstanceSpec } from "../../src/core/ports.js";

/** What the engine suite hands over once its `before` ran. */
export interface AddonServersUnderTest {
  engine: Engine;
  /** An image with `sh`, `echo`, `sleep`, `cat` and `false`. */
  image: string;
  prefix: string;
  /** A network the suite made (the add-on server's own). */
  network: string;
  labels: Record<string, string>;
}

const MiB = 2 ** 20;

/** Collects what a stream is given, and says whether it was ended. */
function sink() {
  const out = new PassThrough();
  let text = "";
  let ended = false;
  out.on("data", (c: Buffer) => (text += c.toString("utf8")));
  out.on("end", () => (ended = true));
  return { out, text: () => text, ended: () => ended };
}

/** The add-on server cases, on the engine `get` gives (called inside engineConformance's describe). */
export function addonServerConformance(get: () => AddonServersUnderTest): void {
  let u: AddonServersUnderTest;
  let joined: string;
  let dir: string;
  const ids: string[] = [];
  const spec = (n: string, over: Partial<AddonServerSpec> = {}): AddonServerSpec => {
    const id = `${u.prefix}-adn${n}`;
    if (!ids.includes(id)) ids.push(id);
    return {
      id,
      kind: "kv",
      image: u.image,
      cmd: ["sleep", "infinity"],
      env: { GREETING: "hello" },
      memoryBytes: 64 * MiB,
      dataPath: "/data",
      network: u.network,
      joins: [],
      ...over,
    };
  };

  before(async () => {
    u = get();
    joined = `${u.prefix}-adnnet`;
    await u.engine.ensureNetwork(joined, u.labels, { ipv4: null, ipv6: null });
    dir = mkdtempSync(join(tmpdir(), "pier-conformance-addons-"));
    writeFileSync(join(dir, "in.txt"), "hello\n");
  });
  after(async () => {
    for (const id of ids) await u.engine.removeAddonServer(id);
    rmSync(dir, { recursive: true, force: true });
  });

  test("an add-on server runs with its memory on its network and the joins; running it again changes nothing", async () => {
    const s = spec("1", { joins: [joined] });
    await u.engine.runAddonServer(s);
    const info = await u.engine.addonServer(s.id);
    assert.equal(info?.running, true);
    assert.equal(info?.memoryBytes, 64 * MiB);
    assert.deepEqual(info?.networks, [u.network, joined].sort());
    assert.match(info?.addresses[u.network] ?? "", /^\d+\.\d+\.\d+\.\d+$/);
    await u.engine.runAddonServer(s);
    assert.equal((await u.engine.addonServer(s.id))?.startedAt, info?.startedAt, "not started again");
    await u.engine.removeAddonServer(s.id);
  });

  test("a command runs inside: its output returned or streamed (and ended), its exit code; a file copied in", async () => {
    const s = spec("2");
    await u.engine.runAddonServer(s);
    const echo = await u.engine.execInAddonServer(s.id, ["echo", "inside"]);
    assert.deepEqual([echo.exitCode, echo.stdout], [0, "inside\n"]);
    assert.equal((await u.engine.execInAddonServer(s.id, ["false"])).exitCode, 1);
    await u.engine.copyToAddonServer(s.id, join(dir, "in.txt"), "/tmp/in.txt");
    const got = sink();
    const cat = await u.engine.execInAddonServer(s.id, ["cat", "/tmp/in.txt"], got.out);
    assert.equal(cat.exitCode, 0);
    await new Promise((r) => setImmediate(r));
    assert.equal(got.text(), "hello\n");
    assert.equal(got.ended(), true, "the stream is ended with the command");
    await u.engine.removeAddonServer(s.id);
  });

  test("connected to a network and disconnected, each twice: its networks follow", async () => {
    const s = spec("3");
    await u.engine.runAddonServer(s);
    await u.engine.connectAddonServer(s.id, joined);
    await u.engine.connectAddonServer(s.id, joined);
    assert.deepEqual((await u.engine.addonServer(s.id))?.networks, [u.network, joined].sort());
    await u.engine.disconnectAddonServer(s.id, joined);
    await u.engine.disconnectAddonServer(s.id, joined);
    assert.deepEqual((await u.engine.addonServer(s.id))?.networks, [u.network]);
    await u.engine.removeAddonServer(s.id);
  });

  test("its data stays across a restart and goes when it is removed", async () => {
    const s = spec("4");
    await u.engine.runAddonServer(s);
    await u.engine.copyToAddonServer(s.id, join(dir, "in.txt"), "/data/kept.txt");
    await u.engine.restartAddonServer(s.id, 1000);
    assert.equal((await u.engine.addonServer(s.id))?.running, true);
    assert.equal((await u.engine.execInAddonServer(s.id, ["cat", "/data/kept.txt"])).stdout, "hello\n");
    await u.engine.removeAddonServer(s.id);
    assert.equal(await u.engine.addonServer(s.id), null);
    await u.engine.removeAddonServer(s.id);
    await u.engine.runAddonServer(s);
    assert.notEqual((await u.engine.execInAddonServer(s.id, ["cat", "/data/kept.txt"])).exitCode, 0);
    await u.engine.removeAddonServer(s.id);
  });

  /** An instance that mounts `buckets` and idles, on the suite's network (commands run in it by exec). */
  const bucketUser = (n: string, buckets: InstanceSpec["buckets"]): InstanceSpec => ({
    name: `${u.prefix}-bucket-user${n}`,
    image: u.image,
    env: {},
    labels: { ...u.labels, [LABEL.deployment]: `bucket${n}` },
    cmd: ["/bin/sh", "-c", "exec sleep 600"],
    httpPort: null,
    tcpPort: null,
    memoryBytes: 64 * MiB,
    network: { name: u.network, ipv6Subnet: null },
    mountDockerSocket: false,
    restart: false,
    slot: null,
    buckets,
  });
  const sh = async (id: string, script: string) => {
    const lines: string[] = [];
    const code = await u.engine.execInInstance(id, ["/bin/sh", "-c", script], (l) => void lines.push(l));
    return { code, out: lines.join("\n") };
  };

  test("an fs add-on's data as a bucket: instances see each other's files, a new one the old one's, at a target the image lacks; not removed while mounted", async () => {
    const s = spec("6", { kind: "fs" });
    await u.engine.runAddonServer(s);
    const target = "/srv/pier-bucket/uploads";
    const buckets = [{ addonId: s.id, target }];
    const a = await u.engine.runInstance(bucketUser("a", buckets));
    const b = await u.engine.runInstance(bucketUser("b", buckets));
    assert.equal((await sh(a.id, `echo from-a > ${target}/a.txt`)).code, 0);
    assert.equal((await sh(b.id, `echo from-b > ${target}/b.txt`)).code, 0);
    assert.deepEqual(await sh(b.id, `cat ${target}/a.txt`), { code: 0, out: "from-a" });
    assert.deepEqual(await sh(a.id, `cat ${target}/b.txt`), { code: 0, out: "from-b" });
    await u.engine.removeInstance(a.id, 0);
    await u.engine.removeInstance(b.id, 0);
    const c = await u.engine.runInstance(bucketUser("c", buckets));
    assert.deepEqual(await sh(c.id, `cat ${target}/a.txt`), { code: 0, out: "from-a" });
    // Not in an instance without the bucket.
    const d = await u.engine.runInstance(bucketUser("d", []));
    assert.notEqual((await sh(d.id, `cat ${target}/a.txt`)).out, "from-a");
    await u.engine.removeInstance(d.id, 0);
    // Its data mounted by a running instance is not removed, nor its server; once the instance stopped, both go.
    await assert.rejects(
      u.engine.removeAddonServer(s.id),
      (e: PierError) => e.code === "CONFLICT" && e.message.includes(c.name),
    );
    assert.equal((await u.engine.addonServer(s.id))?.running, true);
    assert.deepEqual(await sh(c.id, `cat ${target}/a.txt`), { code: 0, out: "from-a" });
    await u.engine.stopInstance(c.id, 0);
    await u.engine.removeAddonServer(s.id);
    assert.equal(await u.engine.addonServer(s.id), null);
    assert.equal(
      await u.engine.inspectInstance(c.id),
      null,
      "the stopped instance that mounted it went with it",
    );
  });

  test("a bucket that is not an fs add-on's (another kind's data, none) is refused, and no instance runs", async () => {
    const s = spec("7", { kind: "kv" });
    await u.engine.runAddonServer(s);
    const refused = (e: PierError) => e.code === "ADDON_NOT_FOUND";
    await assert.rejects(
      u.engine.runInstance(bucketUser("e", [{ addonId: s.id, target: "/srv/x" }])),
      refused,
    );
    const none = `${u.prefix}-adn-none`;
    await assert.rejects(
      u.engine.runInstance(bucketUser("f", [{ addonId: none, target: "/srv/x" }])),
      refused,
    );
    const left = await u.engine.listInstances(u.labels);
    assert.equal(left.filter((i) => i.name.includes("bucket-user")).length, 0);
    await u.engine.removeAddonServer(s.id);
  });

  test("unknown ids: none, nothing to remove or disconnect, the rest rejects; a missing image is named", async () => {
    const id = `${u.prefix}-no-such-addon`;
    assert.equal(await u.engine.addonServer(id), null);
    await u.engine.removeAddonServer(id);
    await u.engine.disconnectAddonServer(id, joined);
    const notFound = (e: PierError) => e.code === "NOT_FOUND";
    await assert.rejects(u.engine.restartAddonServer(id, 0), notFound);
    await assert.rejects(u.engine.execInAddonServer(id, ["true"]), notFound);
    const image = `${u.prefix}/none:x`;
    await assert.rejects(
      u.engine.runAddonServer(spec("5", { image })),
      (e: PierError) => e.code === "ENGINE_ERROR" && e.message.includes(image),
    );
    assert.equal(await u.engine.addonServer(`${u.prefix}-adn5`), null);
  });
}
