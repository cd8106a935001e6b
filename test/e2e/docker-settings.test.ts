// The container runtime's variables (contract section 2.4), each through a real push.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { Pier } from "./harness.js";

const SERVER = `
const http = require("http"), net = require("net"), fs = require("fs"), os = require("os");
const port = Number(process.env.HTTP_PORT || 8080);
http.createServer((req, res) => {
  const v6 = Object.values(os.networkInterfaces()).flat().filter((i) => i.family === "IPv6" && !i.internal).map((i) => i.address);
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ port, socket: fs.existsSync("/var/run/docker.sock"), v6 }));
}).listen(port, "0.0.0.0");
if (process.env.TCP_PORT) net.createServer((s) => s.end("tcp-ok\\n")).listen(Number(process.env.TCP_PORT), "0.0.0.0");
`;

const dockerfile = (extra = "") =>
  [
    "FROM pier/node:22",
    "ARG HTTP_PORT",
    "ENV HTTP_PORT=$HTTP_PORT",
    extra,
    "COPY server.js /srv/server.js",
    'CMD ["node", "/srv/server.js"]',
    "",
  ].join("\n");

function tcpRead(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port });
    let data = "";
    s.on("data", (c: Buffer) => {
      data += c.toString();
    });
    s.on("end", () => resolve(data));
    s.on("error", reject);
    s.setTimeout(5000, () => s.destroy(new Error("timeout")));
  });
}

describe("Dockerfile runtime variables", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let id = "";
  let repo = "";
  const env = async (...pairs: string[]) => {
    for (let i = 0; i < pairs.length; i += 2) {
      const r = await pier.cli(["env", "set", pairs[i]!, pairs[i + 1]!, "--app", "knobs"]);
      assert.equal(r.code, 0, r.stderr);
    }
  };
  const unset = async (...names: string[]) => {
    const r = await pier.cli(["env", "rm", ...names, "--app", "knobs"]);
    assert.equal(r.code, 0, r.stderr);
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    id = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "knobs"])).id;
    repo = await pier.repo("knobs", { Dockerfile: dockerfile(), "server.js": SERVER }, id);
  });
  after(async () => {
    await pier.destroy();
  });

  test("CC_DOCKER_EXPOSED_HTTP_PORT and CC_DOCKER_EXPOSED_TCP_PORT: served on that port, TCP port in status", async () => {
    await env(
      "CC_DOCKER_EXPOSED_HTTP_PORT",
      "3000",
      "HTTP_PORT",
      "3000",
      "TCP_PORT",
      "9000",
      "CC_DOCKER_EXPOSED_TCP_PORT",
      "9000",
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    const r = await pier.get("knobs");
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).port, 3000);
    const status = await pier.cliJson<{ tcp: { host: string; port: number } | null }>([
      "status",
      "--app",
      "knobs",
    ]);
    assert.ok(status.tcp, "status shows the TCP port");
    assert.equal(await tcpRead(status.tcp.port), "tcp-ok\n");
    const human = await pier.cli(["status", "--app", "knobs"]);
    assert.match(human.stdout, new RegExp(String(status.tcp.port)));
    await unset("CC_DOCKER_EXPOSED_HTTP_PORT", "HTTP_PORT", "TCP_PORT", "CC_DOCKER_EXPOSED_TCP_PORT");
  });

  test("CC_DOCKERFILE names another Dockerfile; a missing one fails saying which", async () => {
    await pier.commit(repo, { "docker/App.Dockerfile": dockerfile("LABEL custom=yes") }, "custom dockerfile");
    await env("CC_DOCKERFILE", "docker/App.Dockerfile");
    const ok = await pier.push(repo);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /docker\/App\.Dockerfile/);
    await env("CC_DOCKERFILE", "docker/Missing.Dockerfile");
    await pier.commit(repo, {}, "again");
    const missing = await pier.push(repo);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /docker\/Missing\.Dockerfile/);
    await unset("CC_DOCKERFILE");
  });

  test("CC_DOCKER_BUILDX=true builds with BuildKit", async () => {
    await env("CC_DOCKER_BUILDX", "true");
    await pier.commit(repo, { Dockerfile: dockerfile("RUN echo built-by-buildkit-$((6*7))") }, "buildkit");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /BuildKit/);
    assert.equal((await pier.get("knobs")).status, 200);
    await unset("CC_DOCKER_BUILDX");
  });

  test("CC_DOCKER_FIXED-CIDR-V6 gives the instance an IPv6 address in that subnet", async () => {
    await env("CC_DOCKER_FIXED-CIDR-V6", "fd00:beef:1::/64");
    await pier.commit(repo, {}, "ipv6");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    const body = JSON.parse((await pier.get("knobs")).body) as { v6: string[] };
    assert.ok(
      body.v6.some((a) => a.startsWith("fd00:beef:1:")),
      JSON.stringify(body.v6),
    );
    await unset("CC_DOCKER_FIXED-CIDR-V6");
  });

  test("CC_MOUNT_DOCKER_SOCKET needs an admin's permission, then mounts the socket with a warning", async () => {
    await env("CC_MOUNT_DOCKER_SOCKET", "true");
    await pier.commit(repo, {}, "socket");
    const refused = await pier.push(repo);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /CC_MOUNT_DOCKER_SOCKET/);
    assert.equal(
      JSON.parse((await pier.get("knobs")).body).socket,
      false,
      "the previous release still serves",
    );

    const allow = await pier.api("PATCH", "/v1/apps/knobs", { allowDockerSocket: true });
    assert.equal(allow.status, 200);
    const ok = await pier.push(repo);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /isolation/i);
    assert.equal(JSON.parse((await pier.get("knobs")).body).socket, true);
    await unset("CC_MOUNT_DOCKER_SOCKET");
  });

  test("registry login: a failed login fails the deploy and never shows the password", async () => {
    await env(
      "CC_DOCKER_LOGIN_USERNAME",
      "deployer",
      "CC_DOCKER_LOGIN_PASSWORD",
      "pa55-Very-Secret",
      "CC_DOCKER_LOGIN_SERVER",
      // Not the host itself (a loopback registry is refused before any login: see hardening.test.ts).
      "registry.invalid:9",
    );
    await pier.commit(repo, {}, "login");
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /login to registry\.invalid:9 as deployer/i);
    assert.doesNotMatch(push.stderr, /pa55-Very-Secret/);
    const log = await pier.cli(["logs", "--deployment", "latest", "--app", "knobs"]);
    assert.doesNotMatch(log.stdout + log.stderr, /pa55-Very-Secret/);
    const db = await import("node:fs").then((fs) => fs.readFileSync(`${pier.dataDir}/pier.db`));
    assert.equal(db.includes("pa55-Very-Secret Registry"), false);
    await unset("CC_DOCKER_LOGIN_USERNAME", "CC_DOCKER_LOGIN_PASSWORD", "CC_DOCKER_LOGIN_SERVER");
  });

  test("a build that exceeds its build flavor's memory fails naming the flavor", async () => {
    assert.equal((await pier.cli(["scale", "--build-flavor", "pico", "--app", "knobs"])).code, 0);
    await pier.commit(
      repo,
      { Dockerfile: dockerfile('RUN node -e "const a=[]; for(;;) a.push(Buffer.alloc(1e7, 1))"') },
      "hungry build",
    );
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /out of memory: the pico build flavor has 256 MiB/);
    assert.match(push.stderr, /pier scale --build-flavor/);
    assert.equal((await pier.get("knobs")).status, 200, "the previous release still serves");
  });

  test("a commit with no files is refused: no Dockerfile", async () => {
    const emptyRepo = await pier.repo("empty", {}, id);
    await import("./harness.js").then(({ run }) =>
      run(["git", "-C", emptyRepo, "rm", "-rq", "--cached", "."]),
    );
    const push = await pier.push(emptyRepo, "master", ["--force"]);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /No Dockerfile/);
    assert.equal((await pier.get("knobs")).status, 200);
  });
});
