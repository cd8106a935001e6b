// The npm registry client (src/adapters/npm-registry.ts) against registries and proxies on loopback:
// retries, HTTPS_PROXY / NO_PROXY, and integrity that is checked and required.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { NpmRegistry, type NpmRegistryOptions } from "../../../src/adapters/npm-registry.js";
import { CA, LEAF, LEAF_KEY } from "../core/tls-fixtures.js";

const GOOD = Buffer.from("the real tarball");
const sri = (b: Buffer, alg = "sha512") => `${alg}-${createHash(alg).update(b).digest("base64")}`;
const FAST_RETRY = { retries: 2, factor: 1, minTimeout: 10, maxTimeout: 20 };

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;
const servers: Server[] = [];
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
after(() => {
  for (const s of servers) s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A registry on loopback: `handler` answers the n-th request (from 1). Returns its base URL and the paths asked. */
async function registry(handler: Handler): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? "");
    handler(req, res, asked.length);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

/** A packument whose version 1.0.0 has the tarball at `base`/t.tgz and the given dist fields. */
function packument(base: string, dist: Record<string, string>): string {
  return JSON.stringify({ versions: { "1.0.0": { dist: { tarball: `${base}/t.tgz`, ...dist } } } });
}

/** Serves the packument at /pkg and `body` at /t.tgz. */
const serving =
  (dist: () => Record<string, string>, body: Buffer, base: () => string): Handler =>
  (req, res) => {
    if (req.url === "/t.tgz") return void res.end(body);
    res.setHeader("content-type", "application/json");
    res.end(packument(base(), dist()));
  };

function client(url: string, more: Partial<NpmRegistryOptions> = {}): { reg: NpmRegistry; cacheDir: string } {
  const cacheDir = tempDir("pier-npm-");
  return {
    reg: new NpmRegistry({ url, caFile: "/nonexistent", cacheDir, retry: FAST_RETRY, ...more }),
    cacheDir,
  };
}

describe("npm registry client: retries", () => {
  it("a 503 then a 200: the answer of the second try is used", async () => {
    const r = await registry((req, res, n) => {
      if (n === 1) return void res.writeHead(503).end("busy");
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => r.url,
      )(req, res, n);
    });
    const v = await client(r.url).reg.versions("pkg");
    assert.deepEqual(v.versions, ["1.0.0"]);
    assert.deepEqual(r.asked, ["/pkg", "/pkg"]);
  });
  it("a connection reset on the first try is tried again", async () => {
    const r = await registry((req, res, n) => {
      if (n === 1) return void req.socket.destroy();
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => r.url,
      )(req, res, n);
    });
    assert.deepEqual((await client(r.url).reg.versions("pkg")).versions, ["1.0.0"]);
    assert.equal(r.asked.length, 2);
  });
  it("a registry that keeps answering 503 fails after the retries, naming the status and the URL", async () => {
    const r = await registry((_req, res) => void res.writeHead(503).end());
    await assert.rejects(client(r.url).reg.versions("pkg"), (e: Error) => {
      assert.equal(e.message, `The npm registry answered 503 for ${r.url}/pkg.`);
      return true;
    });
    assert.equal(r.asked.length, 3, "one try and two retries");
  });
  it("a 404 is not retried", async () => {
    const r = await registry((_req, res) => void res.writeHead(404).end("{}"));
    await assert.rejects(client(r.url).reg.versions("nope"), /answered 404/);
    assert.equal(r.asked.length, 1);
  });
});

describe("npm registry client: integrity is checked and required", () => {
  it("a tarball that matches dist.integrity is kept in the cache", async () => {
    const r = await registry(
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => r.url,
      ),
    );
    const { reg } = client(r.url);
    const file = await reg.tarball("pkg", "1.0.0");
    assert.deepEqual(readFileSync(file), GOOD);
  });
  it("a tampered tarball is refused with a clear error and nothing is left in the cache", async () => {
    const r = await registry(
      serving(
        () => ({ integrity: sri(GOOD) }),
        Buffer.from("tampered"),
        () => r.url,
      ),
    );
    const { reg, cacheDir } = client(r.url);
    await assert.rejects(reg.tarball("pkg", "1.0.0"), (e: Error & { code?: string }) => {
      assert.equal(e.code, "BUILD_FAILED");
      assert.equal(
        e.message,
        "pkg@1.0.0: the download does not match the registry's integrity hash; it was not kept.",
      );
      return true;
    });
    assert.deepEqual(readdirSync(join(cacheDir, "npm-tarballs")), []);
  });
  it("an old version with only dist.shasum is checked against that SHA-1", async () => {
    const sha1 = createHash("sha1").update(GOOD).digest("hex");
    const ok = await registry(
      serving(
        () => ({ shasum: sha1 }),
        GOOD,
        () => ok.url,
      ),
    );
    assert.ok(await client(ok.url).reg.tarball("pkg", "1.0.0"));
    const bad = await registry(
      serving(
        () => ({ shasum: sha1 }),
        Buffer.from("tampered"),
        () => bad.url,
      ),
    );
    await assert.rejects(
      client(bad.url).reg.tarball("pkg", "1.0.0"),
      /does not match the registry's integrity/,
    );
  });
  it("a packument without integrity nor shasum is refused before anything is downloaded", async () => {
    const r = await registry(
      serving(
        () => ({}),
        GOOD,
        () => r.url,
      ),
    );
    await assert.rejects(
      client(r.url).reg.tarball("pkg", "1.0.0"),
      /^PierError: pkg@1\.0\.0: the npm registry gives no integrity hash for it, so its download cannot be checked\.$/,
    );
    assert.deepEqual(r.asked, ["/pkg"]);
  });
});

/** An HTTP proxy on loopback that forwards plain requests and tunnels CONNECT, all to `target`'s port. */
async function proxy(targetPort: () => number): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const fwd = request(
      { host: "127.0.0.1", port: targetPort(), path: new URL(req.url ?? "/").pathname, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(fwd);
  });
  server.on("connect", (req, sock, head) => {
    seen.push(`CONNECT ${req.url}`);
    const up = connect(targetPort(), "127.0.0.1", () => {
      sock.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      up.write(head);
      up.pipe(sock);
      sock.pipe(up);
    });
    up.on("error", () => sock.destroy());
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("npm registry client: HTTPS_PROXY and NO_PROXY", () => {
  it("goes through the proxy: a registry name only the proxy can reach answers", async () => {
    const r = await registry(
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => "http://registry.pier-test.invalid",
      ),
    );
    const p = await proxy(() => Number(new URL(r.url).port));
    const { reg } = client("http://registry.pier-test.invalid", { proxy: { url: p.url, noProxy: null } });
    assert.deepEqual((await reg.versions("pkg")).versions, ["1.0.0"]);
    assert.deepEqual(p.seen, ["GET http://registry.pier-test.invalid/pkg"]);
  });
  it("tunnels HTTPS through the proxy (CONNECT), trusting the CA bundle it is given", async () => {
    const tls = createTlsServer({ cert: LEAF, key: LEAF_KEY }, (req, res) =>
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => "https://shop.example.test",
      )(req, res, 0),
    );
    servers.push(tls);
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    const p = await proxy(() => (tls.address() as AddressInfo).port);
    const caFile = join(tempDir("pier-ca-"), "ca.pem");
    writeFileSync(caFile, CA);
    const { reg } = client("https://shop.example.test", { caFile, proxy: { url: p.url, noProxy: null } });
    assert.deepEqual(readFileSync(await reg.tarball("pkg", "1.0.0")), GOOD);
    // Every request (packument, tarball) went through the tunnel: shop.example.test resolves nowhere else.
    assert.ok(p.seen.length >= 1);
    for (const line of p.seen) assert.equal(line, "CONNECT shop.example.test:443");
  });
  it("a host NO_PROXY names is reached directly", async () => {
    const r = await registry(
      serving(
        () => ({ integrity: sri(GOOD) }),
        GOOD,
        () => r.url,
      ),
    );
    const p = await proxy(() => Number(new URL(r.url).port));
    const { reg } = client(r.url, { proxy: { url: p.url, noProxy: "example.org, 127.0.0.1" } });
    assert.deepEqual((await reg.versions("pkg")).versions, ["1.0.0"]);
    assert.deepEqual(p.seen, []);
    assert.deepEqual(r.asked, ["/pkg"]);
  });
});
