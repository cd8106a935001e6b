// Custom domains and automatic HTTPS (issue 11, ADR 0018) end to end: a real pier server and HAProxy edge,
// Debian's pebble (an ACME server, RFC 8555) and pebble-challtestsrv (its DNS, every name at 127.0.0.1),
// all on loopback. Pebble checks HTTP-01 on Pier's HTTP edge port.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { AcmeBed, httpsGet, makeCert } from "./acme-bed.js";
import { freePort, httpGet, NODE_DOCKER_APP, Pier, run } from "./harness.js";

interface DomainJson {
  name: string;
  app: string;
  source: string;
  state: string;
  issuer: string | null;
  serial: string | null;
  notAfter: string | null;
  lastError: string | null;
  nextAttemptAt: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The serial of the certificate the edge serves for SNI `host` (no trust check). */
function servedSerial(port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: "127.0.0.1", port, servername: host, rejectUnauthorized: false }, () => {
      resolve((s.getPeerCertificate().serialNumber ?? "").toLowerCase());
      s.end();
    });
    s.on("error", reject);
  });
}

describe("custom domains and HTTPS with ACME (pebble)", { timeout: 900_000 }, () => {
  let pier: Pier;
  let dir = "";
  let pebbleRoot = "";

  const domains = (app: string) => pier.cliJson<DomainJson[]>(["domain", "--app", app]);
  /** `pier domain cert set NAME --cert CERT --key KEY --app APP`. */
  const certSet = (name: string, cert: string, key: string, app: string) =>
    pier.cli(["domain", "cert", "set", name, "--cert", cert, "--key", key, "--app", app]);
  async function waitState(
    app: string,
    name: string,
    states: string[],
    limitMs = 120_000,
  ): Promise<DomainJson> {
    const end = Date.now() + limitMs;
    let last: DomainJson | undefined;
    while (Date.now() < end) {
      last = (await domains(app)).find((d) => d.name === name);
      if (last && states.includes(last.state)) return last;
      await sleep(500);
    }
    throw new Error(
      `domain ${name} never reached ${states.join("/")}: ${JSON.stringify(last)}\n${pier.output}`,
    );
  }

  let extra: Record<string, string> = {};
  let bed: AcmeBed;
  const startPebble = (validitySeconds?: number) =>
    bed.pebble({ http: pier.httpPort, https: pier.httpsPort }, validitySeconds);

  before(async () => {
    // info: the server log shows each certificate obtained and renewed.
    extra = { PIER_ACME_EMAIL: "e2e@example.test", PIER_LOG_LEVEL: "info" };
    pier = new Pier(extra);
    dir = pier.work;
    bed = new AcmeBed(dir);
    // Pebble's own HTTPS (its directory) uses a certificate of a CA made here: Pier trusts it by PIER_ACME_CA.
    extra.PIER_ACME_CA = bed.caFile;
    pier.apiPort = await freePort();
    pier.sshPort = await freePort();
    pier.httpPort = await freePort();
    pier.httpsPort = await freePort();
    await bed.start("127.0.0.1");
    const pebble = await startPebble();
    pebbleRoot = pebble.root;
    extra.PIER_ACME_DIRECTORY = pebble.directory;
    writeFileSync(join(dir, "pebble-root.pem"), pebbleRoot);
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    const repo = await pier.repo("web", NODE_DOCKER_APP, app.id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    await pier.cliJson(["create", "--type", "docker", "other"]);
  });

  after(async () => {
    await pier?.destroy();
    bed?.stop();
  });

  test("invalid names are refused, naming the rule", async () => {
    const bad = await pier.cli(["domain", "add", "bad_name.example.test", "--app", "web"]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /not a valid DNS name/);
    const single = await pier.cli(["domain", "add", "localhost2", "--app", "web"]);
    assert.notEqual(single.code, 0);
    assert.match(single.stderr, /at least two labels/);
    const under = await pier.cli(["domain", "add", "x.localhost", "--app", "web"]);
    assert.notEqual(under.code, 0);
    assert.match(under.stderr, /under PIER_DOMAIN/);
  });

  let firstSerial = "";

  test("a domain added gets a certificate from the ACME server; HTTPS answers the app with X-Forwarded-Proto: https", async () => {
    const add = await pier.cli(["domain", "add", "www.example.test", "--app", "web"]);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /Added www\.example\.test to web/);
    // Routed on the HTTP edge at once.
    const http = await httpGet(pier.httpPort, "www.example.test");
    assert.equal(http.status, 200);
    assert.equal(JSON.parse(http.body).headers["x-forwarded-proto"], "http");

    const d = await waitState("web", "www.example.test", ["issued", "failed"]);
    assert.equal(d.state, "issued", d.lastError ?? "");
    assert.match(d.issuer ?? "", /Pebble/i);
    assert.equal(d.source, "acme");
    assert.ok(d.notAfter && Date.parse(d.notAfter) > Date.now());
    assert.ok(
      d.nextAttemptAt && Date.parse(d.nextAttemptAt) < Date.parse(d.notAfter),
      "a renewal is planned",
    );
    firstSerial = d.serial ?? "";

    const human = await pier.cli(["domain", "--app", "web"]);
    assert.match(human.stdout, /www\.example\.test\s+issued\s+acme\s+Pebble/);

    const curl = await run([
      "curl",
      "-sS",
      "--http2",
      "--resolve",
      `www.example.test:${pier.httpsPort}:127.0.0.1`,
      "--cacert",
      join(dir, "pebble-root.pem"),
      "-w",
      "\\n%{http_version}",
      `https://www.example.test:${pier.httpsPort}/`,
    ]);
    assert.equal(curl.code, 0, curl.stderr);
    const [body, version] = curl.stdout.split("\n");
    assert.equal(JSON.parse(body!).headers["x-forwarded-proto"], "https");
    assert.equal(version, "2", "HTTP/2 through ALPN");
    const tls12 = await run([
      "curl",
      "-sS",
      "--tlsv1.2",
      "--tls-max",
      "1.2",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--resolve",
      `www.example.test:${pier.httpsPort}:127.0.0.1`,
      "--cacert",
      join(dir, "pebble-root.pem"),
      `https://www.example.test:${pier.httpsPort}/`,
    ]);
    assert.equal(tls12.stdout, "200", `TLS 1.2 too: ${tls12.stderr}`);
    assert.equal(await servedSerial(pier.httpsPort, "www.example.test"), firstSerial);
  });

  test("a domain belongs to one app: adding it to another is refused, naming the app that has it", async () => {
    const r = await pier.cli(["domain", "add", "www.example.test", "--app", "other"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /belongs to the app web/);
  });

  test("a forced renewal under HTTPS load: no failed request, the new serial served", async () => {
    const ca = pebbleRoot;
    let ok = 0;
    const failures: string[] = [];
    let stop = false;
    const loop = async () => {
      while (!stop) {
        try {
          const r = await httpsGet(pier.httpsPort, "www.example.test", ca);
          if (r.status === 200) ok++;
          else failures.push(`status ${r.status}`);
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    };
    const loops = [loop(), loop(), loop(), loop()];
    await sleep(500);
    const renew = await pier.cli(["domain", "renew", "www.example.test", "--app", "web", "--format", "json"]);
    await sleep(1000);
    stop = true;
    await Promise.all(loops);
    assert.equal(renew.code, 0, renew.stderr);
    const d = JSON.parse(renew.stdout) as DomainJson;
    assert.notEqual(d.serial, firstSerial, "a new certificate");
    assert.deepEqual(failures, []);
    assert.ok(ok > 20, `requests made: ${ok}`);
    assert.equal(await servedSerial(pier.httpsPort, "www.example.test"), d.serial);
    assert.match(
      pier.output + readFileSync(join(dir, "data", "edge", "tls", "certs.list"), "utf8"),
      /www\.example\.test/,
    );
  });

  test("an ACME server that refuses: a clear error on the domain, HTTP keeps serving", async () => {
    // The test DNS sends refused.example.test to an address where nothing listens: the validation fails.
    await bed.addA("refused.example.test", ["127.0.0.2"]);
    const add = await pier.cli(["domain", "add", "refused.example.test", "--app", "web"]);
    assert.equal(add.code, 0, add.stderr);
    const d = await waitState("web", "refused.example.test", ["failed", "issued"]);
    assert.equal(d.state, "failed");
    assert.match(d.lastError ?? "", /gave no certificate for refused\.example\.test/);
    assert.ok(d.nextAttemptAt && Date.parse(d.nextAttemptAt) > Date.now(), "a retry is planned");
    const human = await pier.cli(["domain", "--app", "web"]);
    assert.match(human.stdout, /refused\.example\.test\s+failed/);
    assert.match(pier.output, /"domain":"refused\.example\.test".*"msg":"no certificate obtained"/);
    assert.equal((await httpGet(pier.httpPort, "refused.example.test")).status, 200);
    assert.equal((await pier.get("web")).status, 200);
    const rm = await pier.cli(["domain", "rm", "refused.example.test", "--app", "web"]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal((await httpGet(pier.httpPort, "refused.example.test")).status, 404);
  });

  test("a user's certificate: a key that does not match is refused; the right one is served", async () => {
    const good = await makeCert(dir, "user", "shop.example.test");
    const other = await makeCert(dir, "user-other", "shop.example.test");
    const wrong = await certSet("shop.example.test", good.cert, other.key, "web");
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /private key does not match the certificate/);
    const name = await certSet("api.example.test", good.cert, good.key, "web");
    assert.notEqual(name.code, 0);
    assert.match(name.stderr, /not for api\.example\.test/);
    const set = await certSet("shop.example.test", good.cert, good.key, "web");
    assert.equal(set.code, 0, set.stderr);
    assert.match(
      set.stdout,
      /shop\.example\.test: certificate from shop\.example\.test \(user\), expires \d{4}-/,
    );
    const r = await httpsGet(pier.httpsPort, "shop.example.test", readFileSync(good.cert, "utf8"));
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).headers["x-forwarded-proto"], "https");
  });

  test("CC_FORCE_HTTPS=true redirects HTTP to HTTPS; ACME's HTTP-01 path is not redirected", async () => {
    assert.equal((await pier.cli(["env", "set", "CC_FORCE_HTTPS", "true", "--app", "web"])).code, 0);
    const restart = await pier.cli(["restart", "--app", "web"]);
    assert.equal(restart.code, 0, restart.stderr);
    const r = await httpGet(pier.httpPort, "www.example.test", "/some/path?q=1");
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, `https://www.example.test:${pier.httpsPort}/some/path?q=1`);
    const s = await httpsGet(pier.httpsPort, "www.example.test", pebbleRoot);
    assert.equal(s.status, 200);
    // A renewal still works: pebble's HTTP-01 request reaches the challenge answer, not the redirect.
    const renew = await pier.cli(["domain", "renew", "www.example.test", "--app", "web"]);
    assert.equal(renew.code, 0, renew.stderr);
  });

  test("a restarted edge serves the same certificates (the files are kept in step)", async () => {
    const before = await servedSerial(pier.httpsPort, "www.example.test");
    const pid = Number(readFileSync(join(dir, "data", "edge", "haproxy.pid"), "utf8").trim());
    process.kill(pid, "SIGKILL");
    const end = Date.now() + 30_000;
    let serial = "";
    while (Date.now() < end && serial !== before) {
      await sleep(300);
      serial = await servedSerial(pier.httpsPort, "www.example.test").catch(() => "");
    }
    assert.equal(serial, before);
    // The restarted HAProxy loaded it from the files: a renewal switches it through the runtime API too.
    const renew = await pier.cli(["domain", "renew", "www.example.test", "--app", "web", "--format", "json"]);
    assert.equal(renew.code, 0, renew.stderr);
    const d = JSON.parse(renew.stdout) as DomainJson;
    assert.notEqual(d.serial, before);
    assert.equal(await servedSerial(pier.httpsPort, "www.example.test"), d.serial);
  });

  test("a short-lived certificate is renewed by itself on time, under HTTPS load, without a failed request", async () => {
    // A second pebble whose certificates live 30 s; pier server restarts onto it (a new ACME account).
    const short = await startPebble(30);
    await pier.stopServer();
    extra.PIER_ACME_DIRECTORY = short.directory;
    await pier.start();
    const first = JSON.parse(
      (await pier.cli(["domain", "renew", "www.example.test", "--app", "web", "--format", "json"])).stdout,
    ) as DomainJson;
    const life = Date.parse(first.notAfter ?? "") - Date.now();
    assert.ok(life > 0 && life <= 31_000, `a 30 s certificate (${life} ms left)`);
    assert.ok(
      Date.parse(first.nextAttemptAt ?? "") < Date.parse(first.notAfter ?? "") - 9_000,
      "renewal planned a third of the lifetime before expiry",
    );
    let ok = 0;
    const failures: string[] = [];
    let stop = false;
    const loop = async () => {
      while (!stop) {
        try {
          const r = await httpsGet(pier.httpsPort, "www.example.test", short.root);
          if (r.status === 200) ok++;
          else failures.push(`status ${r.status}`);
        } catch (e) {
          failures.push((e as Error).message);
        }
        await sleep(20);
      }
    };
    const loops = [loop(), loop()];
    const end = Date.now() + 40_000;
    let serial = first.serial;
    while (Date.now() < end && serial === first.serial) {
      await sleep(500);
      serial = await servedSerial(pier.httpsPort, "www.example.test");
    }
    await sleep(1000);
    stop = true;
    await Promise.all(loops);
    assert.notEqual(serial, first.serial, "renewed by itself before it expired");
    assert.ok(Date.now() < Date.parse(first.notAfter ?? ""), "before the first one expired");
    assert.deepEqual(failures, []);
    assert.ok(ok > 20, `requests made: ${ok}`);
    const d = (await domains("web")).find((x) => x.name === "www.example.test");
    assert.equal(d?.serial, serial);
    assert.match(pier.output, /"domain":"www\.example\.test".*"msg":"certificate renewed"/);
  });

  test("an app's token lists and renews its domains, but only an admin token claims a domain", async () => {
    const tok = await pier.cliJson<{ token: string }>(["tokens", "create", "web-ci", "--app", "web"]);
    const list = await pier.api("GET", "/v1/apps/web/domains", undefined, tok.token);
    assert.equal(list.status, 200);
    const add = await pier.api("POST", "/v1/apps/web/domains", { name: "mine.example.test" }, tok.token);
    assert.equal(add.status, 403);
    // Another app's domain: not listed, not removed, not renewed, not given a certificate by web's token.
    const theirs = await makeCert(dir, "theirs", "theirs.example.test");
    const set = await certSet("theirs.example.test", theirs.cert, theirs.key, "other");
    assert.equal(set.code, 0, set.stderr);
    assert.equal((await pier.api("GET", "/v1/apps/other/domains", undefined, tok.token)).status, 404);
    assert.equal((await pier.api("GET", "/v1/apps/other/status", undefined, tok.token)).status, 404);
    const mine = await pier.api("GET", "/v1/apps/web/domains", undefined, tok.token);
    assert.ok(!JSON.stringify(mine.json).includes("theirs"));
    const path = "/v1/apps/web/domains/theirs.example.test";
    const del = await pier.api("DELETE", path, undefined, tok.token);
    assert.equal(del.status, 404);
    assert.match(JSON.stringify(del.json), /DOMAIN_NOT_FOUND/);
    assert.equal((await pier.api("POST", `${path}/renew`, undefined, tok.token)).status, 404);
    const cert = { cert: readFileSync(theirs.cert, "utf8"), key: readFileSync(theirs.key, "utf8") };
    assert.equal((await pier.api("PUT", `${path}/certificate`, cert, tok.token)).status, 403);
    // Even an admin cannot move it to web by setting a certificate there: it belongs to other.
    const admin = await pier.api("PUT", `${path}/certificate`, cert);
    assert.equal(admin.status, 404);
    const still = await pier.cliJson<DomainJson[]>(["domain", "--app", "other"]);
    assert.equal(still[0]?.name, "theirs.example.test");
  });

  test("status lists the app's domains with their certificates; /v1/info and the banner name the HTTPS edge", async () => {
    const human = await pier.cli(["status", "--app", "web"]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /\nDomains: +\S+\.example\.test: /);
    assert.match(
      human.stdout,
      /\n +www\.example\.test: certificate from .*Pebble.* \(acme\), expires \d{4}-/,
    );
    const json = await pier.cliJson<{ domains: DomainJson[] }>(["status", "--app", "web"]);
    assert.ok(json.domains.some((d) => d.name === "www.example.test" && d.state === "issued"));
    const info = await pier.api("GET", "/v1/info");
    assert.equal((info.json as { httpsPort: number }).httpsPort, pier.httpsPort);
    assert.match(pier.output, new RegExp(`HTTPS edge: +https://<custom domain>:${pier.httpsPort} `));
  });

  test("an app's token waits out its domain's backoff; an admin token retries at once", async () => {
    await bed.addA("wait.example.test", ["127.0.0.2"]);
    assert.equal((await pier.cli(["domain", "add", "wait.example.test", "--app", "web"])).code, 0);
    assert.equal((await waitState("web", "wait.example.test", ["failed", "issued"])).state, "failed");
    const tok = await pier.cliJson<{ token: string }>(["tokens", "create", "web-renew", "--app", "web"]);
    const app = await pier.api("POST", "/v1/apps/web/domains/wait.example.test/renew", undefined, tok.token);
    assert.equal(app.status, 409);
    assert.match(JSON.stringify(app.json), /failed .*the next is at 20/);
    const admin = await pier.api("POST", "/v1/apps/web/domains/wait.example.test/renew");
    assert.equal(admin.status, 502, "tried now: the validation fails again");
    assert.equal((await pier.cli(["domain", "rm", "wait.example.test", "--app", "web"])).code, 0);
  });

  test("a deleted app's certificate leaves the edge at once", async () => {
    await pier.cliJson(["create", "--type", "docker", "gone"]);
    const cert = await makeCert(dir, "gone", "gone.example.test");
    const set = await certSet("gone.example.test", cert.cert, cert.key, "gone");
    assert.equal(set.code, 0, set.stderr);
    const serial = (await pier.cliJson<DomainJson[]>(["domain", "--app", "gone"]))[0]?.serial ?? "";
    assert.equal(await servedSerial(pier.httpsPort, "gone.example.test"), serial);
    assert.equal((await pier.cli(["delete", "--app", "gone", "--yes"])).code, 0);
    assert.notEqual(await servedSerial(pier.httpsPort, "gone.example.test"), serial, "not a minute later");
    assert.ok(!existsSync(join(dir, "data", "edge", "tls", "gone.example.test.pem")), "its key file is gone");
  });

  test("an ACME server down at start: one clear failure, then a pause; HTTP and HTTPS keep serving", async () => {
    const before = await servedSerial(pier.httpsPort, "www.example.test");
    await pier.stopServer();
    extra.PIER_ACME_DIRECTORY = `https://localhost:${await freePort()}/dir`;
    await pier.start();
    assert.equal((await pier.cli(["domain", "add", "down.example.test", "--app", "web"])).code, 0);
    const d = await waitState("web", "down.example.test", ["failed", "issued"], 60_000);
    assert.equal(d.state, "failed");
    assert.match(d.lastError ?? "", /is unavailable, no certificate for down\.example\.test: no answer/);
    assert.match(pier.output, /the ACME server is unavailable: no certificate is asked for until then/);
    // Served over HTTP (web redirects to HTTPS since CC_FORCE_HTTPS, above).
    const http = await httpGet(pier.httpPort, "down.example.test");
    assert.equal(http.status, 301);
    assert.equal(http.headers.location, `https://down.example.test:${pier.httpsPort}/`);
    assert.equal(await servedSerial(pier.httpsPort, "www.example.test"), before);
  });

  test("private keys: sealed in the store, 0600 files in a 0700 directory, never in the log", async () => {
    const tls = join(dir, "data", "edge", "tls");
    assert.equal(statSync(tls).mode & 0o777, 0o700);
    for (const f of readdirSync(tls)) assert.equal(statSync(join(tls, f)).mode & 0o777, 0o600, f);
    // The user's key (set above) is in the edge's file, and nowhere in the store's files in clear.
    const key = readFileSync(join(dir, "user.key"), "utf8");
    const body = key.split("\n").filter((l) => l && !l.startsWith("-----"))[0] ?? "";
    assert.ok(body.length > 20);
    const der = Buffer.from(key.replace(/-----[^-]+-----/g, "").replace(/\s/g, ""), "base64");
    for (const f of ["pier.db", "pier.db-wal"]) {
      const p = join(dir, "data", f);
      if (!existsSync(p)) continue;
      const raw = readFileSync(p);
      assert.ok(!raw.includes(body), `${f}: no PEM line of the key`);
      assert.ok(!raw.includes(der.subarray(-32)), `${f}: no bytes of the key`);
    }
    assert.doesNotMatch(pier.output, /PRIVATE KEY/);
  });
});
