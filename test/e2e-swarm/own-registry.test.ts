// Pier's own swarm registry (ADR 0030): with PIER_ENGINE=swarm and no PIER_SWARM_REGISTRY, pier server runs
// Debian's docker-registry itself, with TLS from a CA it made and a random password; `pier nodes
// join-command` prints what a node runs to trust it; a push is built, pushed there and pulled by the
// workers; pruned releases and deleted apps leave it, and the next start collects their blobs; a restarted
// pier server with nothing to collect adopts the running registry.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { RegistryApi } from "../../src/adapters/engine/registry-api.js";
import { KEPT_RELEASES } from "../../src/server/deployer.js";
import { freePort, NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { docker, type LabInfo, lab, labSocket, swarmPier, swarmPierDown, until } from "./lab.js";

const pexec = promisify(execFile);

/** The directory of a lab node's own /etc/docker (its dockerd reads certs.d there). */
/** The lab's docker CLI logged in to `address` through `node`'s engine (the password on stdin). */
function login(info: LabInfo, node: string, address: string, password: string): void {
  const host = info.nodes.find((n) => n.name === node)?.dockerHost ?? "";
  const r = spawnSync("docker", ["-H", host, "login", "-u", "pier", "--password-stdin", address], {
    input: password,
    env: { ...process.env, DOCKER_CONFIG: info.dockerConfig },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
}

const etcDocker = (info: LabInfo, node: string) => join(dirname(labSocket(info, node)), "etc-docker");

describe("Pier's own registry on the swarm", { timeout: 900_000 }, () => {
  let info: LabInfo;
  let pier: Pier;
  let listen: string;

  before(async () => {
    ({ info, pier } = await swarmPier({
      // pier/guard:1: the sweep's image (the nodes' tool image), as the set-up builds it on the manager.
      images: ["pier/base:bookworm", "pier/node:22", "pier/guard:1"],
      settings: async (l) => {
        // The nodes reach this machine at its address on the lab's bridge.
        listen = `${l.hostAddress}:${await freePort()}`;
        return {
          PIER_ENGINE: "swarm",
          PIER_DOCKER_SOCKET: labSocket(l, "node1"),
          PIER_HTTP_HOST: l.nodes[0]!.address,
          PIER_SWARM_REGISTRY_LISTEN: listen,
          // The manager's dockerd reads its CAs there (the lab node's own /etc/docker).
          PIER_DOCKER_CERTS_DIR: join(etcDocker(l, "node1"), "certs.d"),
          // Pier reaches no worker's engine: the sweep (a job of the swarm) prunes what they pulled, through
          // each node's socket (the lab's nodes each have theirs, named by the node's host name).
          PIER_SWARM_NODE_SOCKET: join(
            dirname(dirname(labSocket(l, "node1"))),
            "{{.Node.Hostname}}",
            "docker.sock",
          ),
        };
      },
    }));
  });
  after(() => swarmPierDown(pier));

  test("a node that does not trust the registry yet fails the deploy, naming the node and what to do", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "early"]);
    const want =
      /did not start on node[23]: the node could not pull its release image from the registry 192\.168\.\d+\.1:\d+[\s\S]*pier nodes join-command/;
    const push = await pier.push(await pier.repo("early", NODE_DOCKER_APP, app.id));
    if (push.code !== 0) assert.match(push.stderr, want);
    else {
      // Instance 0 went to the manager, which trusts the registry: the next ones go to the workers, which
      // do not yet.
      const scaled = await pier.cli(["scale", "--instances", "3", "--app", "early"]);
      assert.notEqual(scaled.code, 0, scaled.stdout);
      assert.match(`${scaled.stdout}${scaled.stderr}`, want);
    }
    assert.equal((await pier.cli(["delete", "--app", "early", "--yes"])).code, 0);
  });

  test("join-command prints the lines that make a node trust it; run on the workers, they pull from it", async () => {
    const join = await pier.cli(["nodes", "join-command"]);
    assert.equal(join.code, 0, join.stderr);
    const [command, ...rest] = join.stdout.split("\n");
    assert.match(command!, /^docker swarm join --token SWMTKN-\S+ \S+:2377$/);
    const script = rest.join("\n");
    assert.match(script, new RegExp(`^mkdir -p /etc/docker/certs.d/${listen.replaceAll(".", "\\.")}\n`));
    assert.match(script, /-----BEGIN CERTIFICATE-----/);
    assert.doesNotMatch(script, /PRIVATE KEY/);
    assert.match(join.stderr, /trust Pier's registry/);
    // What an operator runs on each worker (here, the lab node's own /etc/docker stands for /etc/docker).
    for (const node of ["node2", "node3"]) {
      const local = script.replaceAll("/etc/docker/", `${etcDocker(info, node)}/`);
      await pexec("sh", ["-c", local]);
    }
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    const push = await pier.push(await pier.repo("web", NODE_DOCKER_APP, app.id));
    assert.equal(push.code, 0, push.stderr);
    const scaled = await pier.cli(["scale", "--instances", "3", "--app", "web"]);
    assert.equal(scaled.code, 0, scaled.stderr);
    // Every node ran an instance of the release, pulled by digest from Pier's registry.
    const nodes = await until("instances on the 3 nodes", 120, async () => {
      const on: string[] = [];
      for (const n of info.nodes) {
        const ids = await docker(info, n.name, ["ps", "-q", "--filter", `label=pier.app=${app.id}`]);
        if (ids) on.push(n.name);
      }
      return on.length === 3 ? on : undefined;
    });
    assert.deepEqual(nodes, ["node1", "node2", "node3"]);
    const onNode2 = await docker(info, "node2", ["ps", "-q", "--filter", `label=pier.app=${app.id}`]);
    const image = await docker(info, "node2", [
      "inspect",
      "-f",
      "{{.Config.Image}}",
      onNode2.split("\n")[0]!,
    ]);
    assert.match(
      image,
      new RegExp(`^${listen.replaceAll(".", "\\.")}/pier-app/${app.id}@sha256:[0-9a-f]{64}$`),
    );
    assert.equal((await pier.get("web", "/health")).status, 200);
  });

  test("pruned releases and a deleted app leave the registry; a restart collects their blobs", async () => {
    const dir = join(pier.dataDir, "registry");
    const api = new RegistryApi({
      address: listen,
      username: "pier",
      password: readFileSync(join(dir, "password"), "utf8").trim(),
      caPem: readFileSync(join(dir, "ca.crt"), "utf8"),
    });
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "gc"]);
    const repo = `pier-app/${app.id}`;
    const code = (v: number) => ({
      ...NODE_DOCKER_APP,
      "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', `|| "${v}"`),
    });
    type Release = { number: number; deploymentId: string; image: string };
    const list = () => pier.cliJson<Release[]>(["releases", "--app", "gc"]);
    const sweeps = () => docker(info, "node1", ["service", "ls", "-q", "--filter", "label=pier.role=sweep"]);
    const work = await pier.repo("gc", code(1), app.id);
    // node3 holds every release's image, pulled by digest as a node does for an instance (unused after).
    login(info, "node3", listen, readFileSync(join(dir, "password"), "utf8").trim());
    const pulled = new Map<string, string>();
    for (let v = 1; v <= KEPT_RELEASES + 2; v++) {
      if (v > 1) await pier.commit(work, code(v), `v${v}`);
      const push = await pier.push(work);
      assert.equal(push.code, 0, push.stderr);
      const id = (await list())[0]!.deploymentId;
      const ref = `${listen}/${repo}@${await api.digest(repo, id)}`;
      await docker(info, "node3", ["pull", "-q", ref]);
      pulled.set(id, ref);
    }
    const releases = await list();
    const kept = releases.slice(0, KEPT_RELEASES);
    // The registry holds the kept releases' tags only (the prune runs off the pusher's path).
    const tags = await until("the registry's tags are the kept releases'", 60, async () => {
      const t = (await api.tags(repo)).sort();
      return t.length === KEPT_RELEASES ? t : undefined;
    });
    assert.deepEqual(tags, kept.map((r) => r.deploymentId).sort());
    for (const r of releases.slice(KEPT_RELEASES))
      assert.equal(await api.digest(repo, r.deploymentId), null, `v${r.number} is forgotten`);
    // No node keeps the image of a pruned release (by the reference it was pulled by: a Dockerfile image from
    // the classic builder has no labels); node3 keeps the kept ones. The sweep's job ran on every node.
    const held = async (node: string) =>
      (await docker(info, node, ["images", "--digests", "--format", "{{.Repository}}@{{.Digest}}"])).split(
        "\n",
      );
    for (const n of info.nodes)
      await until(`${n.name} holds no pruned release's image`, 60, async () => {
        const on = await held(n.name);
        return releases.slice(KEPT_RELEASES).every((r) => !on.includes(pulled.get(r.deploymentId)!))
          ? true
          : undefined;
      });
    const onNode3 = await held("node3");
    for (const r of kept)
      assert.ok(onNode3.includes(pulled.get(r.deploymentId)!), `node3 keeps v${r.number}`);
    // The sweep's jobs are gone once they ran.
    await until("no sweep job left", 60, async () => ((await sweeps()) === "" ? true : undefined));
    // A rollback to the oldest kept build pulls its digest on the workers too. The scale is a release of its
    // own with the current image: it pushes no build out, so the oldest kept is still kept[-1], now the
    // sixth release.
    assert.equal((await pier.cli(["scale", "--instances", "3", "--app", "gc"])).code, 0);
    const scaled = await pier.cliJson<Release[]>(["releases", "--app", "gc"]);
    const oldest = kept.at(-1)!;
    assert.equal(
      scaled.findIndex((r) => r.number === oldest.number),
      KEPT_RELEASES,
    );
    const back = await pier.cli(["rollback", `v${oldest.number}`, "--app", "gc"]);
    assert.equal(back.code, 0, back.stderr);
    const version = async () => (JSON.parse((await pier.get("gc")).body) as { version: string }).version;
    for (let i = 0; i < 6; i++) assert.equal(await version(), String(oldest.number));
    const workers = await docker(info, "node2", ["ps", "-q", "--filter", `label=pier.app=${app.id}`]);
    assert.notEqual(workers, "", "an instance of the rollback runs on node2");
    // node3 down while a build is pruned: its image is owed to node3 (kept in the data directory), and the next
    // sweep after node3 is back asks for it again: node3 then holds neither.
    const state = async (node: string) =>
      docker(info, "node1", ["node", "inspect", node, "--format", "{{.Status.State}}"]);
    const node3 = await docker(info, "node1", ["node", "inspect", "node3", "--format", "{{.ID}}"]);
    const byNumber = (n: number) => pulled.get(scaled.find((r) => r.number === n)!.deploymentId)!;
    const [fourth, fifth] = [byNumber(oldest.number + 1), byNumber(oldest.number + 2)];
    await lab("kill", "node3");
    await until("node3 down", 60, async () => ((await state("node3")) === "down" ? true : undefined));
    await pier.commit(work, code(KEPT_RELEASES + 3), "while node3 is down");
    assert.equal((await pier.push(work)).code, 0);
    const owedFile = join(pier.dataDir, "swarm-sweep-owed.json");
    const owed = await until("the pruned build owed to node3", 60, async () => {
      const o = existsSync(owedFile)
        ? (JSON.parse(readFileSync(owedFile, "utf8")) as Record<string, string[]>)
        : {};
      return o[fourth] ? o : undefined;
    });
    assert.deepEqual(owed[fourth], [node3]);
    await lab("start", "node3");
    await until("node3 ready", 90, async () => ((await state("node3")) === "ready" ? true : undefined));
    await pier.commit(work, code(KEPT_RELEASES + 4), "node3 back");
    assert.equal((await pier.push(work)).code, 0);
    await until("node3 holds neither pruned build", 90, async () => {
      const on = await held("node3");
      return !on.includes(fourth) && !on.includes(fifth) ? true : undefined;
    });
    await until("nothing owed", 30, async () => (readFileSync(owedFile, "utf8") === "{}" ? true : undefined));
    // A deleted app: its repository holds no manifest.
    const storage = async () => Number((await pexec("du", ["-sb", join(dir, "data")])).stdout.split("\t")[0]);
    assert.equal((await pier.cli(["delete", "--app", "gc", "--yes"])).code, 0);
    await until("the deleted app's tags gone", 30, async () =>
      (await api.tags(repo)).length === 0 ? true : undefined,
    );
    // The next start of pier server stops the registry, collects what no manifest names, starts it again.
    assert.ok(existsSync(join(dir, "gc-due")));
    const before = await storage();
    const pid = readFileSync(join(dir, "registry.pid"), "utf8").trim();
    await pier.restartServer();
    assert.ok(!existsSync(join(dir, "gc-due")));
    assert.notEqual(readFileSync(join(dir, "registry.pid"), "utf8").trim(), pid);
    const after = await storage();
    assert.ok(after < before, `the registry's storage shrank (${before} -> ${after} bytes)`);
    assert.equal((await pier.get("web", "/health")).status, 200);
  });

  test("its files are private, its password is never on a command line, and a restarted pier server adopts it", async () => {
    const dir = join(pier.dataDir, "registry");
    for (const f of ["ca.key", "tls.key", "password", "htpasswd"])
      assert.equal((await pexec("stat", ["-c", "%a", join(dir, f)])).stdout.trim(), "600", f);
    const password = readFileSync(join(dir, "password"), "utf8").trim();
    assert.ok(password.length >= 32);
    const pid = readFileSync(join(dir, "registry.pid"), "utf8").trim();
    assert.doesNotMatch(readFileSync(`/proc/${pid}/cmdline`, "utf8"), new RegExp(password));
    assert.doesNotMatch(pier.output, new RegExp(password));
    await pier.restartServer();
    assert.equal(readFileSync(join(dir, "registry.pid"), "utf8").trim(), pid);
    assert.ok(existsSync(`/proc/${pid}`), "the same registry process serves");
    const again = await pier.cli(["nodes", "join-command", "--format", "json"]);
    const j = JSON.parse(again.stdout) as { registry: { address: string; trust: string } };
    assert.equal(j.registry.address, listen);
  });
});
