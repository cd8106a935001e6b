// Secrets masking, names that are Object.prototype's, release numbers, CPU shares, host-only registries.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { instanceEnvironment, validateVariableName } from "../../../src/core/env.js";
import { parseEnvImport } from "../../../src/core/env-import.js";
import { isSecretVariable, maskUrlCredentials, secretMasker } from "../../../src/core/env-secrets.js";
import {
  cpuLimits,
  FLAVOR_CPUS,
  FLAVOR_MEMORY_MIB,
  FLAVORS,
  parseReleaseNumber,
} from "../../../src/core/model.js";
import {
  dockerSettings,
  isHostOnlyAddress,
  loginServerProblem,
  planDockerBuild,
  registryServerHost,
} from "../../../src/core/plan-docker.js";

describe("isSecretVariable: the names that say secret", () => {
  const cases: [string, boolean][] = [
    ["DB_PASS", true],
    ["SMTP_PASS", true],
    ["FTP_PASSWD", true],
    ["MYSQL_PWD", true],
    ["DEPLOY_KEY", true],
    ["GOOGLE_CREDENTIALS", true],
    ["AWS_CREDENTIAL", true],
    ["PROXY_AUTH", true],
    ["DB_PASSWORD", true],
    ["NPM_TOKEN", true],
    ["PASSWORDLESS", false],
    ["PASSENGER_APP_ENV", false],
    ["DB_HOST", false],
  ];
  for (const [name, secret] of cases) {
    it(`${name} → ${secret}`, () => assert.equal(isSecretVariable(name), secret));
  }
});

describe("maskUrlCredentials", () => {
  const cases: [string, string][] = [
    [
      'CC_NPM_REGISTRY="https://user:pass@npm.example.com" is not a registry host',
      'CC_NPM_REGISTRY="https://user:****@npm.example.com" is not a registry host',
    ],
    ["fetch http://u:p@h:8080/x failed", "fetch http://u:****@h:8080/x failed"],
    ["redis://:s3cret@cache:6379", "redis://:****@cache:6379"],
    ["git+ssh://git:pw@host/app.git", "git+ssh://git:****@host/app.git"],
    ["https://ghp_0123456789abcdefghij@github.com/o/r", "https://****@github.com/o/r"],
    ["ssh://git@host:22/app.git", "ssh://git@host:22/app.git"],
    ["https://registry.npmjs.org/", "https://registry.npmjs.org/"],
    ["no url here: user:pass@host", "no url here: user:pass@host"],
    ["two: a://x:1@h b://y:2@h", "two: a://x:****@h b://y:****@h"],
    // A raw `@` in the password: the userinfo runs to the last `@` before the host, as URL parsers read it.
    ["https://user:p@ssw0rd!@npm.example.com/x", "https://user:****@npm.example.com/x"],
    ['CC_NPM_REGISTRY="https://u:a@b@c@h" is not', 'CC_NPM_REGISTRY="https://u:****@h" is not'],
    // An e-mail address as the user name.
    ["https://me@corp.example:hunter2@registry.example/", "https://me@corp.example:****@registry.example/"],
    ["https://u:p@host/path@scope/pkg", "https://u:****@host/path@scope/pkg"],
    ["https://registry.example/@scope%2fpkg", "https://registry.example/@scope%2fpkg"],
    ["ssh://git@host:22/a@b.git", "ssh://git@host:22/a@b.git"],
  ];
  for (const [text, want] of cases)
    it(JSON.stringify(text), () => assert.equal(maskUrlCredentials(text), want));
});

describe("secretMasker", () => {
  const key = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXQAAAAA",
    "-----END OPENSSH PRIVATE KEY-----",
  ].join("\n");
  const mask = secretMasker(
    {
      DB_PASS: "hunter2hunter2",
      MYSQL_PWD: "mysqlpw99",
      CC_NPM_REGISTRY: "https://user:pass@npm.example.com",
      NODE_ENV: "production",
      GOOGLE_CREDENTIALS: '{"private_key":"abcdefgh"}',
      MIRROR_URL: "https://bot:s3cr@t-99@mirror.example.com",
    },
    [key],
  );
  const cases: [string, string, string][] = [
    ["a *_PASS value", "psql: login hunter2hunter2 rejected", "psql: login **** rejected"],
    ["a *_PWD value", "mysql -pmysqlpw99", "mysql -p****"],
    ["a *_CREDENTIALS value", 'creds {"private_key":"abcdefgh"}', "creds ****"],
    [
      "a *_CREDENTIALS value quoted as JSON",
      'GOOGLE_CREDENTIALS="{\\"private_key\\":\\"abcdefgh\\"}" is not valid',
      'GOOGLE_CREDENTIALS="****" is not valid',
    ],
    ["a registry URL's password, anywhere", "login as user with pass", "login as user with ****"],
    [
      "the registry URL itself",
      "GET https://user:pass@npm.example.com/x",
      "GET https://user:****@npm.example.com/x",
    ],
    [
      "a line of the app's private key",
      "key: QyNTUxOQAAACBzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXQAAAAA",
      "key: ****",
    ],
    ["the private key whole", `k=${key}`, "k=****"],
    [
      "any other URL's credentials",
      "clone https://bob:hidden@git.example.com/r",
      "clone https://bob:****@git.example.com/r",
    ],
    ["a URL's password with a raw @, quoted alone", "auth s3cr@t-99 refused", "auth **** refused"],
    [
      "that password percent-encoded",
      "GET https://mirror.example.com/?pw=s3cr%40t-99",
      "GET https://mirror.example.com/?pw=****",
    ],
    ["not a plain value", "NODE_ENV=production", "NODE_ENV=production"],
    [
      "not the key's BEGIN line alone",
      "-----BEGIN OPENSSH PRIVATE KEY-----",
      "-----BEGIN OPENSSH PRIVATE KEY-----",
    ],
  ];
  for (const [label, text, want] of cases) it(`masks ${label}`, () => assert.equal(mask(text), want));
});

describe("variable names of Object.prototype", () => {
  for (const name of [
    "__proto__",
    "constructor",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "__defineGetter__",
  ]) {
    it(`refuses ${name} with a clear message`, () =>
      assert.match(
        validateVariableName(name) ?? "",
        /is reserved \(it names a property of every JavaScript object\)/,
      ));
  }
  it("accepts names that only look alike", () => {
    for (const name of ["PROTO", "CONSTRUCTOR", "to_string", "__proto"])
      assert.equal(validateVariableName(name), null);
  });
  it("env import refuses them (JSON and lines) and keeps the rest", () => {
    const json = parseEnvImport('{"__proto__": "x", "constructor": "y", "A": "1"}');
    assert.deepEqual(Object.keys(json.vars), ["A"]);
    assert.equal(json.errors.length, 2);
    const lines = parseEnvImport("toString=1\nB=2\n");
    assert.deepEqual(Object.keys(lines.vars), ["B"]);
    assert.match(lines.errors[0] ?? "", /Line 1: .*"toString" is reserved/);
  });
  it("an instance environment keeps a stored __proto__ variable as a variable", () => {
    const stored = Object.fromEntries([
      ["__proto__", "kept"],
      ["A", "1"],
    ]) as Record<string, string>;
    const env = instanceEnvironment(stored, { PORT: "8080" }, "/app");
    assert.equal(Object.getPrototypeOf(env), Object.prototype);
    assert.deepEqual(Object.entries(env), [
      ["__proto__", "kept"],
      ["A", "1"],
      ["PORT", "8080"],
    ]);
  });
});

describe("parseReleaseNumber", () => {
  const cases: [string, number | null][] = [
    ["1", 1],
    ["v1", 1],
    ["42", 42],
    ["v120", 120],
    ["0x1", null],
    ["1e0", null],
    [" 1", null],
    ["1 ", null],
    ["+1", null],
    ["-1", null],
    ["01", null],
    ["0", null],
    ["V1", null],
    ["1.0", null],
    ["", null],
    ["v", null],
    ["9999999999", null],
  ];
  for (const [ref, want] of cases) it(JSON.stringify(ref), () => assert.equal(parseReleaseNumber(ref), want));
});

describe("CPU shares of flavors", () => {
  it("one CPU per GiB of memory, a quarter for pico", () => {
    for (const f of FLAVORS) assert.equal(FLAVOR_CPUS[f], Math.max(FLAVOR_MEMORY_MIB[f] / 1024, 0.25));
  });
  const cases: [number, number, number, number][] = [
    // memory MiB, host CPUs, nanoCpus, cpuShares
    [256, 8, 250_000_000, 256],
    [512, 8, 500_000_000, 512],
    [1024, 8, 1_000_000_000, 1024],
    [2048, 8, 2_000_000_000, 2048],
    [16384, 8, 8_000_000_000, 8192],
    [16384, 2, 2_000_000_000, 2048],
    [4096, 2, 2_000_000_000, 2048],
    [32, 2, 250_000_000, 256],
  ];
  for (const [mib, host, nano, shares] of cases) {
    it(`${mib} MiB on ${host} CPUs`, () =>
      assert.deepEqual(cpuLimits(mib * 2 ** 20, host), { nanoCpus: nano, cpuShares: shares }));
  }
});

describe("registry servers on the host itself", () => {
  const hosts: [string, string][] = [
    ["registry.example.com:5000", "registry.example.com"],
    ["https://registry.example.com/v1/", "registry.example.com"],
    ["127.0.0.1:2375", "127.0.0.1"],
    ["[::1]:5000", "::1"],
    ["http://[fe80::1]:80/", "fe80::1"],
    ["LOCALHOST.", "localhost"],
    ["fe80::1", "fe80::1"],
  ];
  for (const [server, host] of hosts)
    it(`host of ${server}`, () => assert.equal(registryServerHost(server), host));
  const addresses: [string, boolean][] = [
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["0.0.0.0", true],
    ["169.254.169.254", true],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["febf::1", true],
    ["::ffff:127.0.0.1", true],
    ["localhost", true],
    ["app.localhost", true],
    ["10.0.0.1", false],
    ["192.168.1.1", false],
    ["172.17.0.1", false],
    ["fec0::1", false],
    ["2001:db8::1", false],
    ["registry.example.com", false],
  ];
  for (const [a, bad] of addresses) it(`${a} → ${bad}`, () => assert.equal(isHostOnlyAddress(a), bad));
  it("CC_DOCKER_LOGIN_SERVER=127.0.0.1:2375 is refused before any connection, with a clear message", () => {
    const r = dockerSettings({
      CC_DOCKER_LOGIN_USERNAME: "u",
      CC_DOCKER_LOGIN_PASSWORD: "p",
      CC_DOCKER_LOGIN_SERVER: "127.0.0.1:2375",
    });
    assert.equal(r.settings.login, null);
    assert.match(r.errors.join(" "), /names a loopback or link-local address \(127\.0\.0\.1\)/);
    assert.equal(loginServerProblem("registry.example.com"), null);
  });
});

describe("build args named like Object.prototype's properties", () => {
  it("an `ARG toString` with no such variable is not passed (never Object.prototype's function)", () => {
    const r = planDockerBuild({
      appId: "app_1",
      deploymentId: "dep_2",
      buildFlavor: "M",
      vars: { A: "1" },
      platformVars: { APP_HOME: "/app" },
      dockerfileText: "FROM scratch\nARG toString\nARG constructor\nARG A\nCMD x\n",
      withoutCache: false,
      settings: dockerSettings({}).settings,
    });
    assert.ok(r.ok);
    assert.deepEqual(r.plan.buildArgs, { A: "1" });
    assert.match(r.plan.logLines.join("\n"), /ARGs without a variable of that name .*toString.*constructor/);
  });
});
