// Every answer of the API is the one its route declares (ADR 0026): requests through Hono's app.request()
// on a real store, with the route table's check on, and an answer that differs from its schema (a field
// that is not declared, a field missing) turns into a 500 naming the difference.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import type { Engine } from "../../../src/core/ports.js";
import { hashToken } from "../../../src/server/access.js";
import type { AddonService } from "../../../src/server/addons.js";
import { createApi } from "../../../src/server/api.js";
import { AppService } from "../../../src/server/apps.js";
import { DeployLogs } from "../../../src/server/deploy-logs.js";
import type { Deployer } from "../../../src/server/deployer.js";
import type { DomainService } from "../../../src/server/domains.js";
import type { Instances } from "../../../src/server/instances.js";
import { AppLimits } from "../../../src/server/limits.js";

type Answer = {
  status: number;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
};

describe("the API's answers are the route table's", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-answers-"));
  const real = new SqliteStore(join(dir, "pier.db"), SecretBox.fromKey(randomBytes(32)));
  /** Set by a test: the store then lists SSH keys with one field more (as a careless change would). */
  let leakField = false;
  const store = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === "listSshKeys" && leakField)
        return async (appId?: string) =>
          (await target.listSshKeys(appId)).map((k) => ({ ...k, privateNote: "x" }));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const limits = new AppLimits({ store, defaults: { maxFlavor: "L", maxInstances: 4, maxMemoryMiB: 8192 } });
  const instances: Partial<Instances> = {
    list: async () => [],
    routeProblem: () => null,
    refreshEdge: async () => undefined,
    prepare: async () => undefined,
    prepareBuildSlot: async () => undefined,
  };
  const apps = new AppService({
    store,
    // The engine does not answer: the app list says so with a null status.
    engine: {} as Engine,
    deployer: { isBusy: () => false } as Partial<Deployer> as Deployer,
    instances: instances as Instances,
    limits,
    logger: pino({ level: "silent" }),
    repoDir: (id) => join(dir, `${id}.git`),
    gitUrl: (id) => `git+ssh://git@localhost/${id}.git`,
    appUrl: (name) => `http://${name}.localhost`,
    stopGraceMs: 10,
    domain: "localhost",
    buildNetwork: null,
  });
  const addons: Partial<AddonService> = {
    environment: async (_id, own = {}) => ({ vars: own, linked: [], shadowed: [] }),
  };
  const deps = {
    store,
    apps,
    addons: addons as AddonService,
    domains: { list: async () => [] } as Partial<DomainService> as DomainService,
    logs: new DeployLogs(store),
    limits,
    logger: pino({ level: "silent" }),
    nodeVersions: async () => [{ version: "22.16.0", major: 22, lts: "Jod", eol: false }],
    info: {
      version: "0",
      domain: "localhost",
      httpPort: 80,
      httpsPort: 443,
      sshPort: 22,
      gitHost: "localhost",
    },
    maxBodyBytes: 2 ** 20,
  };
  const checked = createApi({ ...deps, checkAnswers: true });
  const unchecked = createApi(deps);
  const ADMIN = "admin-token-0123456789abcdef";
  const call = async (method: string, path: string, body?: unknown, api = checked): Promise<Answer> => {
    const r = await api.request(path, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : {} };
  };
  const ok = async (method: string, path: string, status: number, body?: unknown) => {
    const a = await call(method, path, body);
    assert.equal(a.status, status, `${method} ${path}: ${JSON.stringify(a.body)}`);
    return a.body;
  };

  let publicKey = "";
  let privateKey = "";
  before(async () => {
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", join(dir, "k")]);
    publicKey = readFileSync(join(dir, "k.pub"), "utf8");
    privateKey = readFileSync(join(dir, "k"), "utf8");
    await store.addApiToken({
      id: "tok-root",
      name: "root",
      hash: hashToken(ADMIN),
      appId: null,
      readOnly: false,
      bootstrap: true,
    });
  });
  after(() => {
    real.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("server facts, tokens and SSH keys answer as declared", async () => {
    assert.equal((await ok("GET", "/v1/info", 200)).gitHost, "localhost");
    assert.equal((await ok("GET", "/v1/openapi.json", 200)).openapi, "3.1.0");
    assert.equal((await ok("GET", "/v1/whoami", 200)).name, "root");
    assert.equal(typeof (await ok("POST", "/v1/tokens", 201, { name: "ci" })).token, "string");
    await ok("GET", "/v1/tokens", 200);
    await ok("DELETE", "/v1/tokens/ci", 204);
    assert.equal((await ok("POST", "/v1/ssh-keys", 201, { publicKey })).name, "ci");
    await ok("GET", "/v1/ssh-keys", 200);
    await ok("GET", "/v1/runtimes/node", 200);
  });

  test("an app, its variables, ceiling, releases, deployments and private key answer as declared", async () => {
    assert.equal(
      (await ok("POST", "/v1/apps", 201, { name: "web", type: "docker" })).url,
      "http://web.localhost",
    );
    const listed = Object.values(await ok("GET", "/v1/apps", 200))[0] as { status: unknown } | undefined;
    assert.equal(listed?.status, null);
    await ok("GET", "/v1/apps/web", 200);
    assert.deepEqual((await ok("PATCH", "/v1/apps/web/env", 200, { set: { A: "1", API_TOKEN: "s" } })).vars, {
      A: "1",
      API_TOKEN: "****",
    });
    await ok("PUT", "/v1/apps/web/env/B", 200, { value: "2" });
    await ok("GET", "/v1/apps/web/env?reveal=true", 200);
    await ok("DELETE", "/v1/apps/web/env/B", 204);
    await ok("GET", "/v1/apps/web/limits", 200);
    await ok("PATCH", "/v1/apps/web/limits", 200, { maxInstances: 2 });
    await ok("GET", "/v1/apps/web/releases", 200);
    await ok("GET", "/v1/apps/web/deployments", 200);
    await ok("GET", "/v1/apps/web/ssh-keys", 200);
    assert.equal((await ok("PUT", "/v1/apps/web/ssh-private-key", 200, { privateKey })).type, "ssh-ed25519");
    await ok("GET", "/v1/apps/web/ssh-private-key", 200);
    await ok("DELETE", "/v1/apps/web/ssh-private-key", 204);
  });

  test("an app's status, a deployment and its log answer as declared", async () => {
    const status = await ok("GET", "/v1/apps/web/status", 200);
    assert.equal(status.state, "not deployed");
    assert.deepEqual(status.domains, []);
    const web = await apps.get("web");
    await store.createDeployment({
      id: "dep-1",
      appId: web.id,
      commit: "abc",
      cause: "test",
      withoutCache: false,
    });
    assert.equal((await ok("GET", "/v1/apps/web/deployments/latest", 200)).id, "dep-1");
    const log = await checked.request("/v1/apps/web/deployments/dep-1/log", {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(log.status, 200);
    assert.equal(await log.text(), "");
  });

  test("errors answer as declared: the error shape with its real status", async () => {
    const cases: [string, string, unknown, number, string][] = [
      ["GET", "/v1/apps/nope", undefined, 404, "APP_NOT_FOUND"],
      ["POST", "/v1/apps", { name: "x" }, 400, "INVALID_INPUT"],
      ["GET", "/v1/apps/web/deployments/nope", undefined, 404, "DEPLOYMENT_NOT_FOUND"],
      ["GET", "/v1/no-such-route", undefined, 404, "NOT_FOUND"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const a = await call(method, path, body);
      assert.equal(a.status, status, `${method} ${path}: ${JSON.stringify(a.body)}`);
      assert.equal(a.body.error?.code, code);
    }
  });

  test("an answer with a field its schema does not declare fails the check: 500 naming the field", async () => {
    leakField = true;
    try {
      const a = await call("GET", "/v1/ssh-keys");
      assert.equal(a.status, 500);
      assert.equal(a.body.error?.code, "INTERNAL");
      assert.match(
        a.body.error?.message ?? "",
        /^The answer to GET \/v1\/ssh-keys \(200\) is not the route table's: undeclared fields \[0\]\.privateNote\.$/,
      );
      // Without the check, the same handler's answer goes out as it is.
      const plain = await call("GET", "/v1/ssh-keys", undefined, unchecked);
      assert.equal(plain.status, 200);
    } finally {
      leakField = false;
    }
  });

  test("an answer missing a declared field fails the check too", async () => {
    const broken = createApi({
      ...deps,
      checkAnswers: true,
      // A version without its `eol` (as a registry answer read carelessly would give).
      nodeVersions: async () => JSON.parse('[{ "version": "22.16.0", "major": 22, "lts": null }]'),
    });
    const a = await call("GET", "/v1/runtimes/node", undefined, broken);
    assert.equal(a.status, 500);
    assert.match(
      a.body.error?.message ?? "",
      /is not the route table's: versions\.0\.eol: Invalid input: expected boolean/,
    );
  });
});
