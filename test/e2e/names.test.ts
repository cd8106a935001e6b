// App names: one rule (a DNS label) for the API, the CLI and the edge; an app's name leads to its one
// repository; and an app whose route the edge cannot take never blocks the other apps.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { NODE_DOCKER_APP, Pier, run, scopeOf } from "./harness.js";

interface AppJson {
  id: string;
  name: string;
}

describe("app names and routes", { timeout: 600_000 }, () => {
  const pier = new Pier();

  before(async () => {
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier.destroy();
  });

  test("the API and the CLI refuse names the edge could not route, saying why", async () => {
    const bad: [string, RegExp][] = [
      ["x-", /must not end with '-'/],
      ["-x", /must start with a lowercase letter/],
      ["Web", /must start with a lowercase letter/],
      ["a_b", /only lowercase letters, digits and '-'/],
      ["a".repeat(64), /longer than 63/],
      ["app-0123456789ab", /form of an app id/],
    ];
    for (const [name, why] of bad) {
      const r = await pier.api("POST", "/v1/apps", { name, type: "docker" });
      assert.equal(r.status, 400, name);
      const err = (r.json as { error: { code: string; message: string } }).error;
      assert.equal(err.code, "INVALID_INPUT");
      assert.match(err.message, why, name);
      const cli = await pier.cli(["create", "--type", "docker", "--", name]);
      assert.equal(cli.code, 2, `${name}: ${cli.stderr}`);
      assert.match(cli.stderr, why);
    }
    const ok = await pier.api("POST", "/v1/apps", { name: `a${"b".repeat(61)}c`, type: "docker" });
    assert.equal(ok.status, 201, "63 characters is a DNS label");
    const apps = (await pier.api("GET", "/v1/apps")).json as AppJson[];
    assert.deepEqual(
      apps.map((a) => a.name),
      [`a${"b".repeat(61)}c`],
      "nothing else was created",
    );
    await pier.api("DELETE", `/v1/apps/${(ok.json as AppJson).id}`);
  });

  test("a push to <name>.git deploys the app from its one repository; restart and delete work after", async () => {
    const app = await pier.cliJson<AppJson>(["create", "--type", "docker", "byname"]);
    const repo = await pier.repo("byname", NODE_DOCKER_APP, app.id);
    await run([
      "git",
      "-C",
      repo,
      "remote",
      "set-url",
      "pier",
      `git+ssh://git@127.0.0.1:${pier.sshPort}/byname.git`,
    ]);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("byname")).status, 200);
    const repos = readdirSync(join(pier.dataDir, "repos")).filter((f) => f.endsWith(".git"));
    assert.deepEqual(repos, [`${app.id}.git`], "no second repository named after the app");

    const restart = await pier.cli(["restart", "--app", "byname"]);
    assert.equal(restart.code, 0, restart.stderr + restart.stdout);
    assert.equal((await pier.get("byname")).status, 200);

    const del = await pier.cli(["delete", "--yes", "--app", "byname"]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(existsSync(join(pier.dataDir, "repos", `${app.id}.git`)), false, "the repository is gone");
    assert.equal((await pier.get("byname")).status, 404);
  });

  test("an app whose name the edge cannot take (from an older store) is skipped and reported; the others deploy and serve", async () => {
    // A store written before the name rule: an app named `x-`.
    await pier.stopServer();
    const db = new Database(join(pier.dataDir, "pier.db"));
    db.prepare(
      "INSERT INTO apps (id, name, type, flavor, build_flavor, instances, created_at) VALUES (?,?,?,?,?,?,?)",
    ).run("app-00000000dead", "x-", "docker", "nano", "M", 1, new Date().toISOString());
    db.close();
    await pier.start();

    const good = await pier.cliJson<AppJson>(["create", "--type", "docker", "good"]);
    const repo = await pier.repo("good", NODE_DOCKER_APP, good.id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("good")).status, 200, "the other app is served");

    const status = await pier.cliJson<{ routeProblem: string | null }>(["status", "--app", "x-"]);
    assert.match(status.routeProblem ?? "", /x-/);
    const human = await pier.cli(["status", "--app", "app-00000000dead"]);
    assert.match(human.stdout, /Route: +not served by the edge/);
    await pier.api("DELETE", "/v1/apps/app-00000000dead");
  });

  test("what a deleted app left behind (a network, a volume, a repository) goes at the next start", async () => {
    await pier.stopServer();
    const scope = scopeOf(pier.dataDir);
    const labels = ["pier.managed=true", `pier.scope=${scope}`, "pier.app=app-00000000beef"];
    const net = `pier-e2e-leftover-${scope}`;
    const vol = `pier-e2e-leftover-${scope}`;
    const flags = labels.flatMap((l) => ["--label", l]);
    assert.equal((await run(["/usr/bin/docker", "network", "create", ...flags, net])).code, 0);
    assert.equal((await run(["/usr/bin/docker", "volume", "create", ...flags, vol])).code, 0);
    mkdirSync(join(pier.dataDir, "repos", "app-00000000beef.git"), { recursive: true });
    mkdirSync(join(pier.dataDir, "repos", "oldname.git"), { recursive: true });
    await pier.start();
    let left = true;
    for (let i = 0; i < 50 && left; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const n = await run(["/usr/bin/docker", "network", "inspect", net]);
      const v = await run(["/usr/bin/docker", "volume", "inspect", vol]);
      left = n.code === 0 || v.code === 0 || existsSync(join(pier.dataDir, "repos", "oldname.git"));
    }
    assert.equal(left, false, "the network, the volume and the repositories are gone");
    assert.equal(existsSync(join(pier.dataDir, "repos", "app-00000000beef.git")), false);
  });
});
