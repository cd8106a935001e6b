// PIER_SUBNET_POOL and PIER_SUBNET_SIZE, as `pier server` reads them at start.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig } from "../../../src/server/config.js";

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", ...env });
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
};

describe("subnet pool settings", () => {
  test("defaults: 10.210.0.0/16 in /26 networks", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" });
    assert.deepEqual(c.subnets, { pool: { base: (10 * 256 + 210) * 65536, prefix: 16 }, prefix: 26 });
  });
  test("a prefix length with or without a slash", () => {
    const c = loadConfig({
      PIER_EXTRA_CA_CERTS: "/dev/null",
      PIER_SUBNET_POOL: "10.0.0.0/8",
      PIER_SUBNET_SIZE: "/24",
    });
    assert.equal(c.subnets.prefix, 24);
    assert.equal(c.subnets.pool.prefix, 8);
  });
  const bad: [Record<string, string>, RegExp][] = [
    [{ PIER_SUBNET_POOL: "10.210.0.0" }, /^PIER_SUBNET_POOL: must be an IPv4 CIDR/],
    [{ PIER_SUBNET_POOL: "10.210.1.0/16" }, /^PIER_SUBNET_POOL: has host bits set/],
    [{ PIER_SUBNET_SIZE: "27" }, /^PIER_SUBNET_SIZE: must be a prefix length from 8 to 26/],
    [{ PIER_SUBNET_SIZE: "big" }, /^PIER_SUBNET_SIZE: must be a prefix length/],
    [{ PIER_SUBNET_POOL: "10.210.0.0/26" }, /^PIER_SUBNET_POOL: a \/26 holds fewer than two networks/],
  ];
  for (const [env, want] of bad) {
    test(JSON.stringify(env), () => {
      const p = problems(env);
      assert.equal(p.length, 1, p.join("\n"));
      assert.match(p[0] ?? "", want);
    });
  }
  test("every problem at once", () => {
    const p = problems({ PIER_SUBNET_POOL: "nope", PIER_SUBNET_SIZE: "30", PIER_API_PORT: "0" });
    assert.equal(p.length, 3, p.join("\n"));
  });
});
