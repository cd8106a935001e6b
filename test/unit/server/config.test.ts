// PIER_SUBNET_POOL and PIER_SUBNET_SIZE, as `pier server` reads them at start.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../../../src/server/config.js";
import { ConfigError } from "../../../src/server/config-error.js";

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

describe("SSH limits", () => {
  test("defaults: 32 unauthenticated connections, 8 per source", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" });
    assert.equal(c.sshMaxUnauthenticated, 32);
    assert.equal(c.sshMaxUnauthenticatedPerSource, 8);
  });
  test("a per-source cap under 1 is refused, naming the setting", () => {
    assert.match(
      problems({ PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE: "0" }).join(),
      /^PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE: must be at least 1/,
    );
  });
});

describe("PIER_DOMAIN", () => {
  test("a DNS name with room for an app's name", () => {
    assert.deepEqual(problems({ PIER_DOMAIN: "apps.example.com" }), []);
    assert.deepEqual(problems({ PIER_DOMAIN: `${"d".repeat(63)}.example.com` }), []);
  });
  // The edge refuses a host name with a longer label, or longer than 253 characters: no app could be routed.
  const bad: [string, RegExp][] = [
    [`${"d".repeat(64)}.example.com`, /^PIER_DOMAIN: each label \(between dots\) must be at most 63/],
    [`${`${"d".repeat(62)}.`.repeat(4)}com`, /^PIER_DOMAIN: must be at most 251 characters/],
    ["Example.com", /^PIER_DOMAIN: must be a DNS name/],
  ];
  for (const [domain, want] of bad) {
    test(`${domain.slice(0, 20)}… (${domain.length} characters)`, () => {
      const p = problems({ PIER_DOMAIN: domain });
      assert.equal(p.length, 1, p.join("\n"));
      assert.match(p[0] ?? "", want);
    });
  }
});

describe("HTTPS and ACME settings (ADR 0018)", () => {
  test("defaults: HTTPS on 8443 beside the HTTP edge, Let's Encrypt's production directory", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_HTTP_HOST: "127.0.0.1" });
    assert.deepEqual(c.https, { host: "127.0.0.1", port: 8443 });
    assert.deepEqual(c.acme, {
      directory: "https://acme-v02.api.letsencrypt.org/directory",
      email: null,
      caFile: null,
    });
  });
  test("production ports, a contact, a CA file; off turns ACME off", () => {
    const c = loadConfig({
      PIER_EXTRA_CA_CERTS: "/dev/null",
      PIER_HTTP_PORT: "80",
      PIER_HTTPS_PORT: "443",
      PIER_ACME_EMAIL: "ops@example.com",
      PIER_ACME_CA: "/dev/null",
    });
    assert.equal(c.https.port, 443);
    assert.deepEqual(c.acme, {
      directory: "https://acme-v02.api.letsencrypt.org/directory",
      email: "ops@example.com",
      caFile: "/dev/null",
    });
    assert.equal(
      loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_ACME_DIRECTORY: "off" }).acme.directory,
      null,
    );
  });
  test("every problem listed at once", () => {
    assert.deepEqual(
      problems({
        PIER_HTTPS_PORT: "0",
        PIER_ACME_DIRECTORY: "letsencrypt",
        PIER_ACME_EMAIL: "nobody",
        PIER_ACME_CA: "/no/such/file",
      }),
      [
        "PIER_HTTPS_PORT: must be 1..65535",
        "PIER_ACME_DIRECTORY: must be an ACME directory URL, or off",
        "PIER_ACME_EMAIL: must be an email address",
        "PIER_ACME_CA: file does not exist",
      ],
    );
    assert.deepEqual(problems({ PIER_HTTP_PORT: "8443" }), [
      "PIER_HTTPS_PORT: must differ from PIER_HTTP_PORT",
    ]);
  });
});

describe("an app's default ceiling (PIER_APP_MAX_*, ADR 0022)", () => {
  const host = { memoryMiB: 24105, pidMax: 32768 };
  const load = (env: Record<string, string>) =>
    loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", ...env }, host);
  test("unset: derived from the host (a quarter of pid_max in PIDs, half the memory)", () => {
    assert.deepEqual(load({}).appDefaults, { maxFlavor: "L", maxInstances: 8, maxMemoryMiB: 12052 });
  });
  test("each setting overrides its part", () => {
    const c = load({
      PIER_APP_MAX_FLAVOR: "XL",
      PIER_APP_MAX_INSTANCES: "20",
      PIER_APP_MAX_MEMORY_MIB: "327680",
    });
    assert.deepEqual(c.appDefaults, { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 327680 });
  });
  test("this machine's facts are read (pid_max, memory)", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" });
    assert.ok(c.appDefaults.maxInstances >= 1 && c.appDefaults.maxInstances <= 20);
    assert.ok(c.appDefaults.maxMemoryMiB >= 256);
  });
  test("a memory ceiling alone brings the flavor down to the largest that fits in it", () => {
    assert.deepEqual(load({ PIER_APP_MAX_MEMORY_MIB: "1536" }).appDefaults, {
      maxFlavor: "XS",
      maxInstances: 8,
      maxMemoryMiB: 1536,
    });
  });
  test("bad values are refused, each naming its setting, all at once", () => {
    const p = problems({
      PIER_APP_MAX_FLAVOR: "huge",
      PIER_APP_MAX_INSTANCES: "21",
      PIER_APP_MAX_MEMORY_MIB: "100",
    });
    assert.deepEqual(p, [
      "PIER_APP_MAX_FLAVOR: must be one of pico, nano, XS, S, M, L, XL",
      "PIER_APP_MAX_INSTANCES: must be 1..20",
      "PIER_APP_MAX_MEMORY_MIB: must be at least 256 (one pico instance)",
    ]);
  });
});

describe("isolation settings (ADR 0019)", () => {
  test("defaults: isolation on, no private range allowed", () => {
    const c = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" });
    assert.equal(c.isolation, true);
    assert.deepEqual(c.egressAllow, []);
  });
  test("off, and allowed ranges of both families", () => {
    const c = loadConfig({
      PIER_EXTRA_CA_CERTS: "/dev/null",
      PIER_ISOLATION: "off",
      PIER_EGRESS_ALLOW: "192.168.7.0/24, fd12::/48",
    });
    assert.equal(c.isolation, false);
    assert.deepEqual(c.egressAllow, ["192.168.7.0/24", "fd12::/48"]);
  });
  const bad: [Record<string, string>, RegExp][] = [
    [{ PIER_ISOLATION: "maybe" }, /^PIER_ISOLATION: must be on or off/],
    [{ PIER_EGRESS_ALLOW: "192.168.7.1/24" }, /^PIER_EGRESS_ALLOW: '192\.168\.7\.1\/24' has host bits set/],
    [{ PIER_EGRESS_ALLOW: "fd12::1/48" }, /^PIER_EGRESS_ALLOW: 'fd12::1\/48' is not a network address/],
    [
      { PIER_EGRESS_ALLOW: "10.0.0.0/8" },
      /^PIER_EGRESS_ALLOW: 10\.0\.0\.0\/8 overlaps PIER_SUBNET_POOL 10\.210\.0\.0\/16/,
    ],
  ];
  for (const [env, want] of bad) {
    test(JSON.stringify(env), () => {
      const p = problems(env);
      assert.equal(p.length, 1, p.join("\n"));
      assert.match(p[0] ?? "", want);
    });
  }
});

describe("HTTPS_PROXY and NO_PROXY", () => {
  const proxyOf = (env: Record<string, string>) =>
    loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", ...env }).proxy;
  test("none by default", () => assert.deepEqual(proxyOf({}), { url: null, noProxy: null }));
  test("the upper-case names win over the lower-case ones", () =>
    assert.deepEqual(
      proxyOf({ HTTPS_PROXY: "http://a:3128", https_proxy: "http://b:3128", no_proxy: ".internal" }),
      { url: "http://a:3128", noProxy: ".internal" },
    ));
  test("host:port without a scheme means http://", () =>
    assert.equal(proxyOf({ https_proxy: "proxy.example:3128" }).url, "http://proxy.example:3128"));
  test("a proxy that is not an http(s) URL stops the start, naming the variable", () =>
    assert.match(
      problems({ HTTPS_PROXY: "ftp://proxy:21" }).join("\n"),
      /^HTTPS_PROXY: must be a URL like http:\/\/proxy/,
    ));
});

describe("PIER_ENGINE (ADR 0030)", () => {
  const registry = {
    PIER_SWARM_REGISTRY: "10.0.0.2:5000",
    PIER_SWARM_REGISTRY_USER: "pier",
    PIER_SWARM_REGISTRY_PASSWORD_FILE: "/dev/null",
  };
  test("docker by default, swarm when asked", () => {
    assert.equal(loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" }).engine, "docker");
    const swarm = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_ENGINE: "swarm", ...registry });
    assert.equal(swarm.engine, "swarm");
    assert.deepEqual(swarm.swarmRegistry, {
      kind: "external",
      address: "10.0.0.2:5000",
      username: "pier",
      passwordFile: "/dev/null",
      certsDir: "/etc/docker/certs.d",
    });
  });
  test("the registry's settings are ignored on one dockerd", () => {
    assert.equal(loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", ...registry }).swarmRegistry, null);
  });
  test("an operator's registry with some of its settings names each one missing", () => {
    assert.deepEqual(problems({ PIER_ENGINE: "swarm", PIER_SWARM_REGISTRY: "10.0.0.2:5000" }), [
      "PIER_SWARM_REGISTRY_USER: required with the other PIER_SWARM_REGISTRY settings (the operator's registry; unset all three for Pier's own)",
      "PIER_SWARM_REGISTRY_PASSWORD_FILE: required with the other PIER_SWARM_REGISTRY settings (the operator's registry; unset all three for Pier's own)",
    ]);
  });
  test("without any of them Pier runs its own registry, listening where asked or on the manager's address", () => {
    const own = loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_ENGINE: "swarm" }).swarmRegistry;
    assert.deepEqual(own, { kind: "own", listen: null, certsDir: "/etc/docker/certs.d" });
    const there = loadConfig({
      PIER_EXTRA_CA_CERTS: "/dev/null",
      PIER_ENGINE: "swarm",
      PIER_SWARM_REGISTRY_LISTEN: "10.0.0.1:5001",
    }).swarmRegistry;
    assert.deepEqual(there, { kind: "own", listen: "10.0.0.1:5001", certsDir: "/etc/docker/certs.d" });
    assert.deepEqual(problems({ PIER_ENGINE: "swarm", PIER_SWARM_REGISTRY_LISTEN: "10.0.0.1" }), [
      "PIER_SWARM_REGISTRY_LISTEN: must be an address and port of the manager, like 10.0.0.1:5000",
    ]);
  });
  test("a registry that is no host:port, a password file that is not there", () => {
    assert.deepEqual(
      problems({
        ...registry,
        PIER_SWARM_REGISTRY: "https://registry.example",
        PIER_SWARM_REGISTRY_PASSWORD_FILE: "/nonexistent/password",
      }),
      [
        "PIER_SWARM_REGISTRY: must be the registry's host:port, like 10.0.0.2:5000",
        "PIER_SWARM_REGISTRY_PASSWORD_FILE: file does not exist",
      ],
    );
  });
  test("the rebalancer's regular look: every 15 min by default, 0 for none, anything else named", () => {
    assert.equal(loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" }).rebalanceEveryMs, 900_000);
    assert.equal(
      loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_REBALANCE_EVERY: "0" }).rebalanceEveryMs,
      0,
    );
    assert.equal(
      loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_REBALANCE_EVERY: "60" }).rebalanceEveryMs,
      60_000,
    );
    assert.deepEqual(problems({ PIER_REBALANCE_EVERY: "soon", PIER_STOP_GRACE: "x" }), [
      "PIER_REBALANCE_EVERY: must be 0 (never) or a number of seconds",
      "PIER_STOP_GRACE: must be a positive number of seconds",
    ]);
    assert.deepEqual(problems({ PIER_REBALANCE_EVERY: "-1" }), [
      "PIER_REBALANCE_EVERY: must be 0 (never) or a number of seconds",
    ]);
    assert.deepEqual(problems({ PIER_REBALANCE_EVERY: "1.5" }), [
      "PIER_REBALANCE_EVERY: must be a whole number of seconds",
    ]);
  });
  test("the rebalancer's moves at once: 3 by default, 1 to 20, anything else named", () => {
    assert.equal(loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null" }).rebalanceAtOnce, 3);
    assert.equal(
      loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_REBALANCE_AT_ONCE: "1" }).rebalanceAtOnce,
      1,
    );
    for (const bad of ["0", "21", "many"])
      assert.deepEqual(problems({ PIER_REBALANCE_AT_ONCE: bad }), [
        "PIER_REBALANCE_AT_ONCE: must be a number of apps, from 1 to 20",
      ]);
    assert.deepEqual(problems({ PIER_REBALANCE_AT_ONCE: "2.5" }), [
      "PIER_REBALANCE_AT_ONCE: must be a whole number of apps",
    ]);
  });
  test("anything else is named", () => {
    assert.throws(
      () => loadConfig({ PIER_EXTRA_CA_CERTS: "/dev/null", PIER_ENGINE: "kubernetes" }),
      (e: Error & { problems?: string[] }) => e.problems?.[0] === "PIER_ENGINE: must be docker or swarm",
    );
  });
});
