// The management API and CLI on bad input: each gets a clear error with the real status, and nothing changes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier } from "./harness.js";

type ErrorBody = { error: { code: string; message: string; hint?: string } };

describe("API and CLI: bad input gets a clear error and loses nothing", { timeout: 300_000 }, () => {
  const pier = new Pier();
  before(async () => {
    await pier.start();
  });
  after(async () => {
    await pier.destroy();
  });

  test("no token or a wrong one: 401 with an error body", async () => {
    const none = await fetch(`http://127.0.0.1:${pier.apiPort}/v1/apps`);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as ErrorBody).error.code, "UNAUTHORIZED");
    const wrong = await pier.api("GET", "/v1/apps", undefined, "x".repeat(40));
    assert.equal(wrong.status, 401);
    const info = await fetch(`http://127.0.0.1:${pier.apiPort}/v1/info`);
    assert.equal(info.status, 200, "/v1/info needs no token");
  });

  test("the console page is served with a strict content security policy, its bundle from the same origin", async () => {
    const r = await fetch(`http://127.0.0.1:${pier.apiPort}/`);
    assert.equal(r.status, 200);
    const csp = r.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self';/, "no inline script");
    assert.match(csp, /style-src 'self';/, "no inline style");
    const html = await r.text();
    assert.match(html, /<script type="module" src="\/console\/console\.js"><\/script>/);
    assert.doesNotMatch(html, /<script>|<style>/, "nothing inline");
    const js = await fetch(`http://127.0.0.1:${pier.apiPort}/console/console.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /^text\/javascript/);
    const code = await js.text();
    assert.match(code, /Update Changes/);
    const css = await fetch(`http://127.0.0.1:${pier.apiPort}/console/console.css`);
    assert.equal(css.status, 200);
    assert.match(css.headers.get("content-type") ?? "", /^text\/css/);
    assert.equal((await fetch(`http://127.0.0.1:${pier.apiPort}/console/cli.json`)).status, 404);
  });

  test("the OpenAPI document lists the routes", async () => {
    const r = await fetch(`http://127.0.0.1:${pier.apiPort}/v1/openapi.json`);
    const doc = (await r.json()) as { openapi: string; paths: Record<string, unknown> };
    assert.equal(doc.openapi, "3.1.0");
    assert.ok(doc.paths["/v1/apps/{app}/env"]);
    assert.ok(doc.paths["/v1/apps/{app}/deployments/{id}/log"]);
  });

  test("unknown app: 404 APP_NOT_FOUND, and the CLI exits 1 naming it", async () => {
    const r = await pier.api("GET", "/v1/apps/nope/status");
    assert.equal(r.status, 404);
    assert.equal((r.json as ErrorBody).error.code, "APP_NOT_FOUND");
    const cli = await pier.cli(["status", "--app", "nope"]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /nope/);
  });

  test("unknown type, bad names and flavors are refused with the field and the rule", async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: "a", type: "cobol" }, /type: must be one of docker, node, phpserver/],
      [{ name: "Bad_Name", type: "docker" }, /name: 'Bad_Name' must start with a lowercase letter/],
      [{ name: "ok", type: "docker", flavor: "huge" }, /flavor: must be one of/],
      [{ name: "php", type: "phpserver", flavor: "pico" }, /pico/],
      [{ type: "docker" }, /name/],
    ];
    for (const [body, message] of cases) {
      const r = await pier.api("POST", "/v1/apps", body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match((r.json as ErrorBody).error.message, message);
    }
    const cli = await pier.cli(["create", "--type", "cobol", "x"]);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /cobol|type/);
    assert.deepEqual((await pier.api("GET", "/v1/apps")).json, []);
  });

  test("invalid variable names are refused, all or nothing", async () => {
    const created = await pier.api("POST", "/v1/apps", { name: "envapp", type: "docker" });
    assert.equal(created.status, 201);
    assert.equal((await pier.api("PUT", "/v1/apps/envapp/env/GOOD", { value: "1" })).status, 200);
    const r = await pier.api("PATCH", "/v1/apps/envapp/env", {
      set: { OTHER: "2", "1BAD": "x", "A-B": "y" },
    });
    assert.equal(r.status, 400);
    assert.match((r.json as ErrorBody).error.message, /1BAD/);
    assert.deepEqual((await pier.api("GET", "/v1/apps/envapp/env")).json, { vars: { GOOD: "1" } });
    const ro = await pier.api("PUT", "/v1/apps/envapp/env/INSTANCE_NUMBER", { value: "3" });
    assert.equal(ro.status, 400);
    const cidr = await pier.api("PUT", "/v1/apps/envapp/env/CC_DOCKER_FIXED-CIDR-V6", {
      value: "fd00:1::/64",
    });
    assert.equal(cidr.status, 200, "the contract's one name with '-' is accepted");
    const cli = await pier.cli(["env", "set", "9X", "v", "--app", "envapp"]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /9X/);
  });

  test("env import reads NAME=value lines and JSON from stdin; env prints json and shell", async () => {
    const imp = await pier.cli(["env", "import", "--app", "envapp"], {
      input: '# comment\nA=1\nexport B="two words"\nMULTI="line1\nline2"\n',
    });
    assert.equal(imp.code, 0, imp.stderr);
    const json = await pier.cli(["env", "import", "--app", "envapp"], { input: '{"C":"3"}' });
    assert.equal(json.code, 0, json.stderr);
    const vars = await pier.cliJson<Record<string, string>>(["env", "--app", "envapp"]);
    assert.equal(vars.A, "1");
    assert.equal(vars.B, "two words");
    assert.equal(vars.MULTI, "line1\nline2");
    assert.equal(vars.C, "3");
    const shell = await pier.cli(["env", "--format", "shell", "--app", "envapp"]);
    assert.match(shell.stdout, /export B='two words'/);
    const bad = await pier.cli(["env", "import", "--app", "envapp"], { input: "NOT A LINE\n" });
    assert.notEqual(bad.code, 0);
  });

  test("secret values: masked unless revealed by a token that may write; read-only tokens get them masked and 403 on reveal", async () => {
    assert.equal((await pier.api("POST", "/v1/apps", { name: "secretapp", type: "docker" })).status, 201);
    const set = await pier.api("PATCH", "/v1/apps/secretapp/env", {
      set: { DB_PASSWORD: "hunter2-pw", DATABASE_URL: "postgres://u:s3cret-pw@db/x", GREETING: "hi" },
    });
    assert.equal(set.status, 200);
    assert.ok(!JSON.stringify(set.json).includes("hunter2-pw"), "the PATCH answer is masked too");
    const masked = { DB_PASSWORD: "****", DATABASE_URL: "postgres://u:****@db/x", GREETING: "hi" };
    // The admin token: masked by default, clear with ?reveal=true.
    assert.deepEqual((await pier.api("GET", "/v1/apps/secretapp/env")).json, { vars: masked });
    assert.deepEqual((await pier.api("GET", "/v1/apps/secretapp/env?reveal=true")).json, {
      vars: { DB_PASSWORD: "hunter2-pw", DATABASE_URL: "postgres://u:s3cret-pw@db/x", GREETING: "hi" },
    });
    const badQuery = await pier.api("GET", "/v1/apps/secretapp/env?reveal=yes");
    assert.equal(badQuery.status, 400);
    assert.match((badQuery.json as ErrorBody).error.message, /reveal: must be true or false/);
    // Read-only tokens (scoped to the app, and an auditor of every app): masked, and 403 on reveal.
    for (const body of [
      { name: "secretapp-ro", app: "secretapp", readOnly: true },
      { name: "auditor-ro", readOnly: true },
    ]) {
      const made = await pier.api("POST", "/v1/tokens", body);
      assert.equal(made.status, 201);
      const token = (made.json as { token: string }).token;
      const got = await pier.api("GET", "/v1/apps/secretapp/env", undefined, token);
      assert.equal(got.status, 200);
      assert.deepEqual(got.json, { vars: masked }, body.name);
      const reveal = await pier.api("GET", "/v1/apps/secretapp/env?reveal=true", undefined, token);
      assert.equal(reveal.status, 403, body.name);
      const e = (reveal.json as ErrorBody).error;
      assert.equal(e.code, "FORBIDDEN");
      assert.match(e.message, /read-only: it cannot reveal secret values/);
      assert.match(e.hint ?? "", /without --read-only/);
      // The CLI with that token: masked values, and --reveal fails with the server's message.
      const env = { PIER_URL: `http://127.0.0.1:${pier.apiPort}`, PIER_TOKEN: token };
      const cli = await pier.cliWith(["env", "--app", "secretapp"], env);
      assert.equal(cli.code, 0, cli.stderr);
      assert.ok(!cli.stdout.includes("hunter2-pw") && !cli.stdout.includes("s3cret-pw"), cli.stdout);
      assert.match(cli.stdout, /DB_PASSWORD=\*\*\*\*/);
      const cliReveal = await pier.cliWith(["env", "--app", "secretapp", "--reveal"], env);
      assert.equal(cliReveal.code, 1);
      assert.match(cliReveal.stderr, /read-only: it cannot reveal secret values/);
      assert.ok(!cliReveal.stdout.includes("hunter2-pw"));
    }
    // pier env (admin) masks without --reveal, shows with it; a masked listing cannot be imported back.
    const plain = await pier.cli(["env", "--app", "secretapp"]);
    assert.match(plain.stdout, /DB_PASSWORD=\*\*\*\*\n/);
    assert.match(plain.stderr, /Secret values are masked; --reveal shows them/);
    const shown = await pier.cli(["env", "--app", "secretapp", "--reveal"]);
    assert.match(shown.stdout, /DB_PASSWORD=hunter2-pw\n/);
    const back = await pier.cli(["env", "import", "--app", "secretapp"], { input: JSON.stringify(masked) });
    assert.equal(back.code, 1);
    assert.match(back.stderr, /DB_PASSWORD is Pier's mask \(\*\*\*\*\)/);
    const still = (await pier.api("GET", "/v1/apps/secretapp/env?reveal=true")).json as {
      vars: Record<string, string>;
    };
    assert.equal(still.vars.DB_PASSWORD, "hunter2-pw", "nothing was changed");
  });

  test("an IP address is refused as a custom domain, saying why (API and CLI)", async () => {
    assert.equal((await pier.api("POST", "/v1/apps", { name: "ipdomain", type: "docker" })).status, 201);
    for (const name of ["203.0.113.7", "2001:db8::1"]) {
      const r = await pier.api("POST", "/v1/apps/ipdomain/domains", { name });
      assert.equal(r.status, 400, name);
      assert.match(
        (r.json as ErrorBody).error.message,
        /is an IP address, not a DNS name: certificate authorities/,
      );
    }
    const cli = await pier.cli(["domain", "add", "203.0.113.7", "--app", "ipdomain"]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /203\.0\.113\.7' is an IP address, not a DNS name/);
    assert.deepEqual((await pier.api("GET", "/v1/apps/ipdomain/domains")).json, []);
  });

  test("ssh keys: a damaged key is refused, a good one listed and removed", async () => {
    const bad = await pier.api("POST", "/v1/ssh-keys", { publicKey: "ssh-ed25519 !!!notbase64" });
    assert.equal(bad.status, 400);
    await pier.addKey();
    const keys = await pier.cliJson<{ fingerprint: string }[]>(["ssh-keys"]);
    assert.equal(keys.length, 1);
    assert.match(keys[0]!.fingerprint, /^SHA256:/);
    const dup = await pier.cli(["ssh-keys", "add", `${pier.keyFile}.pub`]);
    assert.equal(dup.code, 1);
    const rm = await pier.cli(["ssh-keys", "rm", keys[0]!.fingerprint]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.deepEqual(await pier.cliJson(["ssh-keys"]), []);
  });

  test("restart of an app never pushed says to push first; bad log times are named", async () => {
    const r = await pier.api("POST", "/v1/apps/envapp/deployments", {});
    assert.equal(r.status, 409);
    assert.equal((r.json as ErrorBody).error.code, "NOTHING_TO_DEPLOY");
    const logs = await pier.api("GET", "/v1/apps/envapp/logs?since=yesterday");
    assert.equal(logs.status, 400);
    assert.match((logs.json as ErrorBody).error.message, /since/);
    const body = await fetch(`http://127.0.0.1:${pier.apiPort}/v1/apps`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${(await import("node:fs")).readFileSync(`${pier.dataDir}/cli.json`, "utf8").match(/"token": "([^"]+)"/)?.[1]}`,
      },
      body: "{not json",
    });
    assert.equal(body.status, 400);
  });
});
