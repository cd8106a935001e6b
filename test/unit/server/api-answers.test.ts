// Every answer of the API is the one its route declares (ADR 0026): requests through Hono's app.request()
// over the real services and the fakes (api-setup.ts), with the route table's check on. An answer that
// differs from its schema (a field that is not declared, a field missing) turns into a 500 naming the
// difference, and an event that differs ends its stream with an `error` event. Every route of the table is
// requested here with a success answer: the last test fails for a route that is not.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROUTE_KEYS } from "../../../src/core/api/routes.js";
import { LABEL, ROLE } from "../../../src/core/labels.js";
import { TERMINAL_STATES } from "../../../src/core/model.js";
import { matchKey } from "../../../src/core/permissions.js";
import { parseSse, type SseEvent } from "../../../src/core/sse.js";
import { createApi } from "../../../src/server/api.js";
import { LEAF, LEAF_KEY } from "../core/tls-fixtures.js";
import { type ApiAnswer, type ApiOverFakes, apiOverFakes } from "./api-setup.js";

const ADMIN = "admin-token-0123456789abcdef";

describe("the API's answers are the route table's", () => {
  let s: ApiOverFakes;
  /** The routes answered with a success status (and so checked). */
  const answered = new Set<string>();
  const record = (method: string, path: string) => {
    const { route } = matchKey(ROUTE_KEYS, method, path.split("?")[0] ?? "");
    if (route) answered.add(route);
  };
  const call = (method: string, path: string, body?: unknown): Promise<ApiAnswer> =>
    s.call(ADMIN, method, path, body);
  const ok = async (method: string, path: string, status: number, body?: unknown) => {
    const a = await call(method, path, body);
    assert.equal(a.status, status, `${method} ${path}: ${JSON.stringify(a.body)}`);
    record(method, path);
    return a.body;
  };
  /** The events of a stream (`take`: that many, then the reader leaves); each checked by the API. */
  const events = async (path: string, take = Number.POSITIVE_INFINITY): Promise<SseEvent[]> => {
    const r = await s.api.request(path, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 200, path);
    assert.match(r.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.ok(r.body);
    const seen: SseEvent[] = [];
    for await (const ev of parseSse(r.body)) {
      seen.push(ev);
      if (seen.length >= take) break;
    }
    if (!seen.some((e) => e.event === "error")) record("GET", path);
    return seen;
  };
  const settled = async (id: string) => {
    for (let i = 0; i < 500; i++) {
      const d = await s.store.getDeployment(id);
      if (d && TERMINAL_STATES.includes(d.state)) return d;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`deployment ${id} did not end`);
  };
  /** A request that queues a deployment, which then succeeds; its id. */
  const deploy = async (method: string, path: string, status: number, body?: unknown) => {
    const d = await ok(method, path, status, body);
    const id = String((d.deployment as { id?: string } | null | undefined)?.id ?? d.id);
    assert.equal((await settled(id)).state, "succeeded");
    return id;
  };

  let publicKey = "";
  let grantedKey = "";
  let privateKey = "";
  before(async () => {
    s = await apiOverFakes();
    const keygen = (name: string) =>
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", join(s.dir, name)]);
    keygen("ci");
    keygen("laptop");
    publicKey = readFileSync(join(s.dir, "ci.pub"), "utf8");
    grantedKey = readFileSync(join(s.dir, "laptop.pub"), "utf8");
    privateKey = readFileSync(join(s.dir, "ci"), "utf8");
    await s.token("root", ADMIN);
  });
  after(() => s.close());

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

  test("an app, its variables, ceiling, keys and private key answer as declared", async () => {
    assert.equal(
      (await ok("POST", "/v1/apps", 201, { name: "web", type: "docker" })).url,
      "http://web.localhost",
    );
    await ok("GET", "/v1/apps", 200);
    await ok("GET", "/v1/apps/web", 200);
    assert.deepEqual((await ok("PATCH", "/v1/apps/web/env", 200, { set: { A: "1", API_TOKEN: "s" } })).vars, {
      A: "1",
      API_TOKEN: "****",
    });
    await ok("PUT", "/v1/apps/web/env/B", 200, { value: "2" });
    await ok("GET", "/v1/apps/web/env?reveal=true", 200);
    await ok("DELETE", "/v1/apps/web/env/B", 204);
    await ok("GET", "/v1/apps/web/limits", 200);
    await ok("PATCH", "/v1/apps/web/limits", 200, { maxInstances: 4 });
    assert.equal((await ok("POST", "/v1/apps/web/ssh-keys", 201, { publicKey: grantedKey })).name, "laptop");
    await ok("GET", "/v1/apps/web/ssh-keys", 200);
    await ok("DELETE", "/v1/apps/web/ssh-keys/laptop", 204);
    await ok("DELETE", "/v1/ssh-keys/ci", 204);
    assert.equal((await ok("PUT", "/v1/apps/web/ssh-private-key", 200, { privateKey })).type, "ssh-ed25519");
    await ok("GET", "/v1/apps/web/ssh-private-key", 200);
    await ok("DELETE", "/v1/apps/web/ssh-private-key", 204);
  });

  test("deploys, their logs as text and as events, rollback, cancel, scale and stop answer as declared", async () => {
    assert.equal((await ok("GET", "/v1/apps/web/status", 200)).state, "not deployed");
    const first = await deploy("POST", "/v1/apps/web/deployments", 202, {});
    await deploy("POST", "/v1/apps/web/deployments", 202, { withoutCache: true });
    const status = await ok("GET", "/v1/apps/web/status", 200);
    assert.equal(status.state, "running");
    assert.equal((status.release as { task?: unknown }).task, false, "the serving release is no task");
    assert.equal((await ok("GET", "/v1/apps/web/releases", 200)).length, 2);
    await ok("GET", "/v1/apps/web/deployments", 200);
    await ok("GET", "/v1/apps/web/deployments/latest", 200);
    assert.match(String((await ok("GET", `/v1/apps/web/deployments/${first}/log`, 200)).text), /\n$/);
    const log = await events(`/v1/apps/web/deployments/${first}/log?follow=true`);
    assert.ok(log.length > 1, "log lines, then the end");
    assert.deepEqual([...new Set(log.map((e) => e.event))], ["message", "end"]);
    assert.equal(JSON.parse(log.at(-1)?.data ?? "{}").state, "succeeded");

    await deploy("POST", "/v1/apps/web/releases/1/rollback", 202);
    const serving = s.engine.instances.find((i) => i.running && i.labels[LABEL.role] === ROLE.instance);
    assert.ok(serving, "an instance runs");
    s.engine.print(serving.id, "listening on 8080");
    assert.ok((await ok("GET", "/v1/apps/web/logs?tail=10", 200)).lines);
    const lines = await events("/v1/apps/web/logs?follow=true&tail=10", 1);
    assert.equal(JSON.parse(lines[0]?.data ?? "{}").line, "listening on 8080");

    let release: () => void = () => undefined;
    s.hold.builds = new Promise<void>((r) => {
      release = r;
    });
    try {
      await ok("POST", "/v1/apps/web/deployments", 202, {});
      assert.equal((await ok("POST", "/v1/apps/web/deployments/current/cancel", 200)).state, "cancelled");
    } finally {
      s.hold.builds = null;
      release();
    }
    await deploy("PATCH", "/v1/apps/web", 200, { instances: 2 });
    assert.equal((await ok("POST", "/v1/apps/web/stop", 200)).stopped, true);
  });

  test("add-ons, their backups, links and published variables answer as declared", async () => {
    await ok("POST", "/v1/apps", 201, { name: "api", type: "docker" });
    assert.deepEqual(
      (await ok("POST", "/v1/addons", 201, { kind: "kv", name: "cache", link: ["web"] })).apps,
      ["web"],
    );
    await ok("POST", "/v1/addons", 201, { kind: "postgresql", name: "db" });
    await ok("GET", "/v1/addons", 200);
    assert.equal((await ok("GET", "/v1/addons/cache", 200)).name, "cache");
    await ok("GET", "/v1/addons/cache/env", 200);
    const backup = await ok("POST", "/v1/addons/cache/backups", 201);
    await ok("GET", "/v1/addons/cache/backups", 200);
    await ok("POST", `/v1/addons/cache/backups/${backup.id}/restore`, 200);
    await ok("POST", "/v1/apps/web/links/addons", 201, { addon: "db" });
    await ok("POST", "/v1/apps/web/links/apps", 201, { app: "api" });
    const links = await ok("GET", "/v1/apps/web/links", 200);
    assert.deepEqual(
      [(links.addons as { name: string }[]).map((a) => a.name).sort(), links.apps],
      [["cache", "db"], [{ id: (await s.apps.get("api")).id, name: "api" }]],
    );
    await ok("PUT", "/v1/apps/api/published-config/API_URL", 200, { value: "http://api" });
    await ok("GET", "/v1/apps/api/published-config", 200);
    await ok("DELETE", "/v1/apps/api/published-config/API_URL", 204);
    await ok("DELETE", "/v1/apps/web/links/apps/api", 204);
    await ok("DELETE", "/v1/apps/web/links/addons/db", 204);
    await ok("DELETE", "/v1/addons/db", 204);
    await ok("DELETE", "/v1/addons/cache?force=true", 204);
  });

  test("custom domains and certificates answer as declared", async () => {
    assert.equal((await ok("POST", "/v1/apps/web/domains", 201, { name: "shop.example.test" })).app, "web");
    await ok("GET", "/v1/apps/web/domains", 200);
    assert.equal((await ok("POST", "/v1/apps/web/domains/shop.example.test/renew", 200)).state, "issued");
    const set = { cert: LEAF, key: LEAF_KEY };
    assert.equal(
      (await ok("PUT", "/v1/apps/web/domains/shop.example.test/certificate", 200, set)).source,
      "user",
    );
    await ok("DELETE", "/v1/apps/web/domains/shop.example.test", 204);
    await ok("DELETE", "/v1/apps/api", 204);
  });

  test("the swarm's nodes answer as declared", async () => {
    assert.equal(((await ok("GET", "/v1/nodes", 200)) as unknown as unknown[]).length, 3);
    const join = await ok("POST", "/v1/nodes/join-command", 200, {});
    assert.equal(join.role, "worker");
    assert.equal((await ok("POST", "/v1/nodes/node2/drain", 200)).availability, "drain");
    assert.equal((await ok("POST", "/v1/nodes/node2/activate", 200)).availability, "active");
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

  test("an answer with a field its schema does not declare fails the check: 500 naming the field", async (t) => {
    const listSshKeys = s.store.listSshKeys.bind(s.store);
    t.mock.method(s.store, "listSshKeys", async (appId?: string) =>
      (await listSshKeys(appId)).map((k) => ({ ...k, privateNote: "x" })),
    );
    await s.call(ADMIN, "POST", "/v1/ssh-keys", { publicKey });
    const a = await call("GET", "/v1/ssh-keys");
    assert.equal(a.status, 500);
    assert.equal(a.body.error?.code, "INTERNAL");
    assert.match(
      a.body.error?.message ?? "",
      /^The answer to GET \/v1\/ssh-keys \(200\) is not the route table's: undeclared fields \[0\]\.privateNote\.$/,
    );
    // Without the check, the same handler's answer goes out as it is.
    const plain = await createApi({ ...s.deps, checkAnswers: false }).request("/v1/ssh-keys", {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(plain.status, 200);
  });

  test("an answer missing a declared field fails the check too", async () => {
    const broken = createApi({
      ...s.deps,
      // A version without its `eol` (as a registry answer read carelessly would give).
      nodeVersions: async () => JSON.parse('[{ "version": "22.16.0", "major": 22, "lts": null }]'),
    });
    const a = await broken.request("/v1/runtimes/node", { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(a.status, 500);
    assert.match(
      (await a.json()).error.message,
      /is not the route table's: versions\.0\.eol: Invalid input: expected boolean/,
    );
  });

  test("an event its schema does not declare ends the stream with an error event naming it", async (t) => {
    const [latest] = await s.store.listDeployments((await s.apps.get("web")).id, 1);
    assert.ok(latest);
    const getDeployment = s.store.getDeployment.bind(s.store);
    // The end event's deployment with one field more (as a careless change would send).
    let reads = 0;
    t.mock.method(s.store, "getDeployment", async (id: string) => {
      const d = await getDeployment(id);
      return d && reads++ > 0 ? { ...d, token: "x" } : d;
    });
    const seen = await events(`/v1/apps/web/deployments/${latest.id}/log?follow=true`);
    const last = seen.at(-1);
    assert.equal(last?.event, "error");
    assert.match(
      JSON.parse(last?.data ?? "{}").error.message,
      /^An event of GET \/v1\/apps\/web\/deployments\/\S+\/log is not the route table's: undeclared fields token\.$/,
    );
    assert.ok(!seen.some((e) => e.event === "end"), "the event that differs is not passed on");
  });

  test("every route of the table was answered with success, and checked", () => {
    assert.deepEqual(
      ROUTE_KEYS.filter((k) => !answered.has(k)),
      [],
      "routes no test here requests: add a request for each (ADR 0026)",
    );
  });
});
