// pier addon, pier service, pier published-config and pier env's linked variables, run in-process with a
// fake fetch behind ApiClient: the requests they send and what they print.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiClient } from "../../../src/cli/client.js";
import { run } from "../../../src/cli/run.js";
import { memoryIo } from "./io.js";

type Answer = { status: number; body?: unknown };

async function pier(
  argv: string[],
  answers: Record<string, Answer>,
  opts: { tty?: boolean; answer?: string } = {},
) {
  const sent: { method: string; path: string; body: unknown }[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const key = `${init?.method ?? "GET"} ${url.pathname}${url.search}`;
    sent.push({
      method: init?.method ?? "GET",
      path: `${url.pathname}${url.search}`,
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
    });
    const a = answers[key] ?? { status: 404, body: { error: { code: "NOT_FOUND", message: `no ${key}` } } };
    return new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status });
  }) as typeof fetch;
  const io = memoryIo(opts);
  const code = await run(argv, {
    io,
    makeClient: () => new ApiClient({ url: "http://pier.test", token: "t", source: "test" }, fakeFetch),
    version: "0.0.0",
  });
  return { code, stdout: io.stdout, stderr: io.stderr, sent };
}

const ADDON = {
  id: "adn-1",
  name: "cache",
  kind: "kv",
  flavor: "nano",
  apps: ["web"],
  createdAt: "2026-11-22T10:00:00Z",
};
const LINKED = {
  vars: { OWN: "1" },
  linked: [
    { name: "KV_HOST", value: "pier-addon-adn-1", source: { kind: "addon", name: "cache" } },
    { name: "KV_TOKEN", value: "tok3n-value", source: { kind: "addon", name: "cache" } },
    {
      name: "REDIS_URL",
      value: "redis://:tok3n-value@pier-addon-adn-1:6378",
      source: { kind: "addon", name: "cache" },
    },
    { name: "API_URL", value: "http://api", source: { kind: "app", name: "api" } },
  ],
};

describe("add-on commands", () => {
  test("env: the links' variables under their source, secrets masked; --reveal shows them; json is the app's own", async () => {
    const answers = {
      "GET /v1/apps/web/env": { status: 200, body: LINKED },
      "GET /v1/apps/web/env?reveal=true": { status: 200, body: LINKED },
    };
    const human = await pier(["env", "-a", "web"], answers);
    assert.deepEqual(
      human.sent.map((x) => x.path),
      ["/v1/apps/web/env"],
      "values are asked for masked unless --reveal",
    );
    assert.equal(human.code, 0, human.stderr);
    assert.equal(
      human.stdout,
      "OWN=1\n# from add-on cache\nKV_HOST=pier-addon-adn-1\nKV_TOKEN=****\nREDIS_URL=redis://:****@pier-addon-adn-1:6378\n# from app api\nAPI_URL=http://api\n",
    );
    assert.match(human.stderr, /--reveal/);
    const revealed = await pier(["env", "-a", "web", "--reveal"], answers);
    assert.deepEqual(
      revealed.sent.map((x) => x.path),
      ["/v1/apps/web/env?reveal=true"],
    );
    assert.match(revealed.stdout, /KV_TOKEN=tok3n-value\n/);
    const asJson = await pier(["env", "-a", "web", "--format", "json"], answers);
    assert.deepEqual(JSON.parse(asJson.stdout), { OWN: "1" });
    const shell = await pier(["env", "-a", "web", "--format", "shell"], answers);
    assert.ok(!shell.stdout.includes("tok3n-value"));
  });

  test("env: the app's own secrets come masked from the server, are not exported as such, and a read-only token's --reveal fails with the server's 403", async () => {
    const masked = { vars: { DB_PASSWORD: "****", DB_URL: "postgres://u:****@db/x", PLAIN: "1" } };
    const human = await pier(["env", "-a", "web"], { "GET /v1/apps/web/env": { status: 200, body: masked } });
    assert.equal(human.stdout, "DB_PASSWORD=****\nDB_URL=postgres://u:****@db/x\nPLAIN=1\n");
    assert.match(human.stderr, /Secret values are masked; --reveal shows them/);
    const shell = await pier(["env", "-a", "web", "--format", "shell"], {
      "GET /v1/apps/web/env": { status: 200, body: masked },
    });
    assert.equal(
      shell.stdout,
      "export PLAIN='1'\n# DB_PASSWORD (masked: --reveal exports it)\n# DB_URL (masked: --reveal exports it)\n",
    );
    const forbidden = {
      status: 403,
      body: {
        error: {
          code: "FORBIDDEN",
          message: "This token is read-only: it cannot reveal secret values (they are shown masked).",
        },
      },
    };
    const r = await pier(["env", "-a", "web", "--reveal"], { "GET /v1/apps/web/env?reveal=true": forbidden });
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /read-only: it cannot reveal secret values/);
  });

  test("addon create sends kind, name, flavor and the apps to link", async () => {
    const r = await pier(
      ["addon", "create", "kv", "cache", "--flavor", "pico", "--link", "web", "--link", "api"],
      {
        "POST /v1/addons": { status: 201, body: ADDON },
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { kind: "kv", name: "cache", flavor: "pico", link: ["web", "api"] });
    assert.match(r.stdout, /Created kv add-on cache \(adn-1\)/);
  });

  test("addon create --node: sent; the output names the node, and says when Pier chose the manager", async () => {
    const onNode2 = { status: 201, body: { ...ADDON, node: "node2" } };
    const r = await pier(["addon", "create", "kv", "cache", "--node", "node2"], {
      "POST /v1/addons": onNode2,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.sent[0]?.body, { kind: "kv", name: "cache", node: "node2" });
    assert.match(r.stdout, /Created kv add-on cache \(adn-1\), flavor \S+, on node node2\.\n/);
    assert.doesNotMatch(r.stderr, /manager/);
    const byDefault = { status: 201, body: { ...ADDON, node: "node1" } };
    const d = await pier(["addon", "create", "kv", "cache"], { "POST /v1/addons": byDefault });
    assert.match(
      d.stderr,
      /It runs on node1, the swarm's manager \(choose another node with --node NODE\)\./,
    );
    const list = await pier(["addon", "list"], {
      "GET /v1/addons": { status: 200, body: [{ ...ADDON, node: "node2" }] },
    });
    assert.match(list.stdout, /^NAME\s+KIND\s+FLAVOR\s+NODE\s+/m);
    assert.match(list.stdout, /^cache\s+kv\s+\S+\s+node2\s+/m);
  });

  test("addon status says, per linked app, whether it reaches the add-on; json has the joins", async () => {
    const status = {
      ...ADDON,
      apps: ["api", "web"],
      state: "joining",
      host: "pier-addon-adn-1",
      port: 6378,
      networks: ["pier-addon-adn-1-net", "pier-app-1"],
      startedAt: "2026-11-22T10:00:01Z",
      backups: 2,
      joins: [
        { app: "api", state: "pending", networks: [] },
        { app: "web", state: "joining", networks: ["pier-app-1"] },
      ],
    };
    const answers = { "GET /v1/addons/cache": { status: 200, body: status } };
    const r = await pier(["addon", "status", "cache"], answers);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^cache \(kv, adn-1\): joining$/m);
    assert.match(
      r.stdout,
      /linked to: api \(reaches it after its next deploy or restart\), web \(joining its network now\)/,
    );
    const j = await pier(["addon", "status", "cache", "--format", "json"], answers);
    assert.deepEqual(JSON.parse(j.stdout).joins, status.joins);
  });

  test("addon delete asks (or --yes); --force is passed on", async () => {
    const answers = {
      "DELETE /v1/addons/cache?force=true": { status: 204 },
      "DELETE /v1/addons/cache": { status: 204 },
    };
    const refused = await pier(["addon", "delete", "cache"], answers);
    assert.notEqual(refused.code, 0);
    assert.equal(refused.sent.length, 0);
    const wrong = await pier(["addon", "delete", "cache"], answers, { tty: true, answer: "other" });
    assert.notEqual(wrong.code, 0);
    assert.equal(wrong.sent.length, 0);
    const asked = await pier(["addon", "delete", "cache"], answers, { tty: true, answer: "cache" });
    assert.equal(asked.code, 0, asked.stderr);
    const forced = await pier(["addon", "delete", "cache", "--yes", "--force"], answers);
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(
      forced.sent.map((s) => `${s.method} ${s.path}`),
      ["DELETE /v1/addons/cache?force=true"],
    );
  });

  test("addon env masks unless --reveal; backup restore asks, or --yes", async () => {
    const env = await pier(["addon", "env", "cache"], {
      "GET /v1/addons/cache/env": {
        status: 200,
        body: { addon: "cache", kind: "kv", vars: { KV_HOST: "h", KV_TOKEN: "tok3n-value" } },
      },
    });
    assert.equal(env.stdout, "KV_HOST=h\nKV_TOKEN=****\n");
    const revealed = await pier(["addon", "env", "cache", "--reveal"], {
      "GET /v1/addons/cache/env?reveal=true": {
        status: 200,
        body: { addon: "cache", kind: "kv", vars: { KV_HOST: "h", KV_TOKEN: "tok3n-value" } },
      },
    });
    assert.equal(revealed.stdout, "KV_HOST=h\nKV_TOKEN=tok3n-value\n");
    const backup = {
      id: "bak-1",
      addonId: "addon-1",
      file: "f.rdb",
      bytes: 10,
      automatic: false,
      createdAt: "2026-11-22T10:00:00Z",
    };
    const answers = { "POST /v1/addons/cache/backups/bak-1/restore": { status: 200, body: backup } };
    assert.notEqual((await pier(["addon", "backup", "restore", "cache", "bak-1"], answers)).code, 0);
    const r = await pier(["addon", "backup", "restore", "cache", "bak-1", "--yes"], answers);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Restored cache from backup bak-1/);
    const from = await pier(["addon", "backup", "restore", "cache2", "bak-1", "--from", "cache", "--yes"], {
      "POST /v1/addons/cache2/backups/bak-1/restore?from=cache": { status: 200, body: backup },
    });
    assert.equal(from.code, 0, from.stderr);
    assert.match(from.stdout, /Restored cache2 from backup bak-1 of cache/);
  });

  test("service link-addon / link-app / unlink, and published-config set", async () => {
    const links = { addons: [{ id: "adn-1", name: "cache", kind: "kv" }], apps: [] };
    const a = await pier(["service", "link-addon", "cache", "-a", "web"], {
      "POST /v1/apps/web/links/addons": { status: 201, body: links },
    });
    assert.deepEqual(a.sent[0]?.body, { addon: "cache" });
    assert.match(a.stderr, /next deploy or `pier restart`/);
    assert.doesNotMatch(a.stderr, /run on node/);
    const pinned = await pier(["service", "link-addon", "uploads", "-a", "web"], {
      "POST /v1/apps/web/links/addons": {
        status: 201,
        body: { addons: [{ id: "adn-2", name: "uploads", kind: "fs", node: "node2" }], apps: [] },
      },
    });
    assert.match(
      pinned.stderr,
      /Instances of web run on node node2, where bucket uploads lives \(once CC_FS_BUCKET names it\)\./,
    );
    const b = await pier(["service", "link-app", "api", "-a", "web"], {
      "POST /v1/apps/web/links/apps": { status: 201, body: links },
    });
    assert.deepEqual(b.sent[0]?.body, { app: "api" });
    const c = await pier(["service", "unlink-addon", "cache", "-a", "web"], {
      "DELETE /v1/apps/web/links/addons/cache": { status: 204 },
    });
    assert.equal(c.code, 0, c.stderr);
    const list = await pier(["service", "-a", "web"], {
      "GET /v1/apps/web/links": { status: 200, body: links },
    });
    assert.match(list.stdout, /add-on kv +cache +adn-1/);
    const p = await pier(["published-config", "set", "API_URL", "http://api", "-a", "api"], {
      "PUT /v1/apps/api/published-config/API_URL": {
        status: 200,
        body: { name: "API_URL", value: "http://api" },
      },
    });
    assert.deepEqual(p.sent[0]?.body, { value: "http://api" });
    const answers = {
      "GET /v1/apps/api/published-config": {
        status: 200,
        body: { vars: { API_URL: "http://api", API_TOKEN: "s3cr3t" } },
      },
    };
    const masked = await pier(["published-config", "-a", "api"], answers);
    assert.equal(masked.stdout, "API_TOKEN=****\nAPI_URL=http://api\n");
    const shown = await pier(["published-config", "-a", "api", "--reveal"], {
      "GET /v1/apps/api/published-config?reveal=true": answers["GET /v1/apps/api/published-config"],
    });
    assert.match(shown.stdout, /API_TOKEN=s3cr3t/);
  });
});
