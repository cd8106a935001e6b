// Commands run in-process with a fake fetch behind ApiClient: the requests they send and what they print.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ApiClient } from "../../../src/cli/client.js";
import { run } from "../../../src/cli/run.js";
import { memoryIo } from "./io.js";

const APP = {
  id: "app-0123456789ab",
  name: "web",
  type: "docker",
  flavor: "nano",
  buildFlavor: "M",
  instances: 1,
  task: null,
  allowDockerSocket: false,
  stopped: false,
  createdAt: "2026-11-22T10:00:00.000Z",
  gitUrl: "git+ssh://git@localhost:2222/app-0123456789ab.git",
  url: "http://web.localhost:8000",
};

type Answer = { status: number; body?: unknown; text?: string };
interface Sent {
  method: string;
  path: string;
  body: unknown;
}

/** Runs `pier <argv>` with `answers` keyed by "METHOD /path?query"; records what was sent. */
async function pier(
  argv: string[],
  answers: Record<string, Answer>,
  opts: { cwd?: string; stdin?: string; tty?: boolean; answer?: string } = {},
) {
  const sent: Sent[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const key = `${init?.method ?? "GET"} ${url.pathname}${url.search}`;
    sent.push({
      method: init?.method ?? "GET",
      path: `${url.pathname}${url.search}`,
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
    });
    const a = answers[key] ?? { status: 404, body: { error: { code: "NOT_FOUND", message: `no ${key}` } } };
    const text = a.text ?? (a.body === undefined ? null : JSON.stringify(a.body));
    return new Response(text, { status: a.status });
  }) as typeof fetch;
  const io = memoryIo(opts);
  const code = await run(argv, {
    io,
    makeClient: () => new ApiClient({ url: "http://pier.test", token: "t", source: "test" }, fakeFetch),
    version: "0.0.0",
  });
  return { code, stdout: io.stdout, stderr: io.stderr, sent };
}

describe("commands", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-cmd-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("create: labelled id, git URL and app URL, the next steps, and --link writes .pier.json", async () => {
    const r = await pier(
      ["create", "--type", "docker", "web", "--instances", "2", "--flavor", "S", "--link"],
      { "POST /v1/apps": { status: 201, body: APP } },
      { cwd: dir },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { name: "web", type: "docker", flavor: "S", instances: 2 });
    assert.match(r.stdout, /^App id: +app-0123456789ab$/m);
    assert.match(r.stdout, /^Git URL: +git\+ssh:\/\/git@localhost:2222\/app-0123456789ab\.git$/m);
    assert.match(r.stdout, /^App URL: +http:\/\/web\.localhost:8000$/m);
    assert.match(r.stdout, /git remote add pier git\+ssh:\/\/git@localhost:2222\/app-0123456789ab\.git\n/);
    assert.match(r.stdout, /git push pier master\n/);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, ".pier.json"), "utf8")), { app: APP.id, name: "web" });
  });

  test("a linked folder needs no --app", async () => {
    const r = await pier(
      ["stop"],
      { [`POST /v1/apps/${APP.id}/stop`]: { status: 200, body: APP } },
      { cwd: dir },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Stopped app web/);
  });

  test("delete on a terminal asks for the name: a wrong answer deletes nothing", async () => {
    const answers = {
      "GET /v1/apps/web": { status: 200, body: APP },
      "DELETE /v1/apps/web": { status: 204 },
    };
    const no = await pier(["delete", "-a", "web"], answers, { tty: true, answer: "wbe" });
    assert.equal(no.code, 1);
    assert.ok(!no.sent.some((s) => s.method === "DELETE"));
    assert.match(no.stderr, /nothing was deleted/);
    const yes = await pier(["delete", "-a", "web"], answers, { tty: true, answer: "web" });
    assert.equal(yes.code, 0, yes.stderr);
    assert.ok(yes.sent.some((s) => s.method === "DELETE" && s.path === "/v1/apps/web"));
    const ci = await pier(["delete", "-a", "web", "--yes"], answers);
    assert.equal(ci.code, 0, ci.stderr);
    assert.deepEqual(
      ci.sent.map((s) => s.method),
      ["DELETE"],
    );
  });

  test("env import: NAME=value lines from stdin go in one PATCH {set}", async () => {
    const r = await pier(
      ["env", "import", "-a", "web"],
      { "PATCH /v1/apps/web/env": { status: 200, body: { vars: { A: "1", B: "two words", M: "x\ny" } } } },
      { stdin: '# comment\nA=1\nexport B="two words"\nM="x\ny"\n' },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { set: { A: "1", B: "two words", M: "x\ny" } });
    assert.match(r.stdout, /Set 3 variables: A, B, M/);
  });

  test("env import: JSON, including the API's own { vars } answer; bad input sends nothing", async () => {
    const answers = { "PATCH /v1/apps/web/env": { status: 200, body: { vars: { C: "3" } } } };
    const plain = await pier(["env", "import", "-a", "web"], answers, { stdin: '{"C":"3"}' });
    assert.deepEqual(plain.sent[0]?.body, { set: { C: "3" } });
    const wrapped = await pier(["env", "import", "-a", "web"], answers, { stdin: '{"vars":{"C":"3"}}' });
    assert.deepEqual(wrapped.sent[0]?.body, { set: { C: "3" } });
    const bad = await pier(["env", "import", "-a", "web"], answers, { stdin: "NOT A LINE\n" });
    assert.equal(bad.code, 1);
    assert.equal(bad.sent.length, 0);
    assert.match(bad.stderr, /Line 1/);
  });

  test("env: human, json (the vars object) and shell", async () => {
    const answers = { "GET /v1/apps/web/env": { status: 200, body: { vars: { B: "it's", A: "1" } } } };
    assert.equal((await pier(["env", "-a", "web"], answers)).stdout, "A=1\nB=it's\n");
    assert.deepEqual(JSON.parse((await pier(["env", "-a", "web", "--format", "json"], answers)).stdout), {
      B: "it's",
      A: "1",
    });
    assert.equal(
      (await pier(["env", "-a", "web", "--format", "shell"], answers)).stdout,
      "export A='1'\nexport B='it'\\''s'\n",
    );
  });

  test("env set and rm: PUT one variable, PATCH {unset} for several", async () => {
    const set = await pier(["env", "set", "GREETING", "bonjour", "-a", "web"], {
      "PUT /v1/apps/web/env/GREETING": { status: 200, body: { name: "GREETING", value: "bonjour" } },
    });
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(set.sent[0]?.body, { value: "bonjour" });
    const rm = await pier(["env", "rm", "A", "B", "-a", "web"], {
      "PATCH /v1/apps/web/env": { status: 200, body: { vars: {} } },
    });
    assert.equal(rm.code, 0, rm.stderr);
    assert.deepEqual(rm.sent[0]?.body, { unset: ["A", "B"] });
  });

  test("logs: runtime lines as `<at> [<instance>] <line>`, query passed through; json prints the array", async () => {
    const lines = [
      { at: "2026-11-22T10:00:00Z", instance: 0, stream: "stdout", line: "listening" },
      { at: "2026-11-22T10:00:01Z", instance: 1, stream: "stderr", line: "warn" },
    ];
    const answers = { "GET /v1/apps/web/logs?since=10m&tail=5": { status: 200, body: { lines } } };
    const human = await pier(["logs", "-a", "web", "--since", "10m", "--tail", "5"], answers);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout, "2026-11-22T10:00:00Z [0] listening\n2026-11-22T10:00:01Z [1] warn\n");
    const j = await pier(["logs", "-a", "web", "--since", "10m", "--tail", "5", "--format", "json"], answers);
    assert.deepEqual(JSON.parse(j.stdout), lines);
  });

  test("logs -f --format json: one JSON object per line, until the app is deleted", async () => {
    const l = { at: "2026-11-22T10:00:00Z", instance: 0, stream: "stdout", line: "hi" };
    // The stream ends; the CLI asks again from the last line (a second later), and the app is gone.
    const again = new URLSearchParams({ since: "2026-11-22T10:00:00.000000000Z", follow: "true" });
    const r = await pier(["logs", "-a", "web", "-f", "--format", "json"], {
      "GET /v1/apps/web/logs?follow=true": { status: 200, text: `data: ${JSON.stringify(l)}\n\n`.repeat(2) },
      [`GET /v1/apps/web/logs?${again}`]: {
        status: 404,
        body: { error: { code: "APP_NOT_FOUND", message: "No app named or numbered 'web'." } },
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /The app web was deleted: its log ends here\./);
    assert.deepEqual(
      r.stdout
        .trimEnd()
        .split("\n")
        .map((x) => JSON.parse(x)),
      [l, l],
    );
  });

  test("logs -f: an event that is not the route's declared line is an error, not a line printed", async () => {
    const r = await pier(["logs", "-a", "web", "-f"], {
      "GET /v1/apps/web/logs?follow=true": { status: 200, text: `data: ${JSON.stringify({ at: "x" })}\n\n` },
    });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.match(
      r.stderr,
      /unexpected answer from the server to GET \/v1\/apps\/web\/logs\?follow=true: an event that does not parse: \{"at":"x"\}/,
    );
  });

  test("scale: PATCH with the new size; no deployment returned, nothing to follow", async () => {
    const r = await pier(["scale", "-a", "web", "--instances", "2", "--build-flavor", "L"], {
      "PATCH /v1/apps/web": { status: 200, body: { app: { ...APP, instances: 2 }, deployment: null } },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { instances: 2, buildFlavor: "L" });
  });

  test("ssh-keys rm sends the fingerprint as one path segment", async () => {
    const fp = "SHA256:ab/cd+ef=";
    const r = await pier(["ssh-keys", "rm", fp], {
      [`DELETE /v1/ssh-keys/${encodeURIComponent(fp)}`]: { status: 204 },
    });
    assert.equal(r.code, 0, r.stderr);
  });

  const KEY = {
    id: "key-1",
    name: "deploy",
    fingerprint: "SHA256:abc",
    algo: "ssh-ed25519",
    global: false,
    readOnly: false,
    apps: [{ id: APP.id, name: "web", readOnly: true }],
    createdAt: "2026-11-22T10:00:00.000Z",
  };

  test("ssh-keys add --app grants the key on that app only, read-only when asked", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pier-keys-"));
    const pub = join(dir, "k.pub");
    writeFileSync(pub, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA deploy\n");
    const r = await pier(["ssh-keys", "add", pub, "--app", "web", "--read-only"], {
      "POST /v1/apps/web/ssh-keys": { status: 201, body: KEY },
    });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, {
      publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA deploy",
      readOnly: true,
    });
    assert.match(r.stdout, /Granted SSH key deploy \(SHA256:abc\), id key-1, on web: fetch only/);
  });

  test("ssh-keys lists every key with its scope; --app lists the app's keys", async () => {
    const admin = { ...KEY, id: "key-0", name: "me", global: true, apps: [] };
    const all = await pier(["ssh-keys"], { "GET /v1/ssh-keys": { status: 200, body: [admin, KEY] } });
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /SCOPE/);
    assert.match(all.stdout, /me .*admin \(push\)/);
    assert.match(all.stdout, /deploy .*web \(fetch\)/);
    const one = await pier(["ssh-keys", "--app", "web"], {
      "GET /v1/apps/web/ssh-keys": { status: 200, body: [KEY] },
    });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /deploy .* fetch /);
  });

  test("ssh-keys rm --app removes the grant on that app", async () => {
    const r = await pier(["ssh-keys", "rm", "deploy", "--app", "web"], {
      "DELETE /v1/apps/web/ssh-keys/deploy": { status: 204 },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Removed SSH key deploy from web/);
  });

  const TOKEN = {
    name: "ci",
    app: { id: APP.id, name: "web" },
    readOnly: true,
    admin: false,
    bootstrap: false,
    createdAt: "2026-11-22T10:00:00.000Z",
  };

  test("tokens create prints the token once, on stdout, and its scope on stderr", async () => {
    const r = await pier(["tokens", "create", "ci", "--app", "web", "--read-only"], {
      "POST /v1/tokens": { status: 201, body: { ...TOKEN, token: "pier_s3cret" } },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { name: "ci", app: "web", readOnly: true });
    assert.equal(r.stdout, "pier_s3cret\n");
    assert.match(r.stderr, /Created token ci \(app web, read-only\)\. It is shown this once/);
  });

  test("tokens lists name, scope and creation time", async () => {
    const r = await pier(["tokens"], {
      "GET /v1/tokens": {
        status: 200,
        body: [{ ...TOKEN, name: "admin", app: null, readOnly: false, admin: true, bootstrap: true }, TOKEN],
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /NAME +SCOPE +CREATED/);
    assert.match(r.stdout, /admin \(bootstrap\) +admin +2026/);
    assert.match(r.stdout, /ci +app web, read-only +2026/);
  });

  test("an unknown subcommand of nodes, domain or addon is a usage error naming what it takes; nothing is sent", async () => {
    for (const [command, takes] of [
      ["nodes", "join-command, drain, activate"],
      ["domain", "add, rm, renew, cert set"],
      ["addon", "create, list, status, env, delete, backup"],
    ]) {
      const r = await pier([command as string, "frob"], {});
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`unknown ${command} command 'frob' \\(expected ${takes}\\)`));
      assert.deepEqual(r.sent, []);
    }
  });

  test("nodes: GUARDED per node; why a node is not guarded on stderr, not in the table", async () => {
    const node = (name: string, guarded: string, guardProblem: string | null) => ({
      id: `id-${name}`,
      name,
      address: "192.0.2.11",
      role: "worker",
      leader: false,
      availability: "active",
      state: "ready",
      labels: {},
      instances: 1,
      guarded,
      guardProblem,
    });
    const r = await pier(["nodes"], {
      "GET /v1/nodes": {
        status: 200,
        body: [node("node1", "yes", null), node("node2", "no", "its guard task rejected: No such image")],
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NAME +ADDRESS +ROLE +AVAILABILITY +STATE +GUARDED +INSTANCES +LABELS\n/);
    assert.match(r.stdout, /^node1 +192\.0\.2\.11 +worker +active +ready +yes +1/m);
    assert.match(r.stdout, /^node2 +192\.0\.2\.11 +worker +active +ready +no +1/m);
    assert.equal(r.stderr, "node2 is not guarded: its guard task rejected: No such image\n");
    // One manager among them: said after the table, on stderr.
    const one = await pier(["nodes"], {
      "GET /v1/nodes": {
        status: 200,
        body: [{ ...node("node1", "yes", null), role: "manager", leader: true }, node("node2", "yes", null)],
      },
    });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /^node1 +192\.0\.2\.11 +manager \(leader\) +active/m);
    assert.match(one.stderr, /^node1 is the swarm's only manager: .* a few seconds with three managers/);
  });

  test("tokens revoke deletes by name; --app belongs to create only", async () => {
    const r = await pier(["tokens", "revoke", "ci"], { "DELETE /v1/tokens/ci": { status: 204 } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Revoked token ci/);
    const bad = await pier(["tokens", "revoke", "ci", "--app", "web"], {});
    assert.equal(bad.code, 2);
  });

  test("an answer that does not match the API is an error naming the field", async () => {
    const r = await pier(["apps", "--format", "json"], {
      "GET /v1/apps": { status: 200, body: [{ id: 1 }] },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /unexpected answer from the server to GET \/v1\/apps: 0\.id: /);
  });
});
