// The swarm lab (scripts/swarm-lab.sh) gives what Pier's swarm driver stands on (ADR 0030): three nodes
// Ready, an image through the lab's registry (TLS from the lab's CA, htpasswd) deployed by digest and
// pulled on two nodes, a dnsrr service on an attachable overlay answering HTTP from a container on that
// overlay on another node, a killed node's task running again on another node, and `down` leaving nothing.
// The lab is this file's while it runs: another process's `up` or `down` of it refuses, naming this one.
// Timings are printed as diagnostics, never asserted (bench/ holds timings).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { docker, importBusybox, type LabInfo, lab, labAs, labLeftovers, labUp, until } from "./lab.js";

const SERVICE = "web";
const NETWORK = "lab-net";
// The page each task serves names its node (the task's hostname is its node's).
const SERVE = "hostname > /www/index.html && exec httpd -f -p 8080 -h /www";
// From a container on the overlay: every address of tasks.web, and what each answers (busybox's nc: its
// wget, linked statically against glibc, crashes in a container).
const ASK_EACH =
  "for a in $(nslookup tasks.web 127.0.0.11 | sed -n 's/^Address[^0-9]*\\([0-9.]*\\)$/\\1/p' | grep -v '^127\\.'); do printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $a 8080 | tail -n 1; done";

describe("the swarm lab", { timeout: 600_000 }, () => {
  let info: LabInfo;
  let ref = "";

  const running = async (): Promise<string[]> =>
    (
      await docker(info, "node1", [
        "service",
        "ps",
        SERVICE,
        "--filter",
        "desired-state=running",
        "--format",
        "{{.Node}} {{.CurrentState}}",
      ])
    )
      .split("\n")
      .filter((l) => / Running /.test(` ${l} `))
      .map((l) => l.split(" ")[0] ?? "")
      .sort();
  const answers = async (): Promise<string[]> =>
    (await docker(info, "node1", ["run", "--rm", "--network", NETWORK, ref, "sh", "-c", ASK_EACH]))
      .split("\n")
      .filter((l) => l !== "")
      .sort();

  before(async () => {
    await lab("down");
    info = await labUp(3);
  });
  after(async () => {
    await lab("down").catch(() => undefined);
  });

  test("up 3: three nodes Ready and active, node1 the manager, a DOCKER_HOST and the registry's details", async () => {
    assert.deepEqual(
      info.nodes.map((n) => n.name),
      ["node1", "node2", "node3"],
    );
    assert.match(info.dockerHost, /^unix:\/\//);
    assert.match(info.registry.address, /^[0-9.]+:5000$/);
    const nodes = await docker(info, "node1", [
      "node",
      "ls",
      "--format",
      "{{.Hostname}} {{.Status}} {{.Availability}} {{.ManagerStatus}}",
    ]);
    assert.deepEqual(nodes.split("\n").sort(), [
      "node1 Ready Active Leader",
      "node2 Ready Active ",
      "node3 Ready Active ",
    ]);
    // up is idempotent: a second one changes nothing and prints the same.
    assert.deepEqual(await labUp(3), info);
  });

  test("held: another process's up, then down, of this lab refuses at once, naming this process", async () => {
    const name = process.env.PIER_SWARM_LAB_NAME ?? "pierlab";
    const command = readFileSync("/proc/self/cmdline", "utf8").split("\0").join(" ").trim();
    const other = spawn("sleep", ["120"], { stdio: "ignore" });
    try {
      const owner = other.pid ?? 0;
      const held = `the lab ${name} is in use by pid ${process.pid} (${command}); free it with`;
      for (const args of [["up", "3", "--json"], ["down"]]) {
        await assert.rejects(labAs(owner, ...args), (e: Error) => {
          assert.ok(e.message.includes(held), e.message);
          assert.match(e.message, /npm run swarm-lab -- down` or `kill [0-9]+`/);
          return true;
        });
      }
    } finally {
      other.kill("SIGKILL");
    }
    // The lab is still up, and still this process's.
    assert.deepEqual(await labUp(3), info);
  });

  test("an image pushed to the registry runs by digest on two nodes, which pulled it", async () => {
    const tag = await importBusybox(info, "node1", `${info.registry.address}/lab/web:1`);
    const pushed = await docker(info, "node1", ["push", tag]);
    const digest = /digest: (sha256:[0-9a-f]{64})/.exec(pushed)?.[1];
    assert.ok(digest, pushed);
    ref = `${info.registry.address}/lab/web@${digest}`;
    await docker(info, "node1", ["network", "create", "-d", "overlay", "--attachable", NETWORK]);
    await docker(info, "node1", [
      ...["service", "create", "--detach", "--name", SERVICE, "--with-registry-auth", "--network", NETWORK],
      ...["--endpoint-mode", "dnsrr", "--replicas", "2", "--replicas-max-per-node", "1"],
      ...["--constraint", "node.role==worker", "--hostname", "{{.Node.Hostname}}", "--restart-delay", "0s"],
      ...[ref, "sh", "-c", SERVE],
    ]);
    const nodes = await until("two tasks running", 90, async () => {
      const r = await running();
      return r.length === 2 ? r : undefined;
    });
    assert.deepEqual(nodes, ["node2", "node3"]);
    for (const node of nodes) {
      const images = await docker(info, node, [
        "image",
        "ls",
        "--digests",
        "--format",
        "{{.Repository}}@{{.Digest}}",
      ]);
      assert.ok(images.split("\n").includes(ref), `${node} has ${ref}: ${images}`);
    }
    assert.equal(
      await docker(info, "node1", [
        "service",
        "inspect",
        SERVICE,
        "--format",
        "{{.Spec.TaskTemplate.ContainerSpec.Image}}",
      ]),
      ref,
    );
  });

  test("the dnsrr service answers HTTP from a container on the overlay, from every task", async () => {
    assert.equal(
      await docker(info, "node1", ["service", "inspect", SERVICE, "--format", "{{.Spec.EndpointSpec.Mode}}"]),
      "dnsrr",
    );
    const seen = await until("both tasks answer on the overlay", 30, async () => {
      const a = await answers();
      return a.length === 2 ? a : undefined;
    });
    assert.deepEqual(seen, ["node2", "node3"]);
  });

  test("a node's dockerd killed: the node is Down and its task runs again on another node", async (t) => {
    await docker(info, "node1", [
      "service",
      "update",
      "--detach",
      "--replicas",
      "1",
      "--replicas-max-per-node",
      "0",
      SERVICE,
    ]);
    const [victim] = await until("one task running", 60, async () => {
      const r = await running();
      return r.length === 1 ? r : undefined;
    });
    assert.ok(victim === "node2" || victim === "node3");
    const other = victim === "node2" ? "node3" : "node2";
    const t0 = Date.now();
    await lab("kill", victim);
    const down = await until(`${victim} marked Down`, 60, async () => {
      const s = await docker(info, "node1", ["node", "inspect", victim, "--format", "{{.Status.State}}"]);
      return s === "down" ? Date.now() - t0 : undefined;
    });
    const moved = await until(`the task running on ${other}`, 60, async () => {
      const r = await running();
      return r.length === 1 && r[0] === other ? Date.now() - t0 : undefined;
    });
    t.diagnostic(`node down after ${down} ms, its task running on ${other} after ${moved} ms`);
    assert.deepEqual(
      await until("the moved task answers", 30, async () => {
        const a = await answers();
        return a.length === 1 ? a : undefined;
      }),
      [other],
    );
    // start brings the node back into the swarm.
    await lab("start", victim);
    await until(`${victim} Ready again`, 60, async () => {
      const s = await docker(info, "node1", ["node", "inspect", victim, "--format", "{{.Status.State}}"]);
      return s === "ready" ? true : undefined;
    });
    await assert.rejects(lab("kill", "bogus"), /'bogus' is not a lab node name/);
  });

  test("down leaves no namespace, veth, process, mount, cgroup or directory", async () => {
    await lab("down");
    assert.deepEqual(await labLeftovers(), []);
    assert.deepEqual(JSON.parse(await lab("status", "--json")), { up: false, nodes: [] });
  });
});
