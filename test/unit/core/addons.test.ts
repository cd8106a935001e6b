// The pure rules of add-ons and links (src/core/addons.ts): the variables of each kind (the exact names of
// platform-extensions.md), how an app's environment is put together, published names, backup retention.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type AddonBackup,
  addonVariables,
  backupDue,
  expiredBackups,
  linkedEnvironment,
  linkedLines,
  publishedVariableProblem,
} from "../../../src/core/addons.js";
import { isSecretVariable, secretMasker } from "../../../src/core/env-secrets.js";

describe("addonVariables", () => {
  const kv = addonVariables("kv", "pier-addon-adn-1", { user: "", password: "tok/en+=", database: "" });
  it("kv: KV_* and the Redis aliases, port 6378, the token as password (percent-encoded in URLs)", () => {
    assert.deepEqual(kv, {
      KV_HOST: "pier-addon-adn-1",
      KV_PORT: "6378",
      KV_TOKEN: "tok/en+=",
      REDIS_HOST: "pier-addon-adn-1",
      REDIS_PORT: "6378",
      REDIS_PASSWORD: "tok/en+=",
      REDIS_URL: "redis://:tok%2Fen%2B%3D@pier-addon-adn-1:6378",
      REDIS_CLI_URL: "redis://:tok%2Fen%2B%3D@pier-addon-adn-1:6378/0",
      REDISCLI_AUTH: "tok/en+=",
    });
  });
  const pg = addonVariables("postgresql", "h", { user: "u_db", password: "p@ss", database: "db" });
  it("postgresql: POSTGRESQL_ADDON_* and DATABASE_URL", () => {
    assert.deepEqual(pg, {
      POSTGRESQL_ADDON_HOST: "h",
      POSTGRESQL_ADDON_PORT: "5432",
      POSTGRESQL_ADDON_DB: "db",
      POSTGRESQL_ADDON_USER: "u_db",
      POSTGRESQL_ADDON_PASSWORD: "p@ss",
      POSTGRESQL_ADDON_URI: "postgresql://u_db:p%40ss@h:5432/db",
      DATABASE_URL: "postgresql://u_db:p%40ss@h:5432/db",
    });
  });
  const my = addonVariables("mysql", "pier-addon-adn-2", {
    user: "u_my_db",
    password: "p@ss",
    database: "my_db",
  });
  it("mysql: MYSQL_ADDON_* (port 3306) and DATABASE_URL as mysql://", () => {
    assert.deepEqual(my, {
      MYSQL_ADDON_HOST: "pier-addon-adn-2",
      MYSQL_ADDON_PORT: "3306",
      MYSQL_ADDON_DB: "my_db",
      MYSQL_ADDON_USER: "u_my_db",
      MYSQL_ADDON_PASSWORD: "p@ss",
      MYSQL_ADDON_URI: "mysql://u_my_db:p%40ss@pier-addon-adn-2:3306/my_db",
      DATABASE_URL: "mysql://u_my_db:p%40ss@pier-addon-adn-2:3306/my_db",
    });
  });
  const cases: [string, { user: string; password: string; database: string }, string][] = [
    [
      "a plain hex password",
      { user: "u_db", password: "0a1b", database: "db" },
      "mysql://u_db:0a1b@h:3306/db",
    ],
    [
      "the URL's reserved characters percent-encoded",
      { user: "u:s@r", password: "p/a?s#s w:@%", database: "d/b" },
      "mysql://u%3As%40r:p%2Fa%3Fs%23s%20w%3A%40%25@h:3306/d%2Fb",
    ],
    [
      "non-ASCII as UTF-8",
      { user: "u", password: "pässwörd", database: "db" },
      "mysql://u:p%C3%A4ssw%C3%B6rd@h:3306/db",
    ],
  ];
  for (const [name, c, uri] of cases) {
    it(`mysql DATABASE_URL: ${name}; the other variables keep the raw values`, () => {
      const v = addonVariables("mysql", "h", c);
      assert.equal(v.DATABASE_URL, uri);
      assert.equal(v.MYSQL_ADDON_URI, uri);
      assert.deepEqual(
        [v.MYSQL_ADDON_USER, v.MYSQL_ADDON_PASSWORD, v.MYSQL_ADDON_DB],
        [c.user, c.password, c.database],
      );
      assert.equal(decodeURIComponent(new URL(uri).password), c.password);
    });
  }
  it("every secret of them is masked by the deploy log's masker", () => {
    for (const vars of [kv, pg, my]) {
      const mask = secretMasker(vars);
      for (const [name, value] of Object.entries(vars)) {
        const secret = isSecretVariable(name) || /:\/\//.test(value);
        const out = mask(`${name}=${value}`);
        if (secret)
          assert.ok(!out.includes(value.includes("://") ? "p%40ss" : value) || out.includes("****"), name);
      }
      assert.ok(!mask(JSON.stringify(vars)).includes("tok/en+="));
      assert.ok(!mask(JSON.stringify(vars)).includes("p@ss"));
      assert.ok(!mask(JSON.stringify(vars)).includes("p%40ss"));
    }
  });
});

describe("linkedEnvironment", () => {
  const cache = { kind: "addon" as const, name: "cache" };
  const api = { kind: "app" as const, name: "api" };
  const cases: [
    string,
    Record<string, string>,
    { source: typeof cache | typeof api; vars: Record<string, string> }[],
    Record<string, string>,
    string[],
  ][] = [
    ["no links: the app's own", { A: "1" }, [], { A: "1" }, []],
    [
      "a link adds its variables",
      { A: "1" },
      [{ source: cache, vars: { KV_HOST: "h" } }],
      { A: "1", KV_HOST: "h" },
      [],
    ],
    [
      "the app's own win",
      { KV_HOST: "mine" },
      [{ source: cache, vars: { KV_HOST: "h" } }],
      { KV_HOST: "mine" },
      ["KV_HOST:app"],
    ],
    [
      "the first link wins",
      {},
      [
        { source: cache, vars: { X: "1" } },
        { source: api, vars: { X: "2", Y: "3" } },
      ],
      { X: "1", Y: "3" },
      ["X:cache"],
    ],
  ];
  for (const [name, own, links, vars, shadowed] of cases) {
    it(name, () => {
      const env = linkedEnvironment(own, links);
      assert.deepEqual(env.vars, vars);
      assert.deepEqual(
        env.shadowed.map((s) => `${s.name}:${s.by === "app" ? "app" : s.by.name}`),
        shadowed,
      );
      for (const l of env.linked) assert.equal(env.vars[l.name], l.value);
    });
  }
  it("the deploy log names the sources and what is overridden, never a value", () => {
    const env = linkedEnvironment({ KV_HOST: "mine" }, [
      { source: cache, vars: { KV_HOST: "h", KV_TOKEN: "secret" } },
    ]);
    assert.deepEqual(linkedLines(env), [
      "Linked variables from add-on cache: KV_TOKEN.",
      "KV_HOST of add-on cache is not used: the app sets it itself.",
    ]);
  });
});

describe("publishedVariableProblem", () => {
  const cases: [string, string, RegExp | null][] = [
    ["API_URL", "http://x", null],
    ["1BAD", "x", /invalid/],
    ["CC_RUN_COMMAND", "x", /may not start with CC_/],
    ["cc_pre_build_hook", "x", /may not start with CC_/],
    ["PORT", "1", /set by the platform/],
  ];
  for (const [name, value, want] of cases) {
    it(`${name}`, () => {
      const p = publishedVariableProblem(name, value);
      if (want === null) assert.equal(p, null);
      else assert.match(p ?? "", want);
    });
  }
});

describe("backup retention", () => {
  const at = (days: number) => new Date(Date.UTC(2026, 0, 31) - days * 86_400_000).toISOString();
  const b = (id: string, days: number, automatic = true): AddonBackup => ({
    id,
    addonId: "a",
    file: `${id}.rdb`,
    bytes: 1,
    automatic,
    createdAt: at(days),
  });
  const now = new Date(Date.UTC(2026, 0, 31));
  it("automatic backups older than the kept days go; manual ones and the newest automatic one stay", () => {
    const list = [b("new", 1), b("week", 6.9), b("old", 8), b("older", 30), b("manual", 40, false)];
    assert.deepEqual(
      expiredBackups(list, now, 7).map((x) => x.id),
      ["old", "older"],
    );
    assert.deepEqual(expiredBackups([b("only", 100)], now, 7), []);
  });
  it("a backup is due with none, or when the newest is a day old", () => {
    assert.equal(backupDue([], now), true);
    assert.equal(backupDue([b("x", 0.5)], now), false);
    assert.equal(backupDue([b("x", 1)], now), true);
    assert.equal(backupDue([b("x", 2), b("manual", 0.1, false)], now), false);
  });
});
