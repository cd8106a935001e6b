// Tenants get only what they are given (issue 7, section 5; ADR 0008): SSH keys granted per app (clone and
// push of another app refused, read-only keys fetch only) and API tokens scoped to an app or read-only (other
// apps 404, forbidden writes 403, revocation, one bootstrap admin token), on a real server, git over SSH.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier, ROOT, type RunResult, run } from "./harness.js";

const FIRST_ADMIN = "first-admin-token-0123456789abcdef";
const SECOND_ADMIN = "second-admin-token-0123456789abcdef";

type Err = { error: { code: string; message: string; hint?: string } };

describe("tenancy: SSH keys per app, scoped API tokens", { timeout: 600_000 }, () => {
  // The same object stays the server's environment: a restart with another PIER_ADMIN_TOKEN changes it.
  const settings: Record<string, string> = { PIER_ADMIN_TOKEN: FIRST_ADMIN };
  const pier = new Pier(settings);
  const ids = { alpha: "", beta: "" };
  const key = (name: string) => {
    const f = join(pier.work, name);
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", f]);
    return f;
  };
  const url = (app: string) => `git+ssh://git@127.0.0.1:${pier.sshPort}/${app}.git`;
  const git = (args: string[], keyFile: string): Promise<RunResult> =>
    run(["git", ...args], { env: pier.gitEnv(keyFile), timeoutMs: 300_000 });
  /** The API as a holder of `token` sees it. */
  const as = (token: string) => (method: string, path: string, body?: unknown) =>
    pier.api(method, path, body, token);

  before(async () => {
    await pier.start();
    await pier.addKey(); // the admin key: every app
    for (const name of ["alpha", "beta"] as const) {
      ids[name] = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", name])).id;
      const dir = await pier.repo(name, NODE_DOCKER_APP, ids[name]);
      const pushed = await pier.push(dir);
      assert.equal(pushed.code, 0, pushed.stderr);
    }
  });
  after(() => pier.destroy());

  describe("SSH keys", () => {
    let alphaKey = "";
    let roKey = "";

    test("a key granted on one app clones and pushes it", async () => {
      alphaKey = key("alpha_key");
      const added = await pier.cli(["ssh-keys", "add", `${alphaKey}.pub`, "--app", "alpha"]);
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stdout, /Granted SSH key alpha_key .* on alpha: push and fetch/);
      const dir = join(pier.work, "alpha-clone");
      const clone = await git(["clone", "-q", url(ids.alpha), dir], alphaKey);
      assert.equal(clone.code, 0, clone.stderr);
      await pier.commit(dir, { "note.txt": "by the alpha key\n" }, "by the alpha key");
      const push = await git(["-C", dir, "push", "origin", "master"], alphaKey);
      assert.equal(push.code, 0, push.stderr);
      assert.match(push.stderr, /Deployed alpha/);
    });

    test("it is refused on another app, clone and push, with a clear message", async () => {
      const clone = await git(["clone", "-q", url(ids.beta), join(pier.work, "beta-clone")], alphaKey);
      assert.notEqual(clone.code, 0);
      assert.match(
        clone.stderr,
        /pier: this key \(SHA256:[^)]+\) may not reach app '[^']+', or there is no such app/,
      );
      // By name too, and for an app that does not exist: the same answer, so a key cannot probe for apps.
      const byName = await git(["ls-remote", url("beta")], alphaKey);
      assert.notEqual(byName.code, 0);
      assert.match(byName.stderr, /may not reach app 'beta'/);
      const none = await git(["ls-remote", url("app-000000000000")], alphaKey);
      assert.match(none.stderr, /may not reach app 'app-000000000000', or there is no such app/);

      const before = await git(["ls-remote", url(ids.beta), "master"], pier.keyFile);
      const dir = join(pier.work, "alpha-clone");
      const push = await git(["-C", dir, "push", url(ids.beta), "master"], alphaKey);
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /may not reach app/);
      const afterPush = await git(["ls-remote", url(ids.beta), "master"], pier.keyFile);
      assert.equal(afterPush.stdout, before.stdout, "beta's master did not move");
      assert.match(before.stdout, /refs\/heads\/master/);
    });

    test("a read-only key clones its app but cannot push it", async () => {
      roKey = key("ro_key");
      const added = await pier.cli(["ssh-keys", "add", `${roKey}.pub`, "--app", "alpha", "--read-only"]);
      assert.equal(added.code, 0, added.stderr);
      const dir = join(pier.work, "ro-clone");
      const clone = await git(["clone", "-q", url(ids.alpha), dir], roKey);
      assert.equal(clone.code, 0, clone.stderr);
      await pier.commit(dir, { "ro.txt": "x\n" }, "by the read-only key");
      const push = await git(["-C", dir, "push", "origin", "master"], roKey);
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /read-only deploy key on app 'alpha': it may fetch .* but not push/);
      const other = await git(["ls-remote", url(ids.beta)], roKey);
      assert.notEqual(other.code, 0, "read-only on alpha reaches nothing on beta");
    });

    test("keys are listed with their scope; per app; a grant is removed", async () => {
      const grant = await pier.cli(["ssh-keys", "add", `${roKey}.pub`, "--app", "beta"]);
      assert.equal(grant.code, 0, grant.stderr);
      const all = await pier.cli(["ssh-keys"]);
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /e2e@pier .*admin \(push\)/);
      assert.match(all.stdout, /alpha_key .*alpha \(push\)/);
      assert.match(all.stdout, /ro_key .*alpha \(fetch\), beta \(push\)/);
      const alphaKeys = await pier.cliJson<{ name: string }[]>(["ssh-keys", "--app", "alpha"]);
      assert.deepEqual(alphaKeys.map((k) => k.name).sort(), ["alpha_key", "ro_key"]);
      // An admin key is global: granting it on an app is refused, saying why.
      const again = await pier.cli(["ssh-keys", "add", `${pier.keyFile}.pub`, "--app", "alpha"]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /admin key: it reaches every app already/);

      const rm = await pier.cli(["ssh-keys", "rm", "alpha_key", "--app", "alpha"]);
      assert.equal(rm.code, 0, rm.stderr);
      const clone = await git(["ls-remote", url(ids.alpha)], alphaKey);
      assert.notEqual(clone.code, 0);
      assert.match(clone.stderr, /Permission denied \(publickey\)/, "a key left with no app is gone");
    });

    test("an app-scoped token cannot grant keys, even on its app", async () => {
      const t = await pier.cliJson<{ token: string }>(["tokens", "create", "keys-try", "--app", "alpha"]);
      const pub = readFileSync(`${roKey}.pub`, "utf8");
      const r = await as(t.token)("POST", `/v1/apps/alpha/ssh-keys`, { publicKey: pub });
      assert.equal(r.status, 403);
      assert.equal((r.json as Err).error.code, "FORBIDDEN");
      const list = await as(t.token)("GET", "/v1/apps/alpha/ssh-keys");
      assert.equal(list.status, 200);
      assert.equal((await as(t.token)("GET", "/v1/ssh-keys")).status, 403);
    });
  });

  describe("API tokens", () => {
    let alphaRw = "";
    let alphaRo = "";

    test("tokens create prints the token once; tokens lists name, scope, created, never the token", async () => {
      const r = await pier.cli(["tokens", "create", "alpha-rw", "--app", "alpha"]);
      assert.equal(r.code, 0, r.stderr);
      alphaRw = r.stdout.trim();
      assert.match(alphaRw, /^pier_[A-Za-z0-9_-]{40,}$/);
      assert.match(r.stderr, /shown this once/);
      alphaRo = (
        await pier.cliJson<{ token: string }>([
          "tokens",
          "create",
          "alpha-ro",
          "--app",
          "alpha",
          "--read-only",
        ])
      ).token;
      const list = await pier.cli(["tokens"]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /admin \(bootstrap\) +admin /);
      assert.match(list.stdout, /alpha-rw +app alpha +20/);
      assert.match(list.stdout, /alpha-ro +app alpha, read-only +20/);
      assert.ok(!list.stdout.includes(alphaRw) && !list.stdout.includes(alphaRo), "never the token");
      const json = await pier.cli(["tokens", "--format", "json"]);
      assert.ok(!json.stdout.includes(alphaRw), "never the token, in json either");
      const dup = await pier.cli(["tokens", "create", "alpha-rw"]);
      assert.equal(dup.code, 1);
      assert.match(dup.stderr, /exists already/);
    });

    test("a token scoped to an app sees that app only: the others answer 404, as if they did not exist", async () => {
      const api = as(alphaRw);
      const list = await api("GET", "/v1/apps");
      assert.equal(list.status, 200);
      assert.deepEqual(
        (list.json as { name: string }[]).map((a) => a.name),
        ["alpha"],
      );
      const missing = await api("GET", "/v1/apps/no-such-app");
      for (const path of ["/v1/apps/beta", `/v1/apps/${ids.beta}/env`, "/v1/apps/beta/status"]) {
        const r = await api("GET", path);
        assert.equal(r.status, 404, path);
        assert.equal((r.json as Err).error.code, "APP_NOT_FOUND");
      }
      const beta = await api("GET", "/v1/apps/beta");
      assert.deepEqual(
        (beta.json as Err).error.message.replace("beta", "X"),
        (missing.json as Err).error.message.replace("no-such-app", "X"),
        "another app answers exactly as a missing one",
      );
      const write = await api("PATCH", "/v1/apps/beta/env", { set: { A: "1" } });
      assert.equal(write.status, 404);
      assert.equal((await api("DELETE", `/v1/apps/${ids.beta}`)).status, 404);
      // Its own app: reads and writes.
      assert.equal((await api("GET", "/v1/apps/alpha")).status, 200);
      assert.equal((await api("PUT", "/v1/apps/alpha/env/GREETING_X", { value: "hi" })).status, 200);
      const who = await api("GET", "/v1/whoami");
      assert.deepEqual(who.json, {
        name: "alpha-rw",
        app: { id: ids.alpha, name: "alpha" },
        readOnly: false,
        admin: false,
        bootstrap: false,
        createdAt: (who.json as { createdAt: string }).createdAt,
      });
      // The CLI with that token: the same view.
      const env = { PIER_URL: `http://127.0.0.1:${pier.apiPort}`, PIER_TOKEN: alphaRw };
      const cli = await run([process.execPath, CLI_PATH(), "apps"], { env: { ...pier.env, ...env } });
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stdout, /alpha/);
      assert.doesNotMatch(cli.stdout, /beta/);
      const cliBeta = await run([process.execPath, CLI_PATH(), "env", "--app", "beta"], {
        env: { ...pier.env, ...env },
      });
      assert.equal(cliBeta.code, 1);
      assert.match(cliBeta.stderr, /No app named or numbered 'beta'/);
    });

    test("an app-scoped token cannot create apps or tokens, nor set allowDockerSocket: 403 with the error shape", async () => {
      const api = as(alphaRw);
      for (const [method, path, body] of [
        ["POST", "/v1/apps", { name: "gamma", type: "docker" }],
        ["POST", "/v1/tokens", { name: "escalate" }],
        ["GET", "/v1/tokens", undefined],
        ["PATCH", "/v1/apps/alpha", { allowDockerSocket: true }],
        ["POST", "/v1/ssh-keys", { publicKey: "ssh-ed25519 AAAA" }],
      ] as const) {
        const r = await api(method, path, body);
        assert.equal(r.status, 403, `${method} ${path}`);
        const e = (r.json as Err).error;
        assert.equal(e.code, "FORBIDDEN");
        assert.ok(e.message.length > 0 && (e.hint ?? "").length > 0, "message and hint");
      }
      const noRoute = await api("GET", "/v1/no-such-route");
      assert.equal(noRoute.status, 404, "a route that does not exist is no route, for any token");
      assert.equal((noRoute.json as Err).error.code, "NOT_FOUND");
      const patched = await api("PATCH", "/v1/apps/alpha", { allowDockerSocket: true });
      assert.match((patched.json as Err).error.message, /Only an admin token may set allowDockerSocket/);
      const app = (await pier.api("GET", "/v1/apps/alpha")).json as { allowDockerSocket: boolean };
      assert.equal(app.allowDockerSocket, false, "nothing was changed");
      // Scaling its own app is its to do; the admin token may set allowDockerSocket.
      assert.equal((await api("PATCH", "/v1/apps/alpha", { buildFlavor: "M" })).status, 200);
      const admin = await pier.api("PATCH", "/v1/apps/alpha", { allowDockerSocket: true });
      assert.equal(admin.status, 200);
      const cli = await run([process.execPath, CLI_PATH(), "tokens", "create", "x"], {
        env: { ...pier.env, PIER_URL: `http://127.0.0.1:${pier.apiPort}`, PIER_TOKEN: alphaRw },
      });
      assert.equal(cli.code, 1);
      assert.match(cli.stderr, /needs an admin token/);
    });

    test("a read-only token reads and gets 403 on every write", async () => {
      const api = as(alphaRo);
      assert.equal((await api("GET", "/v1/apps/alpha/env")).status, 200);
      assert.equal((await api("GET", "/v1/apps/alpha/deployments")).status, 200);
      for (const [method, path, body] of [
        ["PUT", "/v1/apps/alpha/env/A", { value: "1" }],
        ["PATCH", "/v1/apps/alpha/env", { set: { A: "1" } }],
        ["POST", "/v1/apps/alpha/deployments", {}],
        ["POST", "/v1/apps/alpha/stop", undefined],
        ["DELETE", "/v1/apps/alpha", undefined],
        ["PATCH", "/v1/apps/alpha", { instances: 2 }],
      ] as const) {
        const r = await api(method, path, body);
        assert.equal(r.status, 403, `${method} ${path}`);
        assert.match((r.json as Err).error.message, /read-only/);
      }
      assert.equal((await api("GET", "/v1/apps/beta")).status, 404, "and another app is still not found");
      // A read-only admin token: every app, no write.
      const auditor = (await pier.cliJson<{ token: string }>(["tokens", "create", "auditor", "--read-only"]))
        .token;
      const all = await as(auditor)("GET", "/v1/apps");
      assert.deepEqual(
        (all.json as { name: string }[]).map((a) => a.name),
        ["alpha", "beta"],
      );
      assert.equal((await as(auditor)("POST", "/v1/apps", { name: "gamma", type: "docker" })).status, 403);
    });

    test("a revoked token gets 401 at once", async () => {
      assert.equal((await as(alphaRw)("GET", "/v1/apps")).status, 200);
      const r = await pier.cli(["tokens", "revoke", "alpha-rw"]);
      assert.equal(r.code, 0, r.stderr);
      const after = await as(alphaRw)("GET", "/v1/apps");
      assert.equal(after.status, 401);
      assert.equal((after.json as Err).error.code, "UNAUTHORIZED");
      const bootstrap = await pier.cli(["tokens", "revoke", "admin"]);
      assert.equal(bootstrap.code, 1);
      assert.match(bootstrap.stderr, /PIER_ADMIN_TOKEN/);
    });

    test("a restart with a new PIER_ADMIN_TOKEN makes the previous one 401; other tokens stay", async () => {
      assert.equal((await as(FIRST_ADMIN)("GET", "/v1/apps")).status, 200);
      await pier.stopServer();
      settings.PIER_ADMIN_TOKEN = SECOND_ADMIN;
      await pier.start();
      const old = await as(FIRST_ADMIN)("GET", "/v1/apps");
      assert.equal(old.status, 401);
      assert.equal((await as(SECOND_ADMIN)("GET", "/v1/tokens")).status, 200);
      const saved = JSON.parse(readFileSync(join(pier.dataDir, "cli.json"), "utf8")) as { token: string };
      assert.equal(saved.token, SECOND_ADMIN, "the local CLI gets the new one");
      assert.equal((await as(alphaRo)("GET", "/v1/apps/alpha")).status, 200, "created tokens stay valid");
      const list = await pier.cliJson<{ name: string; bootstrap: boolean }[]>(["tokens"]);
      assert.equal(list.filter((t) => t.bootstrap).length, 1, "exactly one bootstrap admin token");
    });
  });
});

const CLI_PATH = () => join(ROOT, "bin/pier.js");
