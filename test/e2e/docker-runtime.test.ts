// The Dockerfile runtime end to end: the CLI, git push over SSH, dockerd, the HAProxy edge, real HTTP.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier } from "./harness.js";

interface AppJson {
  id: string;
  name: string;
  type: string;
  gitUrl: string;
  url: string;
}
interface Echo {
  greeting: string;
  version: string;
  env: Record<string, string>;
  headers: Record<string, string>;
}

describe("Dockerfile runtime: git push to a built, health-checked, served app", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let app: AppJson;
  let repo: string;

  before(async () => {
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier.destroy();
  });

  test("create prints the app's id, git URL and URL", async () => {
    app = await pier.cliJson<AppJson>(["create", "--type", "docker", "web"]);
    assert.equal(app.name, "web");
    assert.equal(app.type, "docker");
    assert.match(app.id, /^app-[0-9a-f]{12}$/);
    assert.equal(app.gitUrl, `git+ssh://git@localhost:${pier.sshPort}/${app.id}.git`);
    assert.equal(app.url, `http://web.localhost:${pier.httpPort}`);
    const human = await pier.cli(["create", "--type", "docker", "web"]);
    assert.equal(human.code, 1, "a second app with the same name is refused");
    assert.match(human.stderr, /already exists/);
  });

  test("git push deploys: the log streams back, the edge serves the app with forwarded headers", async () => {
    for (const [k, v] of [
      ["CC_HEALTH_CHECK_PATH", "/health"],
      ["GREETING", "bonjour"],
    ] as const) {
      const r = await pier.cli(["env", "set", k, v, "--app", "web"]);
      assert.equal(r.code, 0, r.stderr);
    }
    repo = await pier.repo("web", NODE_DOCKER_APP, app.id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Response from GET \/health is 200/);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);

    const r = await pier.get("web");
    assert.equal(r.status, 200);
    const echo = JSON.parse(r.body) as Echo;
    assert.equal(echo.greeting, "bonjour", "app variables reach the build as ARGs");
    assert.equal(echo.headers["x-forwarded-proto"], "http");
    assert.equal(echo.headers["x-forwarded-for"], "127.0.0.1");
    assert.equal(echo.env.INSTANCE_NUMBER, "0");
    assert.equal(echo.env.APP_ID, app.id);
    assert.equal(echo.env.CC_APP_NAME, "web");
    assert.equal(echo.env.PORT, "8080");
    assert.equal(echo.env.INSTANCE_TYPE, "production");
    assert.match(echo.env.CC_DEPLOYMENT_ID ?? "", /^dep-/);
    assert.match(echo.env.CC_COMMIT_ID ?? "", /^[0-9a-f]{40}$/);
    assert.ok(echo.env.INSTANCE_ID);
  });

  test("a failing health check fails the push with the contract's lines; the previous release keeps serving", async () => {
    assert.equal((await pier.cli(["env", "set", "HEALTH_STATUS", "503", "--app", "web"])).code, 0);
    await pier.commit(repo, { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "2"') }, "v2");
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    const lines = push.stderr.split("\n").map((l) => l.replace(/^remote: /, "").trimEnd());
    const at = lines.indexOf("Response from GET /health is 503");
    assert.ok(at >= 0, push.stderr);
    assert.equal(lines[at + 1], "Health check failed:");
    assert.equal(lines[at + 2], "- GET /health returned 503.");
    assert.match(lines[at + 3] ?? "", /redeploy/);
    const r = await pier.get("web");
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as Echo).version, "1");
    assert.equal((await pier.cli(["env", "rm", "HEALTH_STATUS", "--app", "web"])).code, 0);
  });

  test("bad pushes are refused with a message that names the problem", async () => {
    const branch = await pier.push(repo, "master:feature");
    assert.notEqual(branch.code, 0);
    assert.match(branch.stderr, /master/);

    await pier.commit(repo, { Dockerfile: "FROM pier/node:22\nCOPY server.js .\n" }, "no cmd");
    const noCmd = await pier.push(repo);
    assert.notEqual(noCmd.code, 0);
    assert.match(noCmd.stderr, /CMD|ENTRYPOINT/);

    assert.equal(
      (await pier.cli(["env", "set", "CC_DOCKERFILE", "../../etc/passwd", "--app", "web"])).code,
      0,
    );
    const outside = await pier.push(repo);
    assert.notEqual(outside.code, 0);
    assert.match(outside.stderr, /CC_DOCKERFILE/);
    assert.equal((await pier.cli(["env", "rm", "CC_DOCKERFILE", "--app", "web"])).code, 0);

    assert.equal(
      (await pier.cli(["env", "set", "CC_DOCKER_EXPOSED_HTTP_PORT", "99999", "--app", "web"])).code,
      0,
    );
    const port = await pier.push(repo);
    assert.notEqual(port.code, 0);
    assert.match(port.stderr, /CC_DOCKER_EXPOSED_HTTP_PORT/);
    assert.equal((await pier.cli(["env", "rm", "CC_DOCKER_EXPOSED_HTTP_PORT", "--app", "web"])).code, 0);

    // Labels Pier reads off containers (an instance's target, its role) cannot come from the image.
    await pier.commit(
      repo,
      {
        Dockerfile: `${NODE_DOCKER_APP.Dockerfile}\nLABEL pier.http-target=127.0.0.1:2375 pier.role=sandbox\n`,
      },
      "pier labels",
    );
    const labelled = await pier.push(repo);
    assert.notEqual(labelled.code, 0);
    assert.match(labelled.stderr, /pier\.http-target, pier\.role: labels under pier\. are Pier's own/);

    const r = await pier.get("web");
    assert.equal(r.status, 200, "the first release still serves");
  });

  test("scale to two instances: the edge balances, each has its own INSTANCE_NUMBER", async () => {
    await pier.commit(repo, NODE_DOCKER_APP, "restore");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    const r = await pier.cli(["scale", "--instances", "2", "--app", "web"]);
    assert.equal(r.code, 0, r.stderr);
    const seen = new Set<string>();
    for (let i = 0; i < 20 && seen.size < 2; i++) {
      seen.add((JSON.parse((await pier.get("web")).body) as Echo).env.INSTANCE_NUMBER ?? "");
    }
    assert.deepEqual([...seen].sort(), ["0", "1"]);
  });

  test("a crashed instance is restarted and the crash shows in status", async () => {
    await pier.get("web", "/crash").catch(() => undefined);
    let status: { instances: { restarts: number; lastExit: { code: number } | null }[] } = { instances: [] };
    for (let i = 0; i < 50; i++) {
      status = await pier.cliJson(["status", "--app", "web"]);
      if (status.instances.some((x) => x.restarts > 0 && x.lastExit?.code === 3)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(
      status.instances.some((x) => x.restarts > 0 && x.lastExit?.code === 3),
      JSON.stringify(status.instances),
    );
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      ok = (await pier.get("web").catch(() => ({ status: 0 }))).status === 200;
      if (!ok) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(ok);
  });

  test("killing pier server leaves the app serving; on start it reconciles", async () => {
    pier.kill();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await pier.get("web")).status, 200);
    await pier.start();
    assert.equal((await pier.get("web")).status, 200);
    const deployments = await pier.cliJson<{ state: string }[]>(["deployments", "--app", "web"]);
    assert.ok(deployments.every((d) => ["succeeded", "failed", "cancelled"].includes(d.state)));
  });

  test("unknown SSH keys and wrong API tokens are refused", async () => {
    const other = `${pier.work}/other_key`;
    await import("node:child_process").then(({ spawnSync }) =>
      spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]),
    );
    const r = await import("./harness.js").then(({ run }) =>
      run(["git", "-C", repo, "push", "pier", "master"], { env: pier.gitEnv(other) }),
    );
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Permission denied/);
    const { run } = await import("./harness.js");
    const unknownApp = await run(
      ["git", "-C", repo, "push", `git+ssh://git@127.0.0.1:${pier.sshPort}/app-000000000000.git`, "master"],
      { env: pier.gitEnv() },
    );
    assert.notEqual(unknownApp.code, 0);
    assert.match(unknownApp.stderr, /app 'app-000000000000' not found/);
    const notGit = await run([
      "ssh",
      "-i",
      pier.keyFile,
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-o",
      "LogLevel=ERROR",
      "-p",
      String(pier.sshPort),
      "git@127.0.0.1",
      "sh -c id",
    ]);
    assert.notEqual(notGit.code, 0);
    assert.match(notGit.stderr, /only `git push` and `git fetch`/);
    const bad = await pier.api("GET", "/v1/apps", undefined, "not-a-token");
    assert.equal(bad.status, 401);
    assert.equal((bad.json as { error: { code: string } }).error.code, "UNAUTHORIZED");
  });

  test("runtime logs: the instances' output, with --since and as JSON", async () => {
    const lines = await pier.cliJson<{ lines?: unknown } | { line: string; instance: number }[]>([
      "logs",
      "--since",
      "1h",
      "--app",
      "web",
    ]);
    const list = Array.isArray(lines) ? lines : [];
    assert.ok(
      list.some((l) => l.line.includes("listening on 8080")),
      JSON.stringify(lines).slice(0, 500),
    );
    const human = await pier.cli(["logs", "--app", "web", "--tail", "5"]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /\[\d\] /);
  });

  test("logs -f streams new lines as they come, across a redeploy, a crash and a server restart; scale --flavor sets the memory limit", async () => {
    const { run } = await import("./harness.js");
    const follower = pier.followLogs("web");
    const said = async (word: string) => {
      await pier.get("web", `/say/${word}`);
      for (let i = 0; i < 50 && !follower.out().includes(`said ${word}`); i++)
        await new Promise((r) => setTimeout(r, 200));
      assert.match(follower.out(), new RegExp(`said ${word}`), `${word}: a new line arrives while following`);
    };
    try {
      await new Promise((r) => setTimeout(r, 1000));
      assert.doesNotMatch(follower.out(), /listening on 8080/, "--tail 0: no old lines");
      await said("hello-stream");
      const line = JSON.parse(
        follower
          .out()
          .split("\n")
          .find((l) => l.includes("hello-stream")) ?? "{}",
      ) as {
        instance?: number;
        at?: string;
      };
      assert.equal(typeof line.instance, "number");
      assert.ok(line.at);

      // A redeploy (new instances) does not end the follow: the new release's lines come on the same stream.
      const scaled = await pier.cli(["scale", "--flavor", "S", "--instances", "1", "--app", "web"]);
      assert.equal(scaled.code, 0, scaled.stderr);
      await said("after-scale");
      assert.match(follower.out(), /listening on 8080/, "the new instance's boot is followed from its start");
      const status = await pier.cliJson<{ instances: { id: string }[] }>(["status", "--app", "web"]);
      const mem = await run([
        "/usr/bin/docker",
        "inspect",
        "-f",
        "{{.HostConfig.Memory}}",
        status.instances[0]!.id,
      ]);
      assert.equal(mem.stdout.trim(), String(2048 * 2 ** 20));

      // The engine restarts a crashed instance (the same container): its new run's lines come too, once.
      await pier.get("web", "/crash").catch(() => undefined);
      let up = false;
      for (let i = 0; i < 50 && !up; i++) {
        up = (await pier.get("web").catch(() => ({ status: 0 }))).status === 200;
        if (!up) await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(up, "the crashed instance is back");
      await said("after-crash");
      // pier server restarts (an upgrade): the CLI follows again once it answers, repeating nothing.
      await pier.restartServer();
      await said("after-server-restart");
      assert.match(follower.err(), /following again once it answers/);
      assert.ok(follower.running(), `the follow goes on: ${follower.err()}`);
      for (const word of ["hello-stream", "after-scale", "after-crash", "after-server-restart"]) {
        const times = follower
          .out()
          .split("\n")
          .filter((l) => l.includes(`said ${word}`)).length;
        assert.equal(times, 1, `"said ${word}" once, not replayed by a follow again`);
      }
    } finally {
      follower.stop();
    }
    assert.equal((await pier.get("web")).status, 200);
  });

  test("stop: the app answers 503 until a restart brings it back", async () => {
    const stop = await pier.cli(["stop", "--app", "web"]);
    assert.equal(stop.code, 0, stop.stderr);
    const down = await pier.get("web");
    assert.equal(down.status, 503);
    assert.match(down.body, /no running instance/);
    const restart = await pier.cli(["restart", "--app", "web"]);
    assert.equal(restart.code, 0, restart.stderr);
    assert.equal((await pier.get("web")).status, 200);
  });

  test("rollback redeploys an earlier release's image through the health gate", async () => {
    const before = await pier.cliJson<{ number: number; current: boolean }[]>(["releases", "--app", "web"]);
    const serving = before.find((r) => r.current);
    assert.ok(serving);
    await pier.commit(repo, { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "3"') }, "v3");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((JSON.parse((await pier.get("web")).body) as Echo).version, "3");
    const back = await pier.cli(["rollback", `v${serving.number}`, "--app", "web"]);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stderr, /Rolling back to release v\d+/);
    assert.equal((JSON.parse((await pier.get("web")).body) as Echo).version, "1");
    const after = await pier.cliJson<{ number: number; current: boolean }[]>(["releases", "--app", "web"]);
    assert.equal(after[0]?.current, true);
    assert.equal(after[0]?.number, serving.number + 2);
    const missing = await pier.cli(["rollback", "v999", "--app", "web"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /v999/);
  });

  /** The sandbox (container id) that instance 0 of the app runs in. */
  const sandboxOfInstance0 = async () => {
    const { run } = await import("./harness.js");
    const ids = await run([
      "/usr/bin/docker",
      "ps",
      "-q",
      "--filter",
      `label=pier.app=${app.id}`,
      "--filter",
      "label=pier.instance=0",
    ]);
    const id = ids.stdout.trim().split("\n")[0] ?? "";
    const label = await run([
      "/usr/bin/docker",
      "inspect",
      "-f",
      '{{index .Config.Labels "pier.sandbox"}}',
      id,
    ]);
    return label.stdout.trim();
  };

  test("instances start in sandboxes: each instance slot alternates between two, reused deploy after deploy", async () => {
    const { run } = await import("./harness.js");
    const sandboxOf = sandboxOfInstance0;
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      await pier.commit(repo, { "version.txt": `sandbox ${i}\n` }, `sandbox ${i}`);
      const push = await pier.push(repo);
      assert.equal(push.code, 0, push.stderr);
      assert.equal((await pier.get("web")).status, 200);
      seen.push(await sandboxOf());
    }
    assert.ok(
      seen.every((s) => /^[0-9a-f]{64}$/.test(s)),
      `each instance is in a sandbox: ${seen.join(", ")}`,
    );
    assert.notEqual(
      seen[0],
      seen[1],
      "a deploy's new instance starts beside the old one, in the other sandbox",
    );
    assert.equal(seen[2], seen[0], "the freed sandbox is used again");
    const sandboxes = await run([
      "/usr/bin/docker",
      "ps",
      "-aq",
      "--filter",
      `label=pier.app=${app.id}`,
      "--filter",
      "label=pier.role=sandbox",
    ]);
    assert.ok(sandboxes.stdout.trim().split("\n").length <= 2, "two sandboxes for one instance, no more");
  });

  test("a sandbox that restarts takes its instance with it: the app serves again", async () => {
    const { run } = await import("./harness.js");
    const sandbox = await sandboxOfInstance0();
    assert.match(sandbox, /^[0-9a-f]{64}$/);
    const restarted = await run(["/usr/bin/docker", "restart", "-t", "0", sandbox]);
    assert.equal(restarted.code, 0, restarted.stderr);
    // The instance had joined the sandbox's old network namespace: Pier restarts it into the new one.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      status = (await pier.get("web").catch(() => ({ status: 0 }))).status;
    }
    assert.equal(status, 200, "the app answers again within 20 s");
  });

  test("delete removes the app; its host answers 404", async () => {
    const r = await pier.cli(["delete", "--yes", "--app", "web"]);
    assert.equal(r.code, 0, r.stderr);
    const res = await pier.get("web");
    assert.equal(res.status, 404);
    const { run } = await import("./harness.js");
    const images = await run(["/usr/bin/docker", "images", "-q", `pier-app/${app.id}`]);
    assert.equal(images.stdout.trim(), "", "the app's images are removed");
    const containers = await run(["/usr/bin/docker", "ps", "-aq", "--filter", `label=pier.app=${app.id}`]);
    assert.equal(containers.stdout.trim(), "", "the app's containers are removed");
    const missing = await pier.cli(["status", "--app", "web"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /web/);
  });
});
