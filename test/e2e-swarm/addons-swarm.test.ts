// Add-ons on the swarm (ADR 0030), end to end on the lab's three nodes: an add-on pinned to the node named
// by --node (its container and volume on that node's dockerd, Pier reaching it through
// PIER_SWARM_NODE_ENGINES), reached from a linked app's instance on another node over the app's overlay and
// not from an unlinked app's; its backup and restore run on its node; a --node that does not exist and a
// drain of its node are refused, saying what to do. An fs bucket on node2: its app's two instances run on
// node2 (the deploy says so), one writes a file and the other reads it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { docker, type LabInfo, swarmPier, swarmPierDown, swarmSettings, until } from "./lab.js";

/** A kv client run inside an instance (node is in its image): `host port password CMD...` -> the answer. */
const KV_CLIENT = String.raw`
const [h, p, pw, ...cmd] = process.argv.slice(1);
const s = require("net").connect({ host: h, port: Number(p) });
let b = "";
const done = (x) => { console.log(x); process.exit(0); };
setTimeout(() => done("ERR timeout"), 4000);
s.on("error", (e) => done("ERR " + e.code));
s.on("connect", () => s.write("AUTH " + pw + "\r\n" + cmd.join(" ") + "\r\n"));
s.on("data", (d) => {
  b += d;
  const l = b.split("\r\n");
  if (l[0].startsWith("-")) return done(l[0]);
  if (l.length < 3) return;
  if (l[1].startsWith("$-1")) return done("(nil)");
  if (!l[1].startsWith("$")) return done(l[1].slice(1));
  if (l.length >= 4) done(l[2]);
});`;

/** Each instance of an app: its node and container (not its build slot's holder on the manager). */
async function instances(info: LabInfo, appId: string) {
  const out: { node: string; container: string }[] = [];
  for (const n of info.nodes) {
    const ids = await docker(info, n.name, [
      ...["ps", "-q", "--filter", `label=pier.app=${appId}`, "--filter", "label=pier.role=instance"],
    ]);
    for (const id of ids.split("\n").filter(Boolean)) out.push({ node: n.name, container: id });
  }
  return out;
}

describe("add-ons on the swarm: pinned to a node, reached from every node by linked apps only", {
  timeout: 1_200_000,
}, () => {
  let info: LabInfo;
  let pier: Pier;
  let web: { id: string };
  let other: { id: string };
  let kv: { host: string; token: string };
  let backupId = "";

  const ok = async (args: string[]) => {
    const r = await pier.cli(args);
    assert.equal(r.code, 0, `pier ${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  /** The kv command run from an instance of the app on `node` (node3 when it has one). */
  const kvFrom = async (appId: string, node: string | null, ...cmd: string[]) => {
    const all = await instances(info, appId);
    const i = all.find((x) => x.node === node) ?? all[0];
    assert.ok(i, `an instance of ${appId}`);
    const answer = await docker(info, i.node, [
      "exec",
      i.container,
      "node",
      "-e",
      KV_CLIENT,
      kv.host,
      "6378",
      kv.token,
      ...cmd,
    ]);
    return { node: i.node, answer };
  };

  before(async () => {
    ({ info, pier } = await swarmPier({
      // What scripts/setup.sh builds where Pier runs: builds on the manager, and the add-ons' images, which
      // Pier copies to the node an add-on is pinned to.
      images: ["pier/base:bookworm", "pier/node:22", "pier/addon-kv:8", "pier/addon-fs:1"],
      settings: (lab) => ({
        ...swarmSettings(lab),
        PIER_SWARM_NODE_ENGINES: lab.nodes
          .filter((n) => n.name !== "node1")
          .map((n) => `${n.name}=${n.dockerHost}`)
          .join(","),
      }),
    }));
    web = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    other = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "other"]);
    for (const app of ["web", "other"])
      await ok(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", app]);
  });
  after(() => swarmPierDown(pier));

  test("a --node that does not exist is refused, naming the nodes, and nothing is made", async () => {
    const r = await pier.cli(["addon", "create", "kv", "nowhere", "--node", "node9"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the swarm has no node of that name \(its nodes: node1, node2, node3\)/);
    assert.notEqual((await pier.cli(["addon", "status", "nowhere"])).code, 0, "nothing was made");
  });

  test("--node node2: its container and its volume are on node2, and list and status say so", async () => {
    const made = await ok(["addon", "create", "kv", "cache", "--node", "node2", "--link", "web"]);
    assert.match(made.stdout, /Created kv add-on cache \(adn-[0-9a-f]+\), flavor nano, on node node2\./);
    const list = await pier.cliJson<{ name: string; node: string | null }[]>(["addon", "list"]);
    assert.deepEqual(
      list.map((a) => [a.name, a.node]),
      [["cache", "node2"]],
    );
    assert.match((await ok(["addon", "status", "cache"])).stdout, /node: +node2 \(pinned with its data\)/);
    const s = await pier.cliJson<{ id: string; host: string; state: string }>(["addon", "status", "cache"]);
    assert.equal(s.state, "running");
    const on2 = await docker(info, "node2", [
      "ps",
      "--filter",
      `label=pier.addon=${s.id}`,
      "--format",
      "{{.Names}}",
    ]);
    assert.equal(on2, s.host);
    assert.equal(await docker(info, "node1", ["ps", "-q", "--filter", `label=pier.addon=${s.id}`]), "");
    assert.equal(
      await docker(info, "node2", ["volume", "ls", "-q", "--filter", `label=pier.addon=${s.id}`]),
      `${s.host}-data`,
    );
    const env = await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]);
    kv = { host: s.host, token: env.KV_TOKEN ?? "" };
  });

  test("the linked app reaches it over its overlay from another node; an unlinked app does not", async () => {
    for (const [name, id] of [
      ["web", web.id],
      ["other", other.id],
    ] as const) {
      const push = await pier.push(await pier.repo(name, NODE_DOCKER_APP, id));
      assert.equal(push.code, 0, push.stderr);
    }
    await ok(["scale", "--instances", "3", "--app", "web"]);
    await until("an instance of web on node3", 120, async () =>
      (await instances(info, web.id)).some((i) => i.node === "node3") ? true : undefined,
    );
    const set = await kvFrom(web.id, "node3", "SET", "greeting", "hello");
    assert.deepEqual(set, { node: "node3", answer: "OK" });
    assert.equal((await kvFrom(web.id, "node3", "GET", "greeting")).answer, "hello");
    // The unlinked app's instance: the add-on is not on its overlay (no name, no route).
    const refused = await kvFrom(other.id, null, "GET", "greeting");
    assert.match(refused.answer, /^ERR /, JSON.stringify(refused));
  });

  test("a backup and a restore run on node2: the data comes back exactly", async () => {
    const b = await pier.cliJson<{ id: string; bytes: number }>(["addon", "backup", "create", "cache"]);
    assert.ok(b.bytes > 0);
    backupId = b.id;
    assert.equal((await kvFrom(web.id, "node3", "SET", "greeting", "later")).answer, "OK");
    await ok(["addon", "backup", "restore", "cache", b.id, "--yes"]);
    assert.equal(
      await until("the restored value", 60, async () => {
        const r = (await kvFrom(web.id, "node3", "GET", "greeting")).answer;
        return r === "hello" ? r : undefined;
      }),
      "hello",
    );
    // Still on node2, never moved.
    assert.equal(await docker(info, "node1", ["ps", "-aq", "--filter", "label=pier.addon-node"]), "");
    assert.match(
      await docker(info, "node2", [
        "ps",
        "--filter",
        "label=pier.addon-node=node2",
        "--format",
        "{{.Names}}",
      ]),
      /^pier-addon-adn-/,
    );
  });

  test("an fs bucket on node2: its app's two instances run there, the deploy says so, and share its files", async () => {
    const files = await pier.cliJson<{ id: string }>([
      "create",
      "--type",
      "node",
      "--instances",
      "2",
      "files",
    ]);
    await ok(["addon", "create", "fs", "uploads", "--node", "node2", "--link", "files"]);
    await ok(["env", "set", "CC_FS_BUCKET", "/uploads:uploads", "--app", "files"]);
    await ok(["env", "set", "CC_HEALTH_CHECK_PATH", "/", "--app", "files"]);
    const server = 'require("http").createServer((q, s) => s.end("ok")).listen(8080, "0.0.0.0");\n';
    const pkg = JSON.stringify({ name: "files", version: "1.0.0", scripts: { start: "node server.js" } });
    const push = await pier.push(
      await pier.repo("files", { "package.json": pkg, "server.js": server }, files.id),
    );
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Instances of files run on node node2, where bucket uploads lives\./);
    const placed = await instances(info, files.id);
    assert.deepEqual(
      placed.map((i) => i.node),
      ["node2", "node2"],
    );
    const [one, two] = placed as [(typeof placed)[0], (typeof placed)[0]];
    const fsIn = (i: typeof one, js: string) => docker(info, i.node, ["exec", i.container, "node", "-e", js]);
    await fsIn(one, 'require("fs").writeFileSync("/app/uploads/a.txt", "shared")');
    assert.equal(
      await fsIn(two, 'console.log(require("fs").readFileSync("/app/uploads/a.txt", "utf8"))'),
      "shared",
    );
    const status = await pier.cliJson<{ instances: { node?: string }[] }>(["status", "--app", "files"]);
    assert.deepEqual(
      status.instances.map((i) => i.node),
      ["node2", "node2"],
    );
  });

  test("moved in two commands: a kv add-on on node3 restored from cache's backup (--from) has its data", async () => {
    await ok(["addon", "create", "kv", "cache3", "--node", "node3"]);
    const without = await pier.cli(["addon", "backup", "restore", "cache3", backupId, "--yes"]);
    assert.notEqual(without.code, 0);
    assert.match(without.stderr, /is of the add-on 'cache', not of 'cache3'/);
    assert.match(without.stderr, new RegExp(`pier addon backup restore cache3 ${backupId} --from cache`));
    const wrongKind = await pier.cli([
      "addon",
      "backup",
      "restore",
      "uploads",
      backupId,
      "--from",
      "cache",
      "--yes",
    ]);
    assert.notEqual(wrongKind.code, 0);
    assert.match(wrongKind.stderr, /'cache' is a kv add-on and 'uploads' an fs one/);
    const r = await ok(["addon", "backup", "restore", "cache3", backupId, "--from", "cache", "--yes"]);
    assert.match(r.stdout, new RegExp(`Restored cache3 from backup ${backupId} of cache`));
    const s = await pier.cliJson<{ host: string }>(["addon", "status", "cache3"]);
    const env = await pier.cliJson<Record<string, string>>(["addon", "env", "cache3", "--reveal"]);
    const get = ["exec", s.host, "valkey-cli", "-p", "6378", "--no-auth-warning", "-a", env.KV_TOKEN ?? ""];
    assert.equal(
      await until("the value restored on node3", 60, async () => {
        const v = await docker(info, "node3", [...get, "GET", "greeting"]).catch(() => "");
        return v === "hello" ? v : undefined;
      }),
      "hello",
    );
    await ok(["addon", "delete", "cache3", "--yes"]);
  });

  test("draining the add-on's node is refused, saying what to do; another node drains", async () => {
    const r = await pier.cli(["nodes", "drain", "node2"]);
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /node2 was not drained: the add-ons (cache, uploads|uploads, cache) are pinned to it with their data/,
    );
    assert.match(r.stderr, /pier addon backup create NAME/);
    const nodes = await pier.cliJson<{ name: string; availability: string }[]>(["nodes"]);
    assert.equal(nodes.find((n) => n.name === "node2")?.availability, "active");
    await ok(["nodes", "drain", "node3"]);
    await ok(["nodes", "activate", "node3"]);
  });
});
