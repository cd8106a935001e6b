// Limits per tenant, set by the operator (issue 15, ADR 0022), on a real server, engine, edge and git push:
// an app token is refused XL, too many instances and too much memory, with the limit named and non-zero
// exit; it may not raise its limits; the admin raises one and the same command works. Variables past each
// cap are refused by `pier env set`. An environment near the caps (the app's and a linked app's variables,
// characters that percent-encode) starts: the engine once got it in the URL too and answered 431.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier, ROOT, type RunResult, run } from "./harness.js";

const KIB60 = 60 * 1024;
/** The harness's small web app, as a Node.js app (it echoes its environment). */
const SHOP = {
  "package.json": JSON.stringify({ name: "shop", version: "1.0.0", scripts: { start: "node server.js" } }),
  "server.js": NODE_DOCKER_APP["server.js"] ?? "",
};

describe("tenant limits: an app's ceiling and the caps on variables", { timeout: 900_000 }, () => {
  // The count and memory are set, so the test reads the same on a host with another pid_max; the largest
  // flavor follows from the memory (XS, the largest one instance of which fits in 1536 MiB).
  const pier = new Pier({ PIER_APP_MAX_INSTANCES: "2", PIER_APP_MAX_MEMORY_MIB: "1536" });
  let tenantToken = "";
  /** The CLI as the holder of the app's token (not the admin's cli.json). */
  const tenant = (args: string[], input?: string): Promise<RunResult> =>
    run([process.execPath, join(ROOT, "bin/pier.js"), ...args], {
      env: { ...pier.env, PIER_URL: `http://127.0.0.1:${pier.apiPort}`, PIER_TOKEN: tenantToken },
      cwd: pier.work,
      input,
    });
  const refused = (r: RunResult, message: RegExp, hint?: RegExp) => {
    assert.equal(r.code, 1, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.match(r.stderr, message);
    if (hint) assert.match(r.stderr, hint);
  };
  const size = async () => {
    const a = (await pier.api("GET", "/v1/apps/shop")).json as { instances: number; flavor: string };
    return `${a.instances} x ${a.flavor}`;
  };
  const serving = async () => {
    const r = await pier.get("shop");
    assert.equal(r.status, 200, r.body.slice(0, 200));
    return JSON.parse(r.body) as { env: Record<string, string> };
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    const { id } = await pier.cliJson<{ id: string }>(["create", "--type", "node", "shop"]);
    const pushed = await pier.push(await pier.repo("shop", SHOP, id));
    assert.equal(pushed.code, 0, pushed.stderr);
    const made = await pier.cli(["tokens", "create", "shop-ci", "--app", "shop"]);
    assert.equal(made.code, 0, made.stderr);
    tenantToken = made.stdout.trim();
  });
  after(() => pier.destroy());

  test("an app token is refused XL, a third instance and 2 x XS (2048 MiB): the limit, its value, who raises it", async () => {
    const hint =
      /hint: Ask for less, or have an admin raise the limit: pier limits set --max-\S+ \S+ --app shop \(an admin token only; an app's token cannot change its limits\)\./;
    refused(
      await tenant(["scale", "--flavor", "XL", "--app", "shop"]),
      /^pier: Flavor XL is larger than shop's largest allowed flavor, XS \(limit maxFlavor\)\.$/m,
      /pier limits set --max-flavor XL --app shop/,
    );
    refused(
      await tenant(["scale", "--instances", "3", "--app", "shop"]),
      /^pier: 3 instances are more than shop may run: at most 2 \(limit maxInstances\)\.$/m,
      hint,
    );
    refused(
      await tenant(["scale", "--instances", "2", "--flavor", "XS", "--app", "shop"]),
      /^pier: 2 x XS is 2048 MiB of memory, more than shop may use: at most 1536 MiB \(limit maxMemoryMiB\)\.$/m,
      /pier limits set --max-memory 2048 --app shop/,
    );
    // The API's own answer: 403 LIMIT_EXCEEDED.
    const api = await pier.api("PATCH", "/v1/apps/shop", { flavor: "XL" }, tenantToken);
    assert.equal(api.status, 403);
    assert.equal((api.json as { error: { code: string } }).error.code, "LIMIT_EXCEEDED");
    assert.equal(await size(), "1 x nano");
    await serving();
  });

  test("the app token reads its ceiling but may not raise it", async () => {
    const shown = await tenant(["limits", "--app", "shop"]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^instances\s+2\s+server default\s+1$/m);
    assert.match(shown.stdout, /^memory \(MiB\)\s+1536\s+server default\s+512$/m);
    refused(
      await tenant(["limits", "set", "--max-instances", "3", "--app", "shop"]),
      /^pier: The token 'shop-ci' is limited to app shop: PATCH \/v1\/apps\/shop\/limits needs an admin token\.$/m,
    );
  });

  test("the admin raises the ceiling, and the same commands then work", async () => {
    const set = await pier.cli(["limits", "set", "--max-instances", "3", "--app", "shop"]);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /^instances\s+3\s+set by an admin\s+1$/m);
    const view = await pier.cliJson<{
      limits: { maxInstances: number };
      set: { maxInstances: number | null };
    }>(["limits", "--app", "shop"]);
    assert.equal(view.limits.maxInstances, 3);
    assert.equal(view.set.maxInstances, 3);

    const three = await tenant(["scale", "--instances", "3", "--app", "shop"]);
    assert.equal(three.code, 0, three.stderr);
    assert.equal(await size(), "3 x nano");

    assert.equal((await pier.cli(["limits", "set", "--max-memory", "2048", "--app", "shop"])).code, 0);
    const xs = await tenant(["scale", "--instances", "2", "--flavor", "XS", "--app", "shop"]);
    assert.equal(xs.code, 0, xs.stderr);
    assert.equal(await size(), "2 x XS");
    await serving();
    // Back to small, for the rest.
    assert.equal((await tenant(["scale", "--instances", "1", "--flavor", "nano", "--app", "shop"])).code, 0);
  });

  test("`pier env set` past each cap on variables is refused with the cap named, and nothing is set", async () => {
    const hint = /hint: Nothing was changed\./;
    refused(
      await tenant(["env", "set", "HUGE", "x".repeat(64 * 1024 + 1), "--app", "shop"]),
      /^pier: The value of HUGE is too long \(65537 bytes; at most 65536, the cap on one value's size\)\.$/m,
    );

    const thousand = Array.from({ length: 1000 }, (_, i) => `FLAG_${i}=on`).join("\n");
    const imported = await tenant(["env", "import", "--app", "shop"], thousand);
    assert.equal(imported.code, 0, imported.stderr);
    refused(
      await tenant(["env", "set", "ONE_MORE", "x", "--app", "shop"]),
      /^pier: shop would have 1001 variables: at most 1000 \(the cap on the number of variables\)\.$/m,
      hint,
    );
    const rm = await tenant([
      "env",
      "rm",
      ...Array.from({ length: 1000 }, (_, i) => `FLAG_${i}`),
      "--app",
      "shop",
    ]);
    assert.equal(rm.code, 0, rm.stderr);

    for (let i = 0; i < 4; i++) {
      const r = await tenant(["env", "set", `BIG_${i}`, "/".repeat(KIB60), "--app", "shop"]);
      assert.equal(r.code, 0, r.stderr);
    }
    refused(
      await tenant(["env", "set", "BIG_4", "/".repeat(KIB60), "--app", "shop"]),
      /^pier: shop's variables would take \d+ bytes: at most 262144 \(256 KiB, the cap on the variables' total size, names and values\)\.$/m,
      hint,
    );
    const names = Object.keys(await pier.cliJson<Record<string, string>>(["env", "--app", "shop"]));
    assert.deepEqual(
      names.filter((n) => /^(HUGE|ONE_MORE|FLAG_|BIG_)/.test(n)),
      ["BIG_0", "BIG_1", "BIG_2", "BIG_3"],
    );
  });

  test("an environment near the caps, with a linked app's variables, starts and serves (no 431 from the engine)", async () => {
    // Another app publishes 4 x 60 KiB to the apps linked to it: with shop's own, about 490 KiB of '/', which
    // the engine's URL would have carried percent-encoded (three bytes each) past its 1 MiB limit.
    assert.equal((await pier.cli(["create", "--type", "docker", "feed"])).code, 0);
    for (let i = 0; i < 4; i++) {
      const r = await pier.cli(["published-config", "set", `FEED_${i}`, "/".repeat(KIB60), "--app", "feed"]);
      assert.equal(r.code, 0, r.stderr);
    }
    const linked = await pier.cli(["service", "link-app", "feed", "--app", "shop"]);
    assert.equal(linked.code, 0, linked.stderr);
    const restart = await tenant(["restart", "--app", "shop"]);
    assert.equal(restart.code, 0, restart.stderr);
    const { env } = await serving();
    assert.equal(env.BIG_3?.length, KIB60);
    assert.equal(env.FEED_3?.length, KIB60);
    assert.equal(await size(), "1 x nano");
  });
});
