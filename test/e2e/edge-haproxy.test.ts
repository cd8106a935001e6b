// The HAProxy edge on its own: real HAProxy, real HTTP servers on loopback.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, createServer, request, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { HaproxyEdge } from "../../src/adapters/edge/haproxy.js";
import { freePort, httpGet } from "./harness.js";

function backend(name: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          name,
          xff: req.headers["x-forwarded-for"],
          proto: req.headers["x-forwarded-proto"],
        }),
      );
    });
    server.listen(0, "127.0.0.1", () => {
      const a = server.address();
      resolve({ server, port: typeof a === "object" && a ? a.port : 0 });
    });
  });
}

describe("HAProxy edge", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-edge-"));
  let edge: HaproxyEdge;
  let port = 0;
  const servers: Server[] = [];
  const get = (host: string) => httpGet(port, host);

  before(async () => {
    port = await freePort();
    edge = new HaproxyEdge({ dir: join(dir, "edge"), listenHost: "127.0.0.1", listenPort: port });
    await edge.start();
  });
  after(async () => {
    await edge.stop();
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("routes by Host with forwarded headers; unknown hosts get 404, apps without instances 503", async () => {
    const a = await backend("a");
    servers.push(a.server);
    await edge.apply([
      { appId: "app-a", hostname: "a.localhost", targets: [{ host: "127.0.0.1", port: a.port }] },
      { appId: "app-b", hostname: "b.localhost", targets: [] },
    ]);
    const r = await get("a.localhost");
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { name: "a", xff: "127.0.0.1", proto: "http" });
    assert.equal((await get("A.LOCALHOST:80")).status, 200, "host matching ignores case and port");
    const none = await get("nope.localhost");
    assert.equal(none.status, 404);
    assert.match(none.body, /No app is served/);
    const b = await get("b.localhost");
    assert.equal(b.status, 503);
    assert.match(b.body, /no running instance/);
  });

  test("balances across targets", async () => {
    const a2 = await backend("a2");
    servers.push(a2.server);
    const a1 = JSON.parse((await get("a.localhost")).body).name;
    assert.equal(a1, "a");
    const current = servers[0]!.address();
    const aPort = typeof current === "object" && current ? current.port : 0;
    await edge.apply([
      {
        appId: "app-a",
        hostname: "a.localhost",
        targets: [
          { host: "127.0.0.1", port: aPort },
          { host: "127.0.0.1", port: a2.port },
        ],
      },
      { appId: "app-b", hostname: "b.localhost", targets: [] },
    ]);
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(JSON.parse((await get("a.localhost")).body).name);
    assert.deepEqual([...seen].sort(), ["a", "a2"]);
  });

  test("switching targets under keep-alive load drops no request", async () => {
    // One instance, as after a deploy; from here each deploy is a runtime switch, never a reload.
    const first = await backend("first");
    servers.push(first.server);
    await edge.apply([
      { appId: "app-a", hostname: "a.localhost", targets: [{ host: "127.0.0.1", port: first.port }] },
      { appId: "app-b", hostname: "b.localhost", targets: [] },
    ]);
    const pid = edge.pid();
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    let ok = 0;
    const failures: string[] = [];
    let running = true;
    const deadline = Date.now() + 20_000;
    const one = () =>
      new Promise<void>((resolve) => {
        const req = request(
          { host: "127.0.0.1", port, path: "/", agent, headers: { host: "a.localhost" } },
          (res) => {
            res.resume();
            res.on("end", () => {
              if (res.statusCode === 200) ok++;
              else failures.push(String(res.statusCode));
              resolve();
            });
          },
        );
        req.on("error", (e) => {
          failures.push(e.message);
          resolve();
        });
        req.end();
      });
    const clients = Array.from({ length: 8 }, async () => {
      while (running && Date.now() < deadline) await one();
    });
    for (let i = 0; i < 5; i++) {
      const next = await backend(`gen${i}`);
      servers.push(next.server);
      await edge.apply([
        { appId: "app-a", hostname: "a.localhost", targets: [{ host: "127.0.0.1", port: next.port }] },
        { appId: "app-b", hostname: "b.localhost", targets: [] },
      ]);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(JSON.parse((await get("a.localhost")).body).name, `gen${i}`);
    }
    running = false;
    await Promise.all(clients);
    agent.destroy();
    assert.ok(ok > 100, `only ${ok} requests ran`);
    assert.deepEqual(failures, []);
    assert.equal(edge.pid(), pid, "no reload happened");
  });

  test("a new app is added by a seamless reload; a restarted control plane adopts the running edge", async () => {
    const c = await backend("c");
    servers.push(c.server);
    const routes = [
      { appId: "app-a", hostname: "a.localhost", targets: [] },
      { appId: "app-b", hostname: "b.localhost", targets: [] },
      { appId: "app-c", hostname: "c.localhost", targets: [{ host: "127.0.0.1", port: c.port }] },
    ];
    await edge.apply(routes);
    assert.equal(JSON.parse((await get("c.localhost")).body).name, "c");
    const again = new HaproxyEdge({ dir: join(dir, "edge"), listenHost: "127.0.0.1", listenPort: port });
    await again.start();
    assert.equal(again.pid(), edge.pid(), "the running daemon is adopted, not replaced");
    await again.apply(routes);
    assert.equal(JSON.parse((await get("c.localhost")).body).name, "c");
  });

  test("a pid file naming another process (its HAProxy gone, the pid given out again): that process is never signalled", async () => {
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    const own = join(dir, "edge-stale");
    mkdirSync(own, { recursive: true, mode: 0o700 });
    writeFileSync(join(own, "haproxy.pid"), `${other.pid}\n`);
    const stale = new HaproxyEdge({ dir: own, listenHost: "127.0.0.1", listenPort: await freePort() });
    try {
      await stale.start();
      assert.notEqual(stale.pid(), other.pid, "its own HAProxy serves");
      assert.ok(stale.pid(), "a HAProxy of its own runs");
      await stale.stop();
      assert.equal(other.exitCode, null, "the other process was not ended");
      assert.equal(other.signalCode, null, "the other process got no signal");
    } finally {
      other.kill("SIGKILL");
    }
  });

  test("reloads (apps added and removed) drop no request of another app, on new connections too", async () => {
    // A reload hands the listeners to a new HAProxy process; the old one still answers what it accepted.
    const steady = await backend("steady");
    servers.push(steady.server);
    const base = [
      { appId: "app-s", hostname: "s.localhost", targets: [{ host: "127.0.0.1", port: steady.port }] },
    ];
    await edge.apply(base);
    let ok = 0;
    const failures: string[] = [];
    let running = true;
    const deadline = Date.now() + 30_000;
    const clients = Array.from({ length: 4 }, async () => {
      while (running && Date.now() < deadline) {
        // agent: false, a new connection per request: the ones the old process accepted last matter.
        const r = await httpGet(port, "s.localhost").catch((e: Error) => ({ status: 0, body: e.message }));
        if (r.status === 200) ok++;
        else failures.push(`${r.status}: ${r.body.slice(0, 60)}`);
      }
    });
    const pids = new Set<number | null>();
    for (let i = 0; i < 20 && Date.now() < deadline; i++) {
      const extra = i % 2 === 0 ? [{ appId: `app-r${i}`, hostname: `r${i}.localhost`, targets: [] }] : [];
      await edge.apply([...base, ...extra]);
      pids.add(edge.pid());
      await new Promise((r) => setTimeout(r, 100));
    }
    running = false;
    await Promise.all(clients);
    assert.ok(pids.size >= 10, `the edge reloaded (${pids.size} processes)`);
    assert.ok(ok > 200, `only ${ok} requests ran`);
    assert.deepEqual(failures, []);
  });

  test("a streamed response's parts pass the edge as they come (server-sent events, flushed pages)", async () => {
    // The backend writes its last part only once the client has the first: an edge that held parts until
    // the response ended would never deliver it (how soon it comes, `option http-no-delay`, is measured by
    // bench/edge-stream.ts, ADR 0027).
    let firstArrived: () => void = () => undefined;
    const arrived = new Promise<void>((r) => {
      firstArrived = r;
    });
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n");
      void arrived.then(() => res.end("data: last\n\n"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    servers.push(server);
    const a = server.address();
    const sse = { host: "127.0.0.1", port: typeof a === "object" && a ? a.port : 0 };
    await edge.apply([{ appId: "app-e", hostname: "e.localhost", targets: [sse] }]);
    const body = await new Promise<string[]>((resolve, reject) => {
      const parts: string[] = [];
      const req = request({ host: "127.0.0.1", port, path: "/", headers: { host: "e.localhost" } }, (res) => {
        res.on("data", (c: Buffer) => {
          parts.push(c.toString());
          firstArrived();
        });
        res.on("end", () => resolve(parts));
      });
      // Bounds a hang only: without streaming the first part never comes.
      req.setTimeout(30_000, () => req.destroy(new Error("the first part did not pass the edge")));
      req.on("error", reject);
      req.end();
    });
    assert.equal(body[0], "data: first\n\n", "the first part came alone, before the backend wrote the last");
    assert.equal(body.join(""), "data: first\n\ndata: last\n\n");
  });

  test("a route the edge cannot take is skipped and reported; every other app keeps being served", async () => {
    const c = await backend("c2");
    servers.push(c.server);
    const { skipped } = await edge.apply([
      { appId: "app-x", hostname: "x-.localhost", targets: [{ host: "127.0.0.1", port: c.port }] },
      { appId: "app-y", hostname: "bad host", targets: [] },
      { appId: "app-c", hostname: "c.localhost", targets: [{ host: "127.0.0.1", port: c.port }] },
    ]);
    assert.deepEqual(
      skipped.map((s) => s.appId),
      ["app-x", "app-y"],
    );
    assert.match(skipped[0]?.reason ?? "", /x-/);
    assert.equal(JSON.parse((await get("c.localhost")).body).name, "c2");
    assert.equal((await get("x-.localhost")).status, 404, "the skipped app is not routed");
  });

  test("new visitors reuse the edge's idle connections to the app instead of opening one each", async () => {
    const b = await backend("reuse");
    servers.push(b.server);
    let connections = 0;
    b.server.on("connection", () => connections++);
    await edge.apply([
      { appId: "app-n", hostname: "n.localhost", targets: [{ host: "127.0.0.1", port: b.port }] },
    ]);
    // One at a time, each on a new client connection (httpGet has no agent): the first request of each.
    for (let i = 0; i < 20; i++) assert.equal((await get("n.localhost")).status, 200);
    assert.ok(connections <= 2, `the app saw ${connections} connections for 20 visitors`);
  });

  test("an app that closes idle connections as the edge takes them fails no GET", async () => {
    // The worst case for reusing idle connections: each is closed 0-2 ms after its response, without
    // `Connection: close`. The edge retries such a request on a new connection (GET, HEAD, PUT, ...).
    let served = 0;
    const raw: TcpServer = createTcpServer((c) => {
      let buf = "";
      let timer: NodeJS.Timeout | undefined;
      c.on("data", (d) => {
        buf += d.toString("latin1");
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        buf = buf.slice(end + 4);
        clearTimeout(timer);
        served++;
        c.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
        timer = setTimeout(() => c.destroy(), 2 * Math.random());
      });
      c.on("error", () => undefined);
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", () => r()));
    const a = raw.address();
    await edge.apply([
      {
        appId: "app-k",
        hostname: "k.localhost",
        targets: [{ host: "127.0.0.1", port: typeof a === "object" && a ? a.port : 0 }],
      },
    ]);
    const failures: string[] = [];
    let ok = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 150; i++) {
          const r = await get("k.localhost").catch((e: Error) => ({ status: 0, body: e.message }));
          if (r.status === 200) ok++;
          else failures.push(`${r.status}: ${r.body.slice(0, 60)}`);
          await new Promise((res) => setTimeout(res, Math.random()));
        }
      }),
    );
    raw.close();
    assert.deepEqual(failures.slice(0, 5), []);
    assert.equal(ok, 600);
    assert.ok(served >= 600);
  });
});
