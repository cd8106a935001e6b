// dockerd restarted under running apps (disruptive: it stops every container on the machine, so this runs
// last, alone). dockerd is stopped the way an operator does (SIGTERM, wait for it to exit) and started again
// the way scripts/setup.sh starts it; a Dockerfile app and a Node.js app then serve again through the edge.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { markedApp, waitFor } from "../e2e/faults-harness.js";
import { Pier, run } from "../e2e/harness.js";
import { firstInstance, probeFrom } from "../e2e/probes.js";

const PID_FILE = "/var/run/docker.pid";

const NODE_APP = {
  "package.json": `${JSON.stringify({ name: "n", version: "1.0.0", scripts: { start: "node server.js" } })}\n`,
  "server.js": `require("http").createServer((req, res) => res.end("mark=node")).listen(8080, "0.0.0.0");\n`,
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "dockerd";
  } catch {
    return false;
  }
};
const engineUp = async () => (await run(["docker", "info", "--format", "{{.ServerVersion}}"])).code === 0;

/** Other test runs on this machine (other checkouts): their containers would go down with dockerd. */
function othersTesting(): string[] {
  const r = spawnSync("pgrep", ["-fa", "node --test"], { encoding: "utf8" });
  return r.stdout
    .split("\n")
    .filter((l) => l.trim())
    .filter((l) => ![process.pid, process.ppid].includes(Number(l.split(" ")[0])));
}

describe("dockerd restarted under running apps", { timeout: 1_800_000 }, () => {
  const pier = new Pier({ PIER_LOG_LEVEL: "info" });
  let repo = "";
  let stoppedId = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    const docker = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "dd"])).id;
    const node = (await pier.cliJson<{ id: string }>(["create", "--type", "node", "dn"])).id;
    // An app deployed, then stopped by its user: the engine's return must not start it again.
    stoppedId = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "ds"])).id;
    // A kv add-on linked to the Node.js app (its deploy connects the add-on to the app's network).
    const kv = await pier.cli(["addon", "create", "kv", "dkv", "--link", "dn", "--flavor", "pico"]);
    assert.equal(kv.code, 0, kv.stderr);
    for (const [name, files, id] of [
      ["dd", markedApp("docker"), docker],
      ["dn", NODE_APP, node],
    ] as const) {
      const dir = await pier.repo(name, files, id);
      if (name === "dd") repo = dir;
      const push = await pier.push(dir);
      assert.equal(push.code, 0, push.stderr);
    }
    const ds = await pier.push(await pier.repo("ds", markedApp("stopped"), stoppedId));
    assert.equal(ds.code, 0, ds.stderr);
    assert.equal((await pier.get("ds")).body, "mark=stopped");
    assert.equal((await pier.cli(["stop", "--app", "ds"])).code, 0);
    assert.equal((await pier.get("dd")).body, "mark=docker");
    assert.equal((await pier.get("dn")).body, "mark=node");
    const set = await kvCli(["SET", "k", "survived"]);
    assert.equal(set.stdout.trim(), "OK", set.stderr);
  });
  /** valkey-cli inside the add-on's container, with its own password. */
  const kvCli = async (args: string[]) => {
    const { host } = await pier.cliJson<{ host: string }>(["addon", "status", "dkv"]);
    return run([
      "docker",
      "exec",
      host,
      "sh",
      "-c",
      `REDISCLI_AUTH="$PIER_ADDON_PASSWORD" valkey-cli -p 6378 ${args.join(" ")}`,
    ]);
  };
  after(async () => {
    if (!(await engineUp())) await waitFor("the engine", engineUp, 60_000).catch(() => undefined);
    await pier.destroy();
  });

  test("both apps serve again through the edge within 60 s of the engine's return, untouched", async (t) => {
    // Other runs' containers would stop too: wait for them (up to 10 min) rather than break them.
    await waitFor("other test runs to end", async () => othersTesting().length === 0, 600_000).catch(() =>
      t.diagnostic(`restarting dockerd while other tests run: ${othersTesting().join("; ")}`),
    );
    const pid = Number(readFileSync(PID_FILE, "utf8").trim());
    assert.ok(alive(pid), "dockerd runs and wrote its pid file");
    // Started again as it ran (the set-up's --userland-proxy=false): without its flags the machine kept a
    // docker-proxy per published port after this test, and every later edge measurement ran at half speed.
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    process.kill(pid, "SIGTERM");
    await waitFor("dockerd to exit", async () => !alive(pid), 120_000);
    const down = await pier.get("dd").catch(() => ({ status: 0 }));
    assert.notEqual(down.status, 200, "the apps were really down");

    const started = Date.now();
    const r = spawnSync(
      "bash",
      ["-c", 'setsid nohup "$@" >/var/log/pier-dockerd.log 2>&1 </dev/null 9>&- &', "restart", ...argv],
      { stdio: "ignore" },
    );
    assert.equal(r.status, 0);
    // dockerd loads every container on the machine before it answers (minutes on a busy test machine):
    // the bound is on Pier, from the moment the engine answers.
    await waitFor("dockerd to answer", engineUp, 600_000);
    const up = Date.now();
    const engineMs = up - started;
    try {
      for (const [app, mark] of [
        ["dd", "mark=docker"],
        ["dn", "mark=node"],
      ]) {
        await waitFor(
          `${app} to serve again`,
          async () => (await pier.get(app!, "/")).body === mark,
          Math.max(1000, 60_000 - (Date.now() - up)),
        );
      }
    } catch (e) {
      t.diagnostic(`engine up after ${engineMs} ms; pier server said:\n${pier.output.slice(-8000)}`);
      throw e;
    }
    t.diagnostic(`engine up after ${engineMs} ms; both apps served again ${Date.now() - up} ms later`);
    assert.match(pier.output, /engine events stream ended/);
    // The control plane works on the new engine: a deploy goes through.
    const status = await pier.cliJson<{ state: string }>(["status", "--app", "dd"]);
    assert.equal(status.state, "running");
    await pier.commit(repo, markedApp("docker2"), "after the engine restart");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.equal((await pier.get("dd")).body, "mark=docker2");
    // The stopped app stayed stopped: no container of it runs, and the edge does not serve it.
    const ds = await pier.cliJson<{ state: string }>(["status", "--app", "ds"]);
    assert.equal(ds.state, "stopped");
    // Instances carry their deployment's label; the app's sandboxes (kept while stopped) do not.
    const running = await run([
      "docker",
      "ps",
      "--filter",
      `label=pier.app=${stoppedId}`,
      "--filter",
      "label=pier.deployment",
      "--format",
      "{{.Names}}",
    ]);
    assert.equal(running.code, 0, running.stderr);
    assert.equal(running.stdout.trim(), "", "no instance of the stopped app runs");
    assert.notEqual((await pier.get("ds")).body, "mark=stopped");
  });

  test("the kv add-on comes back with its writes, still on the linked app's network", async () => {
    await waitFor(
      "the add-on to answer",
      async () => (await pier.cliJson<{ state: string }>(["addon", "status", "dkv"])).state === "running",
      60_000,
    );
    assert.equal((await kvCli(["GET", "k"])).stdout.trim(), "survived");
    const apps = await pier.cliJson<{ id: string; name: string }[]>(["apps"]);
    const dn = apps.find((a) => a.name === "dn")?.id;
    const s = await pier.cliJson<{ networks: string[] }>(["addon", "status", "dkv"]);
    assert.ok(s.networks.includes(`pier-${dn}`), s.networks.join(", "));
  });

  test("the apps are still kept apart by Pier's rules after the engine's return (ADR 0019)", async () => {
    const apps = await pier.cliJson<{ id: string; name: string }[]>(["apps"]);
    const instanceOf = (name: string) => firstInstance(apps.find((a) => a.name === name)?.id ?? "");
    const dd = await instanceOf("dd");
    const dn = await instanceOf("dn");
    assert.ok(dd.id && dn.id, "both apps have an instance");
    assert.match(dd.address, /^\d+\.\d+\.\d+\.\d+$/);
    assert.equal(
      await probeFrom(dd.id, dd.address),
      "open",
      "dd listens at its address (the address is real)",
    );
    assert.match(await probeFrom(dn.id, dd.address), /^closed/, "dn cannot reach dd");
  });
});
