// The edge's TLS side on its own (ADR 0018): real HAProxy, a real HTTP server on loopback, certificates
// made with openssl. Certificates are added, replaced and removed through the runtime API: the HAProxy
// process stays the same (no reload), a TLS connection open across a replacement keeps working, and a
// restarted HAProxy serves what the files say.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connect } from "node:tls";
import { HaproxyEdge } from "../../src/adapters/edge/haproxy.js";
import { HaproxyTls } from "../../src/adapters/edge/haproxy-tls.js";
import { freePort, httpGet, run } from "./harness.js";

async function selfSigned(
  dir: string,
  name: string,
  keyArgs = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
): Promise<{ pem: string; cert: string; serial: string }> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  const r = await run([
    "openssl",
    "req",
    "-x509",
    ...keyArgs,
    "-nodes",
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    `subjectAltName=DNS:${name}`,
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const s = await run(["openssl", "x509", "-in", cert, "-noout", "-serial"]);
  return {
    pem: readFileSync(cert, "utf8") + readFileSync(key, "utf8"),
    cert: readFileSync(cert, "utf8"),
    serial: s.stdout
      .trim()
      .replace(/^serial=/, "")
      .toLowerCase(),
  };
}

function served(port: number, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port, servername: name, rejectUnauthorized: false }, () => {
      const subject = s.getPeerCertificate().subject?.CN;
      resolve(`${subject} ${(s.getPeerCertificate().serialNumber ?? "").toLowerCase()}`);
      s.end();
    });
    s.on("error", reject);
  });
}

describe("HAProxy edge: TLS certificates through the runtime API", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-edge-tls-"));
  let edge: HaproxyEdge;
  let tls: HaproxyTls;
  let httpPort = 0;
  let httpsPort = 0;
  let app: Server;

  before(async () => {
    app = createServer((req, res) => res.end(JSON.stringify({ proto: req.headers["x-forwarded-proto"] })));
    await new Promise<void>((r) => app.listen(0, "127.0.0.1", () => r()));
    const a = app.address();
    const appPort = typeof a === "object" && a ? a.port : 0;
    httpPort = await freePort();
    httpsPort = await freePort();
    edge = new HaproxyEdge({
      dir: join(dir, "edge"),
      listenHost: "127.0.0.1",
      listenPort: httpPort,
      https: { host: "127.0.0.1", port: httpsPort },
    });
    await edge.start();
    tls = new HaproxyTls(edge);
    await edge.apply([
      {
        appId: "app-a",
        hostname: "a.localhost",
        aliases: ["www.a.test"],
        targets: [{ host: "127.0.0.1", port: appPort }],
      },
    ]);
  });
  after(async () => {
    await edge.stop();
    app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("an unknown name gets the self-signed default certificate; the domain is routed over HTTP", async () => {
    assert.match(await served(httpsPort, "www.a.test"), /^pier-default\.invalid /);
    const r = await httpGet(httpPort, "www.a.test");
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).proto, "http");
  });

  test("TLS 1.2 with forward-secret AEAD ciphers and TLS 1.3 only: CBC ciphers and TLS 1.1 are refused", async () => {
    const hello = (args: string[]) =>
      run(
        ["openssl", "s_client", "-connect", `127.0.0.1:${httpsPort}`, "-servername", "a.localhost", ...args],
        {
          input: "",
          timeoutMs: 10_000,
        },
      ).then((r) => /Cipher is (\S+)/.exec(r.stdout)?.[1] ?? "(NONE)");
    assert.equal(await hello(["-tls1_3"]), "TLS_AES_256_GCM_SHA384");
    for (const c of ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"])
      assert.equal(await hello(["-tls1_2", "-cipher", c]), c);
    for (const c of ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384"])
      assert.equal(await hello(["-tls1_2", "-cipher", c]), "(NONE)", `${c} is refused`);
    assert.equal(await hello(["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]), "(NONE)", "TLS 1.1 is refused");
  });

  test("add, replace under an open connection, remove: one HAProxy process throughout", async () => {
    const pid = edge.pid();
    const first = await selfSigned(dir, "www.a.test");
    await tls.installCertificate("www.a.test", first.pem);
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${first.serial}`);
    assert.deepEqual(await tls.certificates(), ["www.a.test"]);

    // A keep-alive TLS connection opened with the first certificate...
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; body: string; reused: boolean }>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: httpsPort,
            servername: "www.a.test",
            headers: { host: "www.a.test" },
            agent,
            ca: first.cert,
          },
          (res) => {
            let body = "";
            res.on("data", (c: Buffer) => {
              body += c.toString();
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body, reused: req.reusedSocket }));
          },
        );
        req.on("error", reject);
        req.end();
      });
    const a = await get();
    assert.equal(a.status, 200);
    assert.equal(JSON.parse(a.body).proto, "https");

    const second = await selfSigned(dir, "www.a.test");
    await tls.installCertificate("www.a.test", second.pem);
    // ...keeps working after the switch, and new connections get the second certificate.
    const b = await get();
    assert.equal(b.status, 200);
    assert.ok(b.reused, "the same TLS connection");
    agent.destroy();
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${second.serial}`);
    assert.equal(edge.pid(), pid, "no reload, no new process");

    // A domain added is a line of the hosts map through the runtime API, not a reload.
    await edge.apply([
      { appId: "app-a", hostname: "a.localhost", aliases: ["www.a.test", "b.test"], targets: [] },
    ]);
    assert.equal(edge.pid(), pid, "a change of domains is no reload");
    assert.equal((await httpGet(httpPort, "b.test")).status, 503, "b.test routed to app-a (no instance)");
    const overTls = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: httpsPort,
          servername: "b.test",
          headers: { host: "b.test" },
          rejectUnauthorized: false,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end();
    });
    assert.equal(overTls, 503, "the HTTPS frontend shares the hosts map");
    // Files in step: a new HAProxy (a reload for a new app) serves the second certificate and the domain.
    await edge.apply([
      { appId: "app-a", hostname: "a.localhost", aliases: ["www.a.test", "b.test"], targets: [] },
      { appId: "app-z", hostname: "z.localhost", targets: [] },
    ]);
    assert.notEqual(edge.pid(), pid, "a new app is a reload");
    assert.equal((await httpGet(httpPort, "b.test")).status, 503);
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${second.serial}`);

    await tls.removeCertificate("www.a.test");
    assert.match(await served(httpsPort, "www.a.test"), /^pier-default\.invalid /);
    assert.deepEqual(await tls.certificates(), []);
  });

  test("a certificate HAProxy refuses changes nothing: the old one serves, the next change and a reload work", async () => {
    const good = await selfSigned(dir, "www.a.test");
    await tls.installCertificate("www.a.test", good.pem);
    const list = readFileSync(join(dir, "edge", "tls", "certs.list"), "utf8");
    // Node reads an RSA key of 1024 bits; HAProxy (OpenSSL's default security level) refuses it.
    const weak = await selfSigned(dir, "www.a.test", ["-newkey", "rsa:1024"]);
    await assert.rejects(tls.installCertificate("www.a.test", weak.pem), /HAProxy refused/);
    const weakNew = await selfSigned(dir, "b.test", ["-newkey", "rsa:1024"]);
    await assert.rejects(tls.installCertificate("b.test", weakNew.pem), /HAProxy refused/);
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${good.serial}`);
    assert.equal(readFileSync(join(dir, "edge", "tls", "certs.list"), "utf8"), list, "crt-list as before");
    assert.equal(
      readFileSync(join(dir, "edge", "tls", "www.a.test.pem"), "utf8"),
      good.pem,
      "file as before",
    );
    // No transaction left open in HAProxy: the next certificate goes in.
    const next = await selfSigned(dir, "b.test");
    await tls.installCertificate("b.test", next.pem);
    assert.equal(await served(httpsPort, "b.test"), `b.test ${next.serial}`);
    // A reload (a route change) still passes `haproxy -c` and serves both.
    await edge.apply([{ appId: "app-a", hostname: "a.localhost", aliases: ["www.a.test"], targets: [] }]);
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${good.serial}`);
    assert.equal(await served(httpsPort, "b.test"), `b.test ${next.serial}`);
    await tls.removeCertificate("b.test");
    await tls.removeCertificate("www.a.test");
  });

  test("the running edge out of step with its files (a stop between two runtime calls): seen and mended", async () => {
    const cert = await selfSigned(dir, "www.a.test");
    await tls.installCertificate("www.a.test", cert.pem);
    const path = join(dir, "edge", "tls", "www.a.test.pem");
    // As if pier server stopped after `commit ssl cert` and before `add ssl crt-list`.
    await edge.runtime([`del ssl crt-list ${join(dir, "edge", "tls", "certs.list")} ${path}`]);
    assert.match(await served(httpsPort, "www.a.test"), /^pier-default\.invalid /);
    assert.deepEqual(await tls.served(), [], "not served");
    assert.deepEqual(await tls.certificates(), ["www.a.test"], "but there in part (the files)");
    await tls.installCertificate("www.a.test", cert.pem);
    assert.equal(await served(httpsPort, "www.a.test"), `www.a.test ${cert.serial}`);
    assert.deepEqual(await tls.served(), ["www.a.test"]);
    await tls.removeCertificate("www.a.test");
    assert.deepEqual(await tls.certificates(), []);
  });

  test("a configuration HAProxy refuses is refused with its reason", async () => {
    const list = join(dir, "edge", "tls", "certs.list");
    const saved = readFileSync(list, "utf8");
    writeFileSync(list, `${saved}${join(dir, "edge", "tls", "missing.test.pem")} missing.test\n`);
    try {
      await assert.rejects(
        edge.apply([
          { appId: "app-a", hostname: "a.localhost", aliases: ["www.a.test"], targets: [] },
          { appId: "app-y", hostname: "y.localhost", targets: [] },
        ]),
        /HAProxy rejected the new edge configuration: .*missing\.test\.pem/,
      );
    } finally {
      writeFileSync(list, saved);
    }
  });

  test("what is not a name or plain PEM never reaches the runtime API", async () => {
    const good = await selfSigned(dir, "www.a.test");
    const cut = good.pem.replace("-----BEGIN PRIVATE KEY-----", "\r\nshow info\n-----BEGIN PRIVATE KEY-----");
    await assert.rejects(tls.installCertificate("www.a.test", cut), /not plain PEM/);
    await assert.rejects(tls.installCertificate("x.test;show info", good.pem), /not a valid DNS name/);
    await assert.rejects(tls.installCertificate("x.test\nshow info", good.pem), /not a valid DNS name/);
    await assert.rejects(tls.removeCertificate("x.test y.test"), /not a valid DNS name/);
    assert.deepEqual(await tls.certificates(), []);
  });

  test("HTTP-01 answers come and go through the runtime API, for any host", async () => {
    await tls.setChallenge("tok-1_A", "tok-1_A.thumb-print");
    const r = await httpGet(httpPort, "anything.test", "/.well-known/acme-challenge/tok-1_A");
    assert.equal(r.status, 200);
    assert.equal(r.body, "tok-1_A.thumb-print");
    await tls.removeChallenge("tok-1_A");
    assert.equal(
      (await httpGet(httpPort, "anything.test", "/.well-known/acme-challenge/tok-1_A")).status,
      404,
    );
    await assert.rejects(tls.setChallenge("bad token", "x"), /odd characters/);
  });
});
