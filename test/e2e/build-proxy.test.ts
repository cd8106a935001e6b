// A Node.js app's build behind a proxy (the guide's Node.js runtime section): the server's HTTPS_PROXY is not
// the builds', so an app whose builds must go through a proxy sets npm_config_https_proxy as its own
// variable, which its build sees. The proxy here stands for one on the LAN: a network namespace of this
// test at a private address, routed from the host by a veth pair, which Pier's isolation closes to apps
// unless PIER_EGRESS_ALLOW lists it (ADR 0019). Its listener hands each connection over a unix socket to a
// CONNECT proxy in this process, which reaches the npm registry from the host and records what was asked.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const tag = randomBytes(3).toString("hex");
const NS = `pxy-${tag}`;
const VETH = `vx${tag}`;
const PEER = `vy${tag}`;
/** The proxy's address "on the LAN": private, outside Pier's subnet pool. */
const PROXY = "10.254.77.2";
const HOST_SIDE = "10.254.77.1";
const PORT = 3128;
const REGISTRY = `${new URL(process.env.PIER_NPM_REGISTRY ?? "https://registry.npmjs.org").hostname}:443`;

async function sh(argv: string[]): Promise<void> {
  const r = await run(argv, { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
}

/** A CONNECT proxy on a unix socket, to the registry only; `asked` records every CONNECT target. */
function connectProxy(path: string, asked: string[]): Server {
  const server = createServer((_q, s) => s.writeHead(405).end());
  server.on("connect", (req, client: Socket, head: Buffer) => {
    asked.push(req.url ?? "");
    client.on("error", () => client.destroy());
    if (req.url !== REGISTRY) {
      client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const [host, port] = REGISTRY.split(":") as [string, string];
    const upstream = connect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  });
  server.listen(path);
  return server;
}

const pkg = `${JSON.stringify({ name: "proxied", version: "1.0.0", private: true, scripts: { start: "node server.js" }, dependencies: { ms: "2.0.0" } }, null, 2)}\n`;
const SERVER = `require("http").createServer((q, s) => s.end(require("ms/package.json").version + " " + require("ms")("1h"))).listen(8080, "0.0.0.0");\n`;

describe("a Node.js build through the app's own proxy", { timeout: 600_000 }, () => {
  const pier = new Pier({ PIER_EGRESS_ALLOW: `${PROXY}/32` });
  const dir = mkdtempSync(join(tmpdir(), "pier-proxy-"));
  const sock = join(dir, "proxy.sock");
  const asked: string[] = [];
  let proxy: Server | null = null;
  let relay: ChildProcess | null = null;

  before(async () => {
    proxy = connectProxy(sock, asked);
    await sh(["ip", "netns", "add", NS]);
    await sh(["ip", "link", "add", VETH, "type", "veth", "peer", "name", PEER]);
    await sh(["ip", "link", "set", PEER, "netns", NS]);
    await sh(["ip", "addr", "add", `${HOST_SIDE}/32`, "dev", VETH]);
    await sh(["ip", "link", "set", VETH, "up"]);
    await sh(["ip", "route", "add", `${PROXY}/32`, "dev", VETH]);
    await sh(["ip", "netns", "exec", NS, "ip", "addr", "add", `${PROXY}/32`, "dev", PEER]);
    await sh(["ip", "netns", "exec", NS, "ip", "link", "set", PEER, "up"]);
    await sh(["ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up"]);
    await sh(["ip", "netns", "exec", NS, "ip", "route", "add", "default", "dev", PEER]);
    // The listener on the "LAN" address: each connection goes on to the proxy's unix socket.
    relay = spawn(
      "ip",
      [
        "netns",
        "exec",
        NS,
        process.execPath,
        "-e",
        `const net=require("net");net.createServer((c)=>{const u=net.connect(${JSON.stringify(sock)});` +
          `c.pipe(u);u.pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());})` +
          `.listen(${PORT},${JSON.stringify(PROXY)},()=>console.log("ready"))`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
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
    proxy?.close();
    await run(["ip", "route", "del", `${PROXY}/32`, "dev", VETH]);
    await run(["ip", "link", "del", VETH]);
    await run(["ip", "netns", "del", NS]);
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
