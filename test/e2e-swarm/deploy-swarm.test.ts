// PIER_ENGINE=swarm end to end on the lab's three nodes (ADR 0030): `pier server` on the manager builds a
// Node.js app pushed with git on the manager's dockerd, pushes its release image by digest to the lab's
// registry, runs its instance as a swarm service on the app's overlay; the health gate and the edge reach it
// from the edge's sandbox on the manager, which joined the overlay. Then what a user does next, unchanged on
// the swarm: scale over nodes and follow the logs of all, a custom domain with a certificate from an ACME
// server (pebble, validating through the edge's published port on the manager), a release and a rollback.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AcmeBed, httpsGet } from "../e2e/acme-bed.js";
import { freePort, NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { docker, type LabInfo, swarmPier, swarmPierDown, until } from "./lab.js";

interface StatusInstance {
  number: number;
  state: string;
  node?: string | null;
}
interface DomainJson {
  name: string;
  state: string;
  issuer: string | null;
  serial: string | null;
  lastError: string | null;
}

describe("PIER_ENGINE=swarm: git push deploys onto the swarm", { timeout: 900_000 }, () => {
  let info: LabInfo;
  let pier: Pier;

  let bed: AcmeBed | undefined;
  let acmeRoot = "";

  before(async () => {
    ({ info, pier } = await swarmPier({
      images: ["pier/base:bookworm", "pier/node:22"],
      // Pebble on this machine validates HTTP-01 at the edge's published address on the manager.
      beforeStart: async (p, lab) => {
        const manager = lab.nodes[0]!.address;
        bed = new AcmeBed(p.work);
        p.apiPort = await freePort();
        p.sshPort = await freePort();
        p.httpPort = await freePort();
        p.httpsPort = await freePort();
        await bed.start(manager);
        const pebble = await bed.pebble({ http: p.httpPort, https: p.httpsPort });
        acmeRoot = pebble.root;
        return {
          PIER_ACME_EMAIL: "e2e@example.test",
          PIER_ACME_CA: bed.caFile,
          PIER_ACME_DIRECTORY: pebble.directory,
        };
      },
    }));
  });
  after(async () => {
    await swarmPierDown(pier);
    bed?.stop();
  });

  let app: { id: string };
  let push: { code: number; stderr: string };
  let repo: string;

  test("a Node.js app is built on the manager, published to the registry by digest and run on the swarm", async () => {
    app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    const set = await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    repo = await pier.repo("web", NODE_DOCKER_APP, app.id);
    push = await pier.push(repo);
    assert.match(push.stderr, /remote: Built pier-app\/app-[0-9a-f]+:dep-[0-9a-f]+\./);
    // Its address is the task's on the app's overlay (Pier's subnet pool), its output came from its node.
    assert.match(push.stderr, /remote: Instance 0 started \(pier-web-\S+, 10\.210\.\d+\.\d+:8080\)/);
    // The release went to the registry by digest, and a worker pulls it from there.
    const published = await docker(info, "node1", [
      "image",
      "ls",
      "--digests",
      "--format",
      "{{.Repository}}@{{.Digest}}",
      `${info.registry.address}/pier-app/${app.id}`,
    ]);
    assert.match(published, /^\S+@sha256:[0-9a-f]{64}$/);
    await docker(info, "node2", ["pull", "-q", published]);
  });

  test("the health gate reaches the new instance and the edge serves it", async () => {
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Response from GET \/health is 200/);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);
    const services = await docker(info, "node1", [
      "service",
      "ls",
      "--filter",
      `label=pier.app=${app.id}`,
      "--format",
      "{{.Image}}",
    ]);
    assert.match(services, /@sha256:[0-9a-f]{64}$/);
    const r = await pier.get("web", "/health");
    assert.equal(r.status, 200);
    // The instance's output, from whichever node its task runs on.
    const lines = await pier.cliJson<{ line: string }[]>(["logs", "--since", "1h", "--app", "web"]);
    assert.ok(
      lines.some((l) => l.line.includes("listening on 8080")),
      JSON.stringify(lines).slice(0, 500),
    );
  });

  test("the swarm runs the deployment's instance only if it passed its gate", async () => {
    const services = await docker(info, "node1", [
      "service",
      "ls",
      "-q",
      "--filter",
      `label=pier.app=${app.id}`,
    ]);
    assert.equal(services.split("\n").filter(Boolean).length, push.code === 0 ? 1 : 0, push.stderr);
  });

  test("scaled to 3, one on each node, pier logs -f follows the instances on every node", async () => {
    const scaled = await pier.cli(["scale", "--instances", "3", "--app", "web"]);
    assert.equal(scaled.code, 0, scaled.stderr);
    const placed = await until("3 running instances with their nodes", 120, async () => {
      const st = await pier.cliJson<{ instances: StatusInstance[] }>(["status", "--app", "web"]);
      const up = st.instances.filter((i) => i.state === "running" && i.node);
      return up.length === 3 ? up : undefined;
    });
    const nodeOf = new Map(placed.map((i) => [i.number, i.node ?? ""]));
    assert.equal(new Set(nodeOf.values()).size, 3, JSON.stringify(placed));
    const follower = pier.followLogs("web");
    const nodesSeen = () =>
      new Set(
        follower
          .out()
          .split("\n")
          .filter((l) => l.includes("said follow-"))
          .map((l) => nodeOf.get((JSON.parse(l) as { instance: number }).instance)),
      );
    try {
      await new Promise((r) => setTimeout(r, 1500));
      // The edge spreads new connections over the 3 instances: lines come from instances on 2+ nodes.
      for (let i = 0; i < 60 && nodesSeen().size < 2; i++) {
        assert.equal((await pier.get("web", `/say/follow-${i}`)).status, 200);
        await new Promise((r) => setTimeout(r, 100));
      }
      await until("lines from instances on 2 nodes", 20, async () =>
        nodesSeen().size >= 2 ? true : undefined,
      );
    } finally {
      follower.stop();
    }
  });

  test("a custom domain gets its certificate through the edge on the manager; HTTPS serves the app", async () => {
    const add = await pier.cli(["domain", "add", "www.example.test", "--app", "web"]);
    assert.equal(add.code, 0, add.stderr);
    const issued = await until("the domain's certificate issued", 120, async () => {
      const d = (await pier.cliJson<DomainJson[]>(["domain", "--app", "web"])).find(
        (x) => x.name === "www.example.test",
      );
      if (d?.state === "failed") throw new Error(`failed: ${d.lastError}`);
      return d?.state === "issued" ? d : undefined;
    });
    assert.match(issued.issuer ?? "", /Pebble/i);
    const r = await httpsGet(pier.httpsPort, "www.example.test", acmeRoot, "/", pier.edgeAddress);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.serial, issued.serial);
    assert.equal(
      (JSON.parse(r.body) as { headers: Record<string, string> }).headers["x-forwarded-proto"],
      "https",
    );
  });

  test("a new release, then a rollback to the first, each through the gate on the swarm", async () => {
    const releases = async () =>
      pier.cliJson<{ number: number; current: boolean }[]>(["releases", "--app", "web"]);
    const first = (await releases()).find((r) => r.current);
    assert.ok(first);
    // `pier logs -f` started before the push goes on through it: the new release's services join the stream.
    const follower = pier.followLogs("web");
    const version = async () => (JSON.parse((await pier.get("web")).body) as { version: string }).version;
    try {
      await new Promise((r) => setTimeout(r, 1500));
      await pier.commit(
        repo,
        { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "2"') },
        "v2",
      );
      const push2 = await pier.push(repo);
      assert.equal(push2.code, 0, push2.stderr);
      assert.equal(await version(), "2");
      await until("a line of the new release on the stream begun before it", 30, async () => {
        await pier.get("web", "/say/from-v2");
        return follower.out().includes("said from-v2") ? true : undefined;
      });
      assert.ok(follower.running(), `the follow goes on: ${follower.err()}`);
    } finally {
      follower.stop();
    }
    // The first release's 3 instances are stopped once the second serves (and any stopped before are
    // removed). What each printed on SIGTERM stays in pier logs after the swarm deleted its task (about a
    // second after it ended), as one machine keeps a stopped container until the next deploy.
    const farewells = async () =>
      (await pier.cliJson<{ line: string }[]>(["logs", "--since", "1h", "--app", "web"])).filter((l) =>
        l.line.includes("got SIGTERM"),
      ).length;
    await until("the retired instances' SIGTERM lines in pier logs", 60, async () =>
      (await farewells()) === 3 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(await farewells(), 3, "still there, once each, after the swarm deleted the tasks");
    const back = await pier.cli(["rollback", `v${first.number}`, "--app", "web"]);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stderr, /Rolling back to release v\d+/);
    for (let i = 0; i < 6; i++) assert.equal(await version(), "1", "every instance serves the first release");
    assert.equal((await releases())[0]?.current, true);
    // After each deploy Pier asks the registry which tags it may forget: its API calls trust the registry's
    // CA as the manager's dockerd does (PIER_DOCKER_CERTS_DIR), so no such call failed.
    assert.doesNotMatch(pier.output, /could not forget pruned release images/);
  });

  test("a release whose gate fails on the swarm: the contract's lines, the serving release untouched, its services gone", async () => {
    // Each service with its replicas: the serving release's 3 (1/1), and the release before it (stopped,
    // 0/0, kept for its last logs until the next deploy succeeds).
    const services = async () =>
      (
        await docker(info, "node1", [
          "service",
          "ls",
          "--filter",
          `label=pier.app=${app.id}`,
          "--format",
          "{{.ID}} {{.Replicas}}",
        ])
      )
        .split("\n")
        .filter(Boolean)
        .sort();
    const before = await until("the 3 serving services, the retired ones stopped", 90, async () => {
      const now = await services();
      const settled = now.every((l) => l.endsWith(" 1/1") || l.endsWith(" 0/0"));
      return settled && now.filter((l) => l.endsWith(" 1/1")).length === 3 ? now : undefined;
    });
    assert.equal((await pier.cli(["env", "set", "HEALTH_STATUS", "503", "--app", "web"])).code, 0);
    await pier.commit(repo, { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "4"') }, "v4");
    const push4 = await pier.push(repo);
    assert.notEqual(push4.code, 0);
    const lines = push4.stderr.split("\n").map((l) => l.replace(/^remote: /, "").trimEnd());
    const at = lines.indexOf("Response from GET /health is 503");
    assert.ok(at >= 0, push4.stderr);
    assert.equal(lines[at + 1], "Health check failed:");
    assert.equal(lines[at + 2], "- GET /health returned 503.");
    for (let i = 0; i < 6; i++) {
      const r = await pier.get("web");
      assert.equal(r.status, 200, r.body);
      assert.equal((JSON.parse(r.body) as { version: string }).version, "1");
    }
    // The failed release's services are removed; every other one is as it was.
    const want = JSON.stringify(before);
    await until(`the services as before: ${want}`, 60, async () =>
      JSON.stringify(await services()) === want ? true : undefined,
    );
    assert.equal((await pier.cli(["env", "rm", "HEALTH_STATUS", "--app", "web"])).code, 0);
  });

  test("no node takes new work (all paused): the deploy fails naming why and what to do; the app keeps serving", async () => {
    const names = info.nodes.map((n) => n.name);
    const availability = (a: string) =>
      Promise.all(names.map((n) => docker(info, "node1", ["node", "update", "--availability", a, n])));
    await availability("pause");
    try {
      await pier.commit(
        repo,
        { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "5"') },
        "v5",
      );
      const push5 = await pier.push(repo);
      assert.notEqual(push5.code, 0);
      assert.match(push5.stderr, /did not start: no node can run it \(no suitable node/);
      assert.match(push5.stderr, /pier nodes activate NAME/);
      const r = await pier.get("web");
      assert.equal(r.status, 200, r.body);
      assert.equal((JSON.parse(r.body) as { version: string }).version, "1");
    } finally {
      await availability("active");
    }
  });
});
