// The runtimes on the swarm (ADR 0030), end to end on the lab's three nodes: a PHP app with a composer
// dependency, a Dockerfile app and a Node.js app (with a worker beside its web process) are pushed with git,
// built on the manager, scaled to 3 instances, one on each node, and served through the edge. A PHP
// release's vendor/ travels in its image (no release volume on the manager), so an instance on a worker has
// it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Pier } from "../e2e/harness.js";
import { COMPOSER_APP, composerLock, PHP_DOCKER_APP } from "../e2e/php-fixtures.js";
import { docker, instancePs, type LabInfo, swarmPier, swarmPierDown, until } from "./lab.js";

/** The running instances of an app on each node of the lab (not its build slot's holder on the manager). */
async function placements(info: LabInfo, appId: string): Promise<{ node: string; container: string }[]> {
  const out: { node: string; container: string }[] = [];
  for (const n of info.nodes) {
    const ids = await docker(info, n.name, instancePs(appId));
    for (const id of ids.split("\n").filter(Boolean)) out.push({ node: n.name, container: id });
  }
  return out;
}

/** Scales an app to 3 instances and waits for 3 containers; they run one on each node. */
async function scaleTo3(pier: Pier, info: LabInfo, name: string, appId: string) {
  const scaled = await pier.cli(["scale", "--instances", "3", "--app", name]);
  assert.equal(scaled.code, 0, scaled.stderr);
  let seen: unknown = [];
  const placed = await until(`3 running instances of ${name}`, 180, async () => {
    const p = await placements(info, appId);
    seen = p;
    return p.length === 3 ? p : undefined;
  }).catch((e: Error) => {
    throw new Error(`${e.message}; running: ${JSON.stringify(seen)}`);
  });
  assert.equal(new Set(placed.map((p) => p.node)).size, 3, JSON.stringify(placed));
  return placed;
}

describe("PHP and Dockerfile apps on the swarm", { timeout: 1_500_000 }, () => {
  let info: LabInfo;
  let pier: Pier;
  /** The PHP app's working copy. */
  let repo: string;

  before(async () => {
    ({ info, pier } = await swarmPier({ images: ["pier/base:bookworm", "pier/php:8.4", "pier/node:22"] }));
  });
  after(() => swarmPierDown(pier));

  test("a composer app: vendor/ goes into the release image, and 3 instances, one on each node, serve it", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpapp"]);
    repo = await pier.repo("phpapp", COMPOSER_APP, app.id);
    await composerLock(repo);
    await pier.commit(repo, {}, "composer.lock");
    const set = await pier.cli(["env", "set", "CC_WEBROOT", "/public", "--app", "phpapp"]);
    assert.equal(set.code, 0, set.stderr);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Built pier-app\/app-[0-9a-f]+:dep-[0-9a-f]+ \(PHP 8\.4/);
    // Not into a volume: that would stay on the manager.
    assert.match(
      push.stderr,
      /remote: vendor\/ goes into the release image: its instances may run on any node\./,
    );
    assert.doesNotMatch(
      push.stderr,
      /vendor\/ goes into the volume|vendor\/ is the current release's volume/,
    );
    assert.match(push.stderr, /remote: .*Deployment succeeded/);
    const volumes = await docker(info, "node1", [
      "volume",
      "ls",
      "-q",
      "--filter",
      "label=pier.role=release-volume",
    ]);
    assert.equal(volumes, "", "no release volume on the manager");

    const placed = await scaleTo3(pier, info, "phpapp", app.id);
    // Each instance, on whichever node, loads the composer dependency from its own image.
    for (const p of placed) {
      const greet = await docker(info, p.node, [
        "exec",
        p.container,
        "php",
        "-r",
        "require '/app/vendor/autoload.php'; echo (new Acme\\Greeter())->hello('node');",
      ]);
      assert.equal(greet, "hello node", `${p.node} ${p.container}`);
    }
    for (let i = 0; i < 9; i++) {
      const r = await pier.get("phpapp", "/");
      assert.equal(r.status, 200, r.body);
      const body = JSON.parse(r.body) as { greet: string; dev: boolean; memory_limit: string };
      assert.deepEqual([body.greet, body.dev, body.memory_limit], ["hello pier", false, "77M"]);
    }
  });

  test("a redeploy with the same composer.lock builds vendor/ into the new image again, and serves", async () => {
    await pier.commit(
      repo,
      { "public/index.php": COMPOSER_APP["public/index.php"]!.replace("'rev' => 1", "'rev' => 2") },
      "rev 2",
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.doesNotMatch(push.stderr, /vendor\/ is the current release's volume/);
    const r = await until("the new release served", 60, async () => {
      const got = await pier.get("phpapp", "/");
      return got.status === 200 && (JSON.parse(got.body) as { rev: number }).rev === 2 ? got : undefined;
    });
    assert.equal((JSON.parse(r.body) as { greet: string }).greet, "hello pier");
  });

  test("a Dockerfile app: built on the manager, 3 instances, one on each node, served through the edge; its image's failing HEALTHCHECK is Pier's gate's to decide, as on one machine", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "dockerapp"]);
    // Left to the swarm, this check would hold each start until it passed and end the instance as unhealthy
    // 2 s after its start ("dockerexec: unhealthy container"); on one machine Docker only reports it.
    const files = {
      ...PHP_DOCKER_APP,
      Dockerfile: PHP_DOCKER_APP.Dockerfile!.replace(
        "CMD",
        "HEALTHCHECK --interval=2s --retries=1 CMD false\nCMD",
      ),
    };
    const push = await pier.push(await pier.repo("dockerapp", files, app.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);
    await scaleTo3(pier, info, "dockerapp", app.id);
    await new Promise((r) => setTimeout(r, 6000));
    // No task of the app's services failed meanwhile (the swarm would end them as unhealthy).
    const services = (
      await docker(info, "node1", ["service", "ls", "-q", "--filter", `label=pier.app=${app.id}`])
    )
      .split("\n")
      .filter(Boolean);
    const tasks = await docker(info, "node1", [
      "service",
      "ps",
      ...services,
      "--format",
      "{{.CurrentState}} {{.Error}}",
    ]);
    assert.doesNotMatch(tasks, /Failed|unhealthy/, tasks);
    for (let i = 0; i < 6; i++) {
      const r = await pier.get("dockerapp", "/");
      assert.equal(r.status, 200, r.body);
      assert.equal(r.body, "ok");
    }
  });

  test("a Node.js app with a worker: 3 instances, one on each node, serve it, and each runs its worker", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "nodeapp"]);
    for (const [k, v] of [
      ["CC_HEALTH_CHECK_PATH", "/"],
      ["CC_WORKER_COMMAND", "echo worker-tick-$INSTANCE_NUMBER; exec sleep 3600"],
    ] as const)
      assert.equal((await pier.cli(["env", "set", k, v, "--app", "nodeapp"])).code, 0);
    const files = {
      "package.json": JSON.stringify({ name: "n", version: "1.0.0", scripts: { start: "node server.js" } }),
      "server.js":
        'require("http").createServer((q, s) => s.end("node ok")).listen(process.env.PORT, "0.0.0.0");\n',
    };
    const push = await pier.push(await pier.repo("nodeapp", files, app.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);
    await scaleTo3(pier, info, "nodeapp", app.id);
    for (let i = 0; i < 6; i++) {
      const r = await pier.get("nodeapp", "/");
      assert.equal(r.status, 200, r.body);
      assert.equal(r.body, "node ok");
    }
    // Each instance's worker, wherever it runs: its line in the app's logs (read from every node).
    let logs = "";
    await until("a worker line from each of the 3 instances", 60, async () => {
      logs = (await pier.cli(["logs", "--app", "nodeapp", "--since", "5m"])).stdout;
      return [0, 1, 2].every((n) => logs.includes(`worker-tick-${n}`)) ? true : undefined;
    }).catch((e: Error) => {
      throw new Error(`${e.message}; logs: ${logs.slice(-1500)}`);
    });
  });
});
