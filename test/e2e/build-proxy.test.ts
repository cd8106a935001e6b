// A Node.js app's build behind a proxy (the guide's Node.js runtime section): the server's HTTPS_PROXY is not
// the builds', so an app whose builds must go through a proxy sets npm_config_https_proxy as its own
// variable, which its build sees. The proxy here stands for one on the LAN: a network namespace of this
// test at a private address, routed from the host by a veth pair, which Pier's isolation closes to apps
// unless PIER_EGRESS_ALLOW lists it (ADR 0019). Its listener hands each connection over a unix socket to a
// CONNECT proxy in this process, which reaches the npm registry from the host and records what was asked.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connectProxy, npmRegistryTarget } from "../support/connect-proxy.js";
import { Pier } from "./harness.js";
import { nodeInPeerHost, peerHost, peerHostDown, peerHostUp } from "./probes.js";

const tag = randomBytes(3).toString("hex");
/** The proxy's address "on the LAN": private, outside Pier's subnet pool. */
const PROXY = "10.254.77.2";
const HOST = peerHost("pxy", tag, PROXY, "10.254.77.1");
const PORT = 3128;
const REGISTRY = npmRegistryTarget();

const pkg = `${JSON.stringify({ name: "proxied", version: "1.0.0", private: true, scripts: { start: "node server.js" }, dependencies: { ms: "2.0.0" } }, null, 2)}\n`;
const SERVER = `require("http").createServer((q, s) => s.end(require("ms/package.json").version + " " + require("ms")("1h"))).listen(8080, "0.0.0.0");\n`;

describe("a Node.js build through the app's own proxy", { timeout: 600_000 }, () => {
  const pier = new Pier({ PIER_EGRESS_ALLOW: `${PROXY}/32` });
  const dir = mkdtempSync(join(tmpdir(), "pier-proxy-"));
  const sock = join(dir, "proxy.sock");
  const proxy = connectProxy(REGISTRY);
  const asked = proxy.asked;
  let relay: ChildProcess | null = null;

  before(async () => {
    proxy.server.listen(sock);
    await peerHostUp(HOST);
    // The listener on the "LAN" address: each connection goes on to the proxy's unix socket.
    relay = nodeInPeerHost(
      HOST,
      `const net=require("net");net.createServer((c)=>{const u=net.connect(${JSON.stringify(sock)});` +
        `c.pipe(u);u.pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());})` +
        `.listen(${PORT},${JSON.stringify(PROXY)},()=>console.log("ready"))`,
      ["ignore", "pipe", "inherit"],
    );
    await new Promise<void>((resolve, reject) => {
      relay?.stdout?.once("data", () => resolve());
      relay?.once("exit", (code) => reject(new Error(`the proxy's relay exited (${code})`)));
    });
    await pier.start();
    await pier.addKey();
  });

  after(async () => {
    await pier.destroy();
    relay?.kill("SIGKILL");
    await proxy.close();
    await peerHostDown(HOST);
    rmSync(dir, { recursive: true, force: true });
  });

  test("npm_config_https_proxy on the app: its build installs through that proxy, and the app serves", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "proxied"]);
    const set = await pier.cli([
      "env",
      "set",
      "npm_config_https_proxy",
      `http://${PROXY}:${PORT}`,
      "--app",
      "proxied",
    ]);
    assert.equal(set.code, 0, set.stderr);
    const repo = await pier.repo(
      "proxied",
      { "package.json": pkg, "server.js": SERVER, ".gitignore": "/node_modules\n" },
      app.id,
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    // A new app's build has an empty npm cache: ms came through the proxy, and nothing else was asked of it.
    assert.ok(asked.includes(REGISTRY), `the proxy was asked for: ${JSON.stringify(asked)}`);
    assert.deepEqual(
      asked.filter((a) => a !== REGISTRY),
      [],
      "only the registry was asked for",
    );
    const r = await pier.get("proxied");
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, "2.0.0 3600000");
  });
});
