// A restart of `pier server` changes nothing that runs (issue 15): for an app of each runtime, requests keep
// going through the edge while pier server stops and starts again on the same data dir and ports, and
// none fails; no deployment is made, the same instances run, no release image is used up. Node.js and PHP
// releases are committed build containers: their instances once inherited the build's `pier.role=build`,
// and every restart redeployed them.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { httpGet, Pier, run } from "./harness.js";
import { COMPOSER_APP, PHP_DOCKER_APP } from "./php-fixtures.js";

const NODE_APP: Record<string, string> = {
  "package.json": `${JSON.stringify({ name: "restart", version: "1.0.0", scripts: { start: "node server.js" } })}\n`,
  "server.js": `require("http").createServer((q, s) => s.end("ok")).listen(8080, "0.0.0.0");\n`,
  ".gitignore": "/node_modules\n",
};

interface Status {
  release: { number: number; image: string } | null;
  instances: { id: string; state: string }[];
}

/** GETs the app's host through the edge, one after the other, until `stop()`; bounded in count and time. */
function keepRequesting(pier: Pier, host: string) {
  let stopped = false;
  const failures: string[] = [];
  let count = 0;
  const done = (async () => {
    const end = Date.now() + 180_000;
    while (!stopped && count < 20_000 && Date.now() < end) {
      count++;
      try {
        const r = await httpGet(pier.httpPort, host, "/", 5000);
        if (r.status !== 200) failures.push(`${r.status} ${r.body.slice(0, 120)}`);
      } catch (e) {
        failures.push((e as Error).message);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
      return { count, failures };
    },
  };
}

describe("a restart of pier server adopts what runs", { timeout: 900_000 }, () => {
  const pier = new Pier();
  const ids = new Map<string, string>();

  const deploy = async (name: string, type: string, files: Record<string, string>, env: string[][] = []) => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", type, name]);
    ids.set(name, app.id);
    for (const [k, v] of env) {
      const r = await pier.cli(["env", "set", k!, v!, "--app", name]);
      assert.equal(r.code, 0, r.stderr);
    }
    const push = await pier.push(await pier.repo(name, files, app.id));
    assert.equal(push.code, 0, push.stderr);
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    await deploy("rnode", "node", NODE_APP);
    await deploy("rdocker", "docker", PHP_DOCKER_APP);
    await deploy("rphp", "phpserver", COMPOSER_APP, [["CC_WEBROOT", "/public"]]);
  });
  after(() => pier.destroy());

  /** What a restart must not change: the deployments, the release, the instances, the release images. */
  const observe = async (name: string) => {
    const deployments = await pier.cliJson<{ id: string; state: string }[]>(["deployments", "--app", name]);
    const status = await pier.cliJson<Status>(["status", "--app", name]);
    const images = await run(["/usr/bin/docker", "images", "-q", `pier-app/${ids.get(name)}`]);
    return {
      deployments: deployments.map((d) => `${d.id} ${d.state}`),
      release: status.release?.number ?? null,
      instances: status.instances.map((i) => `${i.id} ${i.state}`).sort(),
      images: images.stdout.split("\n").filter(Boolean).sort(),
    };
  };

  for (const [name, runtime] of [
    ["rnode", "Node.js"],
    ["rdocker", "Dockerfile"],
    ["rphp", "PHP"],
  ] as const) {
    test(`${runtime}: no failed request, no new deployment, the same instances, no release image used`, async () => {
      const before = await observe(name);
      assert.equal(before.instances.length, 1);
      assert.match(before.instances[0] ?? "", / running$/);
      const logFrom = pier.output.length;
      const load = keepRequesting(pier, `${name}.localhost`);
      await new Promise((r) => setTimeout(r, 500));
      await pier.restartServer();
      // A redeploy (what the restart used to start) would show within seconds: give it the time.
      await new Promise((r) => setTimeout(r, 5000));
      const { count, failures } = await load.stop();
      assert.ok(count > 50, `requests kept going (${count})`);
      assert.deepEqual(failures, [], `${failures.length} of ${count} requests failed`);
      assert.deepEqual(await observe(name), before);
      const redeployed = pier.output
        .slice(logFrom)
        .split("\n")
        .filter(
          (l) => l.includes(`"appId":"${ids.get(name)}"`) && l.includes("no instance of the current release"),
        );
      assert.deepEqual(redeployed, [], "the reconciler does not redeploy it");
    });
  }
});
