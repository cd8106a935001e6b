// The nginx edge on its own: a real nginx master in a temp dir on a free loopback port, real HTTP servers.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { Agent, createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { NginxEdge } from "../../src/adapters/edge/nginx.js";
import { PierError } from "../../src/core/errors.js";
import type { Route } from "../../src/core/ports.js";
import { freePort, httpGet } from "./harness.js";

interface Backend {
  name: string;
  server: Server;
  port: number;
}

/** A tiny app: answers its name and the forwarded headers it got. */
function backend(name: string): Promise<Backend> {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          name,
          host: req.headers.host,
          xff: req.headers["x-forwarded-for"],
          proto: req.headers["x-forwarded-proto"],
          fwdHost: req.headers["x-forwarded-host"],
          requestId: req.headers["x-request-id"],
        }),
      );
    });
    server.listen(0, "127.0.0.1", () => {
      const a = server.address();
      resolve({ name, server, port: typeof a === "object" && a ? a.port : 0 });
    });
  });
}

/** The worker processes of an nginx master (from /proc). */
function workerPids(master: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(/\) \S+ (\d+)/.exec(readFileSync(`/proc/${d}/stat`, "utf8"))?.[1]) === master;
      } catch {
        return false;
      }
    })
    .map(Number)
    .sort((a, b) => a - b);
}

const to = (...bs: Backend[]) => bs.map((b) => ({ host: "127.0.0.1", port: b.port }));
const routeA = (...bs: Backend[]): Route[] => [
  { appId: "app-a", hostname: "a.localhost", targets: to(...bs) },
  { appId: "app-b", hostname: "b.localhost", targets: [] },
];

/** An edge whose next configuration can be made one that nginx rejects (the renderer never makes one). */
class TestEdge extends NginxEdge {
  breakNext = false;
  protected override render(routes: readonly Route[]): string {
    const text = super.render(routes);
    return this.breakNext ? text.replace("http {\n", "http {\n  bogus_directive on;\n") : text;
  }
}

describe("nginx edge", { timeout: 180_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), "pier-edge-nginx-"));
  const dir = join(work, "edge");
  let edge: TestEdge;
  let port = 0;
  const backends: Backend[] = [];
  const survivors: NginxEdge[] = [];
  const get = (host: string, path = "/") => httpGet(port, host, path);
  const served = async (host = "a.localhost") => JSON.parse((await get(host)).body).name as string;
  const app = async (name: string) => {
    const b = await backend(name);
    backends.push(b);
    return b;
  };

  before(async () => {
    port = await freePort();
    edge = new TestEdge({ dir, listenHost: "127.0.0.1", listenPort: port });
    await edge.start();
  });
  after(async () => {
    await edge.stop();
    for (const s of survivors) await s.stop();
    for (const b of backends) b.server.close();
    rmSync(work, { recursive: true, force: true });
  });

  test("started with no route, it answers every host 404 with a page", async () => {
    assert.ok(edge.masterPid(), "a master runs");
    const r = await get("a.localhost");
    assert.equal(r.status, 404);
    assert.match(String(r.headers["content-type"]), /text\/html/);
    assert.match(r.body, /No app is served at a\.localhost\./);
  });

  test("routes by Host with forwarded headers; unknown hosts get 404, apps without instances 503", async () => {
    const a = await app("a");
    await edge.apply(routeA(a));
    const r = await get("a.localhost");
    assert.equal(r.status, 200);
    const seen = JSON.parse(r.body);
    assert.equal(seen.name, "a");
    assert.equal(seen.host, "a.localhost");
    assert.equal(seen.xff, "127.0.0.1");
    assert.equal(seen.proto, "http");
    assert.equal(seen.fwdHost, "a.localhost");
    assert.match(seen.requestId, /^[0-9a-f]{32}$/);
    assert.equal((await get(`A.LOCALHOST:${port}`)).status, 200, "host matching ignores case and port");
    const none = await get("nope.localhost");
    assert.equal(none.status, 404);
    assert.match(none.body, /No app is served at nope\.localhost\./);
    const b = await get("b.localhost");
    assert.equal(b.status, 503);
    assert.match(b.body, /has no running instance/);
    assert.match(String(b.headers["content-type"]), /text\/html/);
  });

  test("a host name that is not plain is not echoed into the 404 page", async () => {
    const r = await get("x<script>alert(1)<");
    assert.equal(r.status, 404);
    assert.doesNotMatch(r.body, /<script/);
    assert.match(r.body, /No app is served at this address\./);
  });

  test("balances across two targets", async () => {
    const a1 = backends[0]!;
    const a2 = await app("a2");
    await edge.apply(routeA(a1, a2));
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(await served());
    assert.deepEqual([...seen].sort(), ["a", "a2"]);
  });

  test("applying the same routes again does not reload", async () => {
    const conf = readFileSync(join(dir, "nginx.conf"), "utf8");
    const workers = workerPids(edge.masterPid()!);
    assert.ok(workers.length > 0);
    await edge.apply([...routeA(backends[1]!, backends[0]!)].reverse());
    assert.equal(readFileSync(join(dir, "nginx.conf"), "utf8"), conf);
    assert.deepEqual(workerPids(edge.masterPid()!), workers, "the same workers serve");
  });

  test("switching targets under keep-alive load: every request answered 200 (a reload resets a few connections)", async (t) => {
    const first = await app("gen0");
    await edge.apply(routeA(first));
    // Bounded: at most 20,000 requests and 10 s, 4 clients on keep-alive connections.
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    let ok = 0;
    let sent = 0;
    let resets = 0;
    const failures: string[] = [];
    let running = true;
    const deadline = Date.now() + 10_000;
    // A request reset before any answer is retried, as RFC 9110 9.2.2 allows for an idempotent GET and as
    // browsers, curl and Go's client do (Node's documents it, `request.reusedSocket`); nothing else is.
    const one = (attempt = 0): Promise<void> =>
      new Promise((resolve) => {
        sent++;
        const req = request(
          { host: "127.0.0.1", port, path: "/", agent, headers: { host: "a.localhost" } },
          (res) => {
            res.resume();
            res.on("end", () => {
              if (res.statusCode === 200) ok++;
              else failures.push(`status ${res.statusCode}`);
              resolve();
            });
          },
        );
        req.setTimeout(5000, () => req.destroy(new Error("timeout")));
        req.on("error", (e: NodeJS.ErrnoException) => {
          if (e.code === "ECONNRESET" && attempt < 2) {
            resets++;
            resolve(one(attempt + 1));
          } else {
            failures.push(`${e.code ?? ""} ${e.message}`);
            resolve();
          }
        });
        req.end();
      });
    const clients = Array.from({ length: 4 }, async () => {
      while (running && Date.now() < deadline && sent < 20_000) await one();
    });
    let previous = first;
    for (let i = 1; i <= 5; i++) {
      const next = await app(`gen${i}`);
      await edge.apply(routeA(next));
      // When apply resolves, new connections reach the new target.
      assert.equal(await served(), `gen${i}`);
      await new Promise((r) => setTimeout(r, 200)); // the old instance's grace, as a deploy gives it
      previous.server.close();
      previous = next;
    }
    running = false;
    await Promise.all(clients);
    agent.destroy();
    t.diagnostic(`${ok} requests answered 200, ${resets} connection resets retried, 5 reloads`);
    assert.ok(ok > 500, `only ${ok} requests ran`);
    assert.deepEqual(failures, []);
  });

  test("concurrent applies run one at a time; the last one wins", async () => {
    const [x, y, z] = [await app("x"), await app("y"), await app("z")];
    await Promise.all([edge.apply(routeA(x)), edge.apply(routeA(y)), edge.apply(routeA(z))]);
    assert.equal(await served(), "z");
  });

  test("a configuration nginx rejects is not applied: the old one keeps serving", async () => {
    const confBefore = readFileSync(join(dir, "nginx.conf"), "utf8");
    const pid = edge.masterPid();
    const other = await app("other");
    edge.breakNext = true;
    try {
      await assert.rejects(edge.apply(routeA(other)), (e: unknown) => {
        assert.ok(e instanceof PierError);
        assert.equal(e.code, "EDGE_ERROR");
        assert.match(e.message, /nginx rejected.*unknown directive "bogus_directive"/s);
        return true;
      });
    } finally {
      edge.breakNext = false;
    }
    assert.equal(readFileSync(join(dir, "nginx.conf"), "utf8"), confBefore);
    assert.equal(edge.masterPid(), pid);
    assert.equal(await served(), "z");
    await assert.rejects(
      edge.apply([{ appId: "x", hostname: "bad host", targets: [] }]),
      /not a valid DNS name/,
    );
    assert.equal(await served(), "z");
  });

  test("the edge outlives the process that started it, and a new control plane adopts it", async () => {
    const dir2 = join(work, "edge2");
    const port2 = await freePort();
    const s = await app("survivor");
    const module = fileURLToPath(new URL("../../src/adapters/edge/nginx.js", import.meta.url));
    const script = `
      const { NginxEdge } = await import(${JSON.stringify(module)});
      const edge = new NginxEdge({ dir: ${JSON.stringify(dir2)}, listenHost: "127.0.0.1", listenPort: ${port2} });
      await edge.start();
      await edge.apply([{ appId: "s", hostname: "s.localhost", targets: [{ host: "127.0.0.1", port: ${s.port} }] }]);
      console.log("ready " + edge.masterPid());
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        const m = /ready (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.on("exit", (code) => reject(new Error(`the starter exited with ${code}`)));
      setTimeout(() => reject(new Error("the starter did not get ready within 20 s")), 20_000).unref();
    });
    const adopted = new NginxEdge({ dir: dir2, listenHost: "127.0.0.1", listenPort: port2 });
    survivors.push(adopted);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const r = await httpGet(port2, "s.localhost");
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).name, "survivor");

    await adopted.start();
    assert.equal(adopted.masterPid(), pid, "the running master is adopted, not replaced");
    assert.equal(JSON.parse((await httpGet(port2, "s.localhost")).body).name, "survivor");

    await adopted.stop();
    assert.equal(adopted.masterPid(), null);
    await assert.rejects(httpGet(port2, "s.localhost", "/", 2000), /ECONNREFUSED/);
  });
});
