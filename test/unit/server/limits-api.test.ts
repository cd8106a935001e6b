// Issue 15 through the API (Hono's app.request over the fakes, api-setup.ts): an app token cannot pass its app's ceiling
// nor change it, an admin token raises it, and variables past a cap are refused with nothing changed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ApiAnswer as Answer, type ApiOverFakes, apiOverFakes } from "./api-setup.js";

describe("an app's ceiling and the caps on variables, through the API", () => {
  let s: ApiOverFakes;
  const published = async () => {
    const web = await s.store.findApp("web");
    return Object.keys(web ? await s.store.addons().getPublished(web.id) : {});
  };
  const ADMIN = "admin-token-0123456789abcdef";
  const TENANT = "tenant-token-0123456789abcdef";
  const call = (token: string, method: string, path: string, body?: unknown): Promise<Answer> =>
    s.call(token, method, path, body);
  const refused = (a: Answer, status: number, code: string, message: RegExp, hint?: RegExp) => {
    assert.equal(a.status, status, JSON.stringify(a.body));
    assert.equal(a.body.error?.code, code);
    assert.match(a.body.error?.message ?? "", message);
    if (hint) assert.match(a.body.error?.hint ?? "", hint);
  };

  before(async () => {
    // The defaults of the hostile probe's host: 23 GiB of memory, pid_max 32768.
    s = await apiOverFakes({
      defaults: { maxFlavor: "L", maxInstances: 2, maxMemoryMiB: 12052 },
      maxBodyBytes: 4 * 2 ** 20,
    });
    const app = await s.apps.create({ name: "web", type: "docker" });
    await s.token("root", ADMIN);
    await s.token("web-ci", TENANT, { appId: app.id });
  });
  after(() => s.close());

  const size = async () => {
    const a = (await call(ADMIN, "GET", "/v1/apps/web")).body;
    return `${a.instances} x ${a.flavor}`;
  };

  test("an app token is refused XL, too many instances, and too much memory: 403 LIMIT_EXCEEDED, nothing changed", async () => {
    const hint =
      /have an admin raise the limit: pier limits set --max-\w+ \S+ --app web \(an admin token only/;
    const cases: [unknown, RegExp][] = [
      [{ flavor: "XL" }, /^Flavor XL is larger than web's largest allowed flavor, L \(limit maxFlavor\)\.$/],
      [{ buildFlavor: "XL" }, /^Build flavor XL is larger than web's largest allowed flavor, L/],
      [{ instances: 20 }, /^20 instances are more than web may run: at most 2 \(limit maxInstances\)\.$/],
      [
        { instances: 2, flavor: "L" },
        /^2 x L is 16384 MiB of memory, more than web may use: at most 12052 MiB \(limit maxMemoryMiB\)\.$/,
      ],
    ];
    for (const [body, message] of cases) {
      refused(await call(TENANT, "PATCH", "/v1/apps/web", body), 403, "LIMIT_EXCEEDED", message, hint);
      assert.equal(await size(), "1 x nano");
    }
  });

  test("an app token reads its ceiling, and may not change it (403 FORBIDDEN)", async () => {
    const view = await call(TENANT, "GET", "/v1/apps/web/limits");
    assert.equal(view.status, 200);
    assert.deepEqual(view.body.limits, { maxFlavor: "L", maxInstances: 2, maxMemoryMiB: 12052 });
    assert.deepEqual(view.body.set, { maxFlavor: null, maxInstances: null, maxMemoryMiB: null });
    assert.deepEqual(view.body.used, { flavor: "nano", instances: 1, memoryMiB: 512 });
    refused(
      await call(TENANT, "PATCH", "/v1/apps/web/limits", { maxInstances: 20 }),
      403,
      "FORBIDDEN",
      /The token 'web-ci' is limited to app web: PATCH \/v1\/apps\/web\/limits needs an admin token\./,
    );
    assert.equal(
      (await call(TENANT, "GET", "/v1/apps/web/limits")).body.limits?.toString(),
      view.body.limits?.toString(),
    );
  });

  test("an admin raises the ceiling; the same request then passes; null puts a limit back to the default", async () => {
    const raised = await call(ADMIN, "PATCH", "/v1/apps/web/limits", { maxInstances: 3 });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.deepEqual(raised.body.limits, { maxFlavor: "L", maxInstances: 3, maxMemoryMiB: 12052 });
    assert.deepEqual(raised.body.set, { maxFlavor: null, maxInstances: 3, maxMemoryMiB: null });
    const scaled = await call(TENANT, "PATCH", "/v1/apps/web", { instances: 3 });
    assert.equal(scaled.status, 200, JSON.stringify(scaled.body));
    assert.equal(await size(), "3 x nano");
    // The memory limit still holds: 3 x L = 24576 MiB.
    refused(
      await call(TENANT, "PATCH", "/v1/apps/web", { flavor: "L" }),
      403,
      "LIMIT_EXCEEDED",
      /limit maxMemoryMiB/,
    );
    const back = await call(ADMIN, "PATCH", "/v1/apps/web/limits", { maxInstances: null });
    assert.deepEqual(back.body.limits, { maxFlavor: "L", maxInstances: 2, maxMemoryMiB: 12052 });
    await call(ADMIN, "PATCH", "/v1/apps/web", { instances: 1 });
  });

  test("the ceiling binds admin tokens too, and apps created with the defaults", async () => {
    refused(await call(ADMIN, "PATCH", "/v1/apps/web", { instances: 5 }), 403, "LIMIT_EXCEEDED", /at most 2/);
    refused(
      await call(ADMIN, "POST", "/v1/apps", { name: "big", type: "docker", flavor: "XL" }),
      403,
      "LIMIT_EXCEEDED",
      /^Flavor XL is larger than big's largest allowed flavor, L/,
      /^Create it within the server's defaults \(PIER_APP_MAX_\*\), then an admin raises its limit \(pier limits set --max-flavor XL --app big\) and scales it\.$/,
    );
    assert.equal((await call(ADMIN, "GET", "/v1/apps/big")).status, 404);
  });

  test("a bad ceiling is refused with the field and the rule", async () => {
    const cases: [unknown, RegExp][] = [
      [{ maxInstances: 0 }, /^maxInstances: must be at least 1$/],
      [{ maxInstances: 21 }, /^maxInstances: must be at most 20$/],
      [{ maxFlavor: "huge" }, /^maxFlavor: must be one of pico, nano, XS, S, M, L, XL$/],
      [{ maxMemoryMiB: 100 }, /^maxMemoryMiB: must be at least 256/],
      [{ instances: 3 }, /Unrecognized key/i],
    ];
    for (const [body, message] of cases)
      refused(await call(ADMIN, "PATCH", "/v1/apps/web/limits", body), 400, "INVALID_INPUT", message);
  });

  describe("variables", () => {
    const many = (n: number, size = 1) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`V${i}`, "x".repeat(size)]));
    const vars = async () =>
      Object.keys(((await call(TENANT, "GET", "/v1/apps/web/env")).body.vars ?? {}) as object);

    test("more than 1000 variables: 422 ENV_LIMIT_EXCEEDED naming the cap, nothing set", async () => {
      refused(
        await call(TENANT, "PATCH", "/v1/apps/web/env", { set: many(1001) }),
        422,
        "ENV_LIMIT_EXCEEDED",
        /^web would have 1001 variables: at most 1000 \(the cap on the number of variables\)\.$/,
        /^Nothing was changed\./,
      );
      assert.deepEqual(await vars(), []);
    });

    test("past 256 KiB in all, by one variable at a time: the one that passes is refused", async () => {
      for (let i = 0; i < 4; i++) {
        const r = await call(TENANT, "PUT", `/v1/apps/web/env/BIG_${i}`, { value: "x".repeat(60 * 1024) });
        assert.equal(r.status, 200);
      }
      refused(
        await call(TENANT, "PUT", "/v1/apps/web/env/BIG_4", { value: "x".repeat(60 * 1024) }),
        422,
        "ENV_LIMIT_EXCEEDED",
        /^web's variables would take 307235 bytes: at most 262144 \(256 KiB, the cap on the variables' total size, names and values\)\.$/,
      );
      assert.deepEqual(await vars(), ["BIG_0", "BIG_1", "BIG_2", "BIG_3"]);
      // Replacing one by a smaller value, or removing some while setting others, fits.
      const swap = await call(TENANT, "PATCH", "/v1/apps/web/env", {
        set: { BIG_4: "x".repeat(60 * 1024) },
        unset: ["BIG_0"],
      });
      assert.equal(swap.status, 200, JSON.stringify(swap.body));
      await call(TENANT, "PATCH", "/v1/apps/web/env", { unset: ["BIG_1", "BIG_2", "BIG_3", "BIG_4"] });
    });

    test("what an app publishes to linked apps has the same caps", async () => {
      for (let i = 0; i < 4; i++) {
        const r = await call(TENANT, "PUT", `/v1/apps/web/published-config/PUB_${i}`, {
          value: "x".repeat(60 * 1024),
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      refused(
        await call(TENANT, "PUT", "/v1/apps/web/published-config/PUB_4", { value: "x".repeat(60 * 1024) }),
        422,
        "ENV_LIMIT_EXCEEDED",
        /^web's published variables would take 307235 bytes: at most 262144 \(256 KiB/,
      );
      assert.deepEqual(await published(), ["PUB_0", "PUB_1", "PUB_2", "PUB_3"]);
    });

    test("one value over 64 KiB: 400 INVALID_VARIABLE naming the cap", async () => {
      refused(
        await call(TENANT, "PUT", "/v1/apps/web/env/HUGE", { value: "x".repeat(64 * 1024 + 1) }),
        400,
        "INVALID_VARIABLE",
        /^The value of HUGE is too long \(65537 bytes; at most 65536, the cap on one value's size\)\.$/,
      );
    });
  });
});
