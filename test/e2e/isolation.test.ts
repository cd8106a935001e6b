// Tenants never reach each other: an app's instances and builds cannot connect to another app's instance,
// while each instance reaches its own address (so the addresses tried are real).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier } from "./harness.js";
import { firstInstance, probeFrom, tcpProbe } from "./probes.js";

describe("tenant isolation", { timeout: 600_000 }, () => {
  const pier = new Pier();
  const ids: Record<string, string> = {};

  const instanceOf = (app: string) => firstInstance(ids[app] ?? "");
  const from = (container: string, host: string) => probeFrom(container, host);

  before(async () => {
    await pier.start();
    await pier.addKey();
    for (const name of ["alpha", "beta"]) {
      const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", name]);
      ids[name] = app.id;
      const push = await pier.push(await pier.repo(name, NODE_DOCKER_APP, app.id));
      assert.equal(push.code, 0, push.stderr);
    }
  });
  after(() => pier.destroy());

  test("an app's instance cannot connect to another app's instance; each reaches its own", async () => {
    const alpha = await instanceOf("alpha");
    const beta = await instanceOf("beta");
    assert.match(beta.address, /^\d+\.\d+\.\d+\.\d+$/);
    assert.equal(await from(beta.id, beta.address), "open", "beta listens at its address");
    assert.equal(await from(alpha.id, alpha.address), "open", "alpha listens at its address");
    assert.match(await from(alpha.id, beta.address), /^closed/, "alpha cannot reach beta");
    assert.match(await from(beta.id, alpha.address), /^closed/, "beta cannot reach alpha");
  });

  test("a build cannot connect to another app's instance", async () => {
    const beta = await instanceOf("beta");
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "gamma"]);
    for (const [k, v] of [
      ["CC_NODE_VERSION", "22.16.0"],
      [
        "CC_PRE_BUILD_HOOK",
        `node -e '${tcpProbe(beta.address, 8080).replaceAll("'", "'\\''")}' | sed 's/^/probe: /'`,
      ],
    ]) {
      const r = await pier.cli(["env", "set", k as string, v as string, "--app", "gamma"]);
      assert.equal(r.code, 0, r.stderr);
    }
    const repo = await pier.repo(
      "gamma",
      {
        "package.json": JSON.stringify({
          name: "gamma",
          version: "1.0.0",
          scripts: { start: "node server.js" },
        }),
        "server.js": 'require("http").createServer((q, s) => s.end("gamma")).listen(8080, "0.0.0.0");\n',
        ".gitignore": "/node_modules\n",
      },
      app.id,
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /probe: closed/, "the build's connection to beta failed");
    assert.doesNotMatch(push.stderr, /probe: open/);
  });
});
