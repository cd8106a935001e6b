// The edge under abuse and tenants that share nothing they did not link (issue 15, ADR 0024): a real
// `pier server`, real pushes, the real HAProxy edge, real TCP and HTTP from two loopback source addresses.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { NODE_DOCKER_APP, Pier } from "./harness.js";

interface Echo {
  version: string;
  headers: Record<string, string | undefined>;
}

/** The edge listens on 127.0.0.1 (the harness's PIER_HTTP_HOST); a client picks its source address. */
function getFrom(
  source: string,
  port: number,
  host: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/",
        localAddress: source,
        headers: { host, ...headers },
        agent: false,
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

/** Opens `n` idle TCP connections from `source`; resolves with those the edge still holds after `settleMs`. */
async function holdIdle(source: string, port: number, n: number, settleMs = 1500): Promise<Socket[]> {
  const all: Socket[] = [];
  const closed = new Set<Socket>();
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: "127.0.0.1", port, localAddress: source });
          all.push(s);
          s.on("connect", () => resolve());
          s.on("error", () => {
            closed.add(s);
            resolve();
          });
          s.on("close", () => closed.add(s));
        }),
    ),
  );
  await new Promise((r) => setTimeout(r, settleMs));
  return all.filter((s) => !closed.has(s));
}

/** Whether a TLS handshake from 127.0.0.1 to the HTTPS edge completes (false: the edge closed it). */
function tlsHandshakes(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: "127.0.0.1", port, servername: "x.localhost", rejectUnauthorized: false });
    s.setTimeout(5000, () => {
      s.destroy();
      resolve(false);
    });
    s.on("secureConnect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

describe("the edge under abuse; tenants share nothing they did not link", { timeout: 1_200_000 }, () => {
  const CAP = 50;
  const pier = new Pier({ PIER_EDGE_MAX_CONN_PER_SOURCE: String(CAP) });
  let victim = { id: "", image: "" };
  let thiefRepo = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    for (const name of ["victim", "thief"]) {
      const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", name]);
      assert.equal(
        (await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", name])).code,
        0,
      );
      const repo = await pier.repo(name, NODE_DOCKER_APP, app.id);
      const push = await pier.push(repo);
      assert.equal(push.code, 0, push.stderr);
      if (name === "victim") {
        const releases = (await pier.api("GET", "/v1/apps/victim/releases")).json as { image: string }[];
        victim = { id: app.id, image: releases[0]?.image ?? "" };
      } else thiefRepo = repo;
    }
  });
  after(async () => {
    await pier.destroy();
  });

  test("spoofed X-Real-IP, Forwarded and X-Forwarded-For: the app sees the edge's values, from each client", async () => {
    const spoof = {
      "x-real-ip": "6.6.6.6",
      forwarded: "for=6.6.6.6;proto=https",
      "x-forwarded-for": "6.6.6.6",
      "x-forwarded-proto": "https",
    };
    for (const source of ["127.0.0.1", "127.0.0.2"]) {
      const r = await getFrom(source, pier.httpPort, "victim.localhost", spoof);
      assert.equal(r.status, 200, r.body);
      const h = (JSON.parse(r.body) as Echo).headers;
      assert.equal(h["x-real-ip"], source);
      assert.equal(h.forwarded, `for=${source};proto=http`);
      assert.equal(h["x-forwarded-for"], source, "the client's X-Forwarded-For is replaced, not appended to");
      assert.equal(h["x-forwarded-proto"], "http");
    }
  });

  test("one client holding more idle connections than its cap: its extra ones are refused, another client still gets 200", async () => {
    const held = await holdIdle("127.0.0.1", pier.httpPort, CAP + 20);
    try {
      assert.ok(
        held.length <= CAP,
        `the edge holds ${held.length} idle connections of one client (cap ${CAP})`,
      );
      assert.ok(held.length >= CAP - 5, `the edge holds ${held.length}: the cap lets ${CAP} in`);
      // The same client: refused on HTTP, and on HTTPS (one count for both frontends).
      await assert.rejects(getFrom("127.0.0.1", pier.httpPort, "victim.localhost"));
      assert.equal(await tlsHandshakes(pier.httpsPort), false, "the HTTPS frontend counts the same source");
      // Another client (another loopback source address) is served, as are the other apps.
      for (const host of ["victim.localhost", "thief.localhost"]) {
        const r = await getFrom("127.0.0.2", pier.httpPort, host);
        assert.equal(r.status, 200, `${host} from 127.0.0.2: ${r.body}`);
      }
    } finally {
      for (const s of held) s.destroy();
    }
    // Once its connections are closed, the first client is served again.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await getFrom("127.0.0.1", pier.httpPort, "victim.localhost")).status, 200);
  });

  test("a Dockerfile FROM another app's release image is refused before building; the app keeps its release", async () => {
    assert.match(victim.image, new RegExp(`^pier-app/${victim.id}:dep-`));
    const before = (await pier.api("GET", "/v1/apps/thief/releases")).json as unknown[];
    await pier.commit(
      thiefRepo,
      {
        Dockerfile: [
          `ARG BASE=${victim.image}`,
          "FROM $BASE AS loot",
          "FROM pier/node:22",
          "COPY --from=loot /app /stolen",
          'CMD ["node", "/stolen/server.js"]',
          "",
        ].join("\n"),
      },
      "build on the victim's release",
    );
    const push = await pier.push(thiefRepo);
    assert.notEqual(push.code, 0, "the push fails");
    assert.match(
      push.stderr,
      new RegExp(
        `Dockerfile line 2: FROM \\$BASE \\(= ${victim.image}\\) is refused: pier-app/\\* images are apps' releases, private to each app`,
      ),
    );
    assert.doesNotMatch(push.stderr, /Step 1\/|Building pier-app/, "nothing was built");
    assert.deepEqual((await pier.api("GET", "/v1/apps/thief/releases")).json, before, "no new release");
    const r = await pier.get("thief");
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as Echo).version, "1", "the previous release keeps serving");
  });

  test("the data dir: started on a 755/644 data dir, pier server makes everything 0700/0600; the edge still serves", async () => {
    await pier.stopServer();
    execFileSync("chmod", ["-R", "u+rwX,go+rX", pier.dataDir]);
    const loose = execFileSync("find", [pier.dataDir, "-perm", "-o=r", "-printf", "."]).toString().length;
    assert.ok(loose > 20, `the test made the data dir world-readable (${loose} entries)`);
    await pier.start();
    const openEntries = () =>
      execFileSync("find", [
        pier.dataDir,
        "(",
        "-perm",
        "/077",
        "-a",
        "!",
        "-type",
        "l",
        ")",
        "-printf",
        "%m %p\n",
      ])
        .toString()
        .trim();
    // The reconciler's first route change reloads the adopted HAProxy meanwhile (its pid file is made private
    // just after): give it a few seconds.
    let open = openEntries();
    for (let i = 0; i < 50 && open !== ""; i++) {
      await new Promise((r) => setTimeout(r, 100));
      open = openEntries();
    }
    assert.equal(open, "", "no entry of the data dir is open to group or others");
    const modes = execFileSync("stat", [
      "-c",
      "%a %n",
      pier.dataDir,
      `${pier.dataDir}/pier.db`,
      `${pier.dataDir}/secret.key`,
      `${pier.dataDir}/edge/haproxy.cfg`,
      `${pier.dataDir}/repos/${victim.id}.git`,
      `${pier.dataDir}/repos/${victim.id}.git/config`,
    ])
      .toString()
      .trim()
      .split("\n")
      .map((l) => l.split(" ")[0]);
    assert.deepEqual(modes, ["700", "600", "600", "600", "700", "600"]);
    // HAProxy (Pier's own, as the same user) still reads its files: the apps answer, and a change reloads.
    assert.equal((await pier.get("victim")).status, 200);
    const r = await pier.cli(["scale", "--instances", "2", "--app", "victim"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await pier.get("victim")).status, 200);
  });
});
