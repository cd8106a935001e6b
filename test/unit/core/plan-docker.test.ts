import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { platformVariables } from "../../../src/core/env.js";
import {
  type DockerBuildInput,
  type DockerSettings,
  dockerSettings,
  ipv6CidrProblem,
  parseIpv6,
  planDockerBuild,
  relativeRepoPath,
} from "../../../src/core/plan-docker.js";

const DEFAULTS: DockerSettings = {
  dockerfile: "Dockerfile",
  httpPort: 8080,
  tcpPort: null,
  buildkit: false,
  login: null,
  mountDockerSocket: false,
  ipv6Subnet: null,
};

describe("dockerSettings: valid", () => {
  const cases: [string, Record<string, string>, Partial<DockerSettings>][] = [
    ["nothing set: the defaults", {}, {}],
    ["unrelated variables", { NODE_ENV: "production" }, {}],
    [
      "empty values count as unset",
      { CC_DOCKERFILE: "", CC_DOCKER_EXPOSED_HTTP_PORT: " ", CC_DOCKER_BUILDX: "" },
      {},
    ],
    ["another Dockerfile name", { CC_DOCKERFILE: "Dockerfile.prod" }, { dockerfile: "Dockerfile.prod" }],
    [
      "a Dockerfile in a folder",
      { CC_DOCKERFILE: "docker/web/Dockerfile" },
      { dockerfile: "docker/web/Dockerfile" },
    ],
    ["a ./ path, normalised", { CC_DOCKERFILE: "./docker//Dockerfile" }, { dockerfile: "docker/Dockerfile" }],
    ["a name with dots that is not ..", { CC_DOCKERFILE: "..Dockerfile" }, { dockerfile: "..Dockerfile" }],
    ["an HTTP port", { CC_DOCKER_EXPOSED_HTTP_PORT: "3000" }, { httpPort: 3000 }],
    [
      "the lowest and highest ports",
      { CC_DOCKER_EXPOSED_HTTP_PORT: "1", CC_DOCKER_EXPOSED_TCP_PORT: "65535" },
      { httpPort: 1, tcpPort: 65535 },
    ],
    ["a TCP port", { CC_DOCKER_EXPOSED_TCP_PORT: "5432" }, { tcpPort: 5432 }],
    ["buildx true", { CC_DOCKER_BUILDX: "true" }, { buildkit: true }],
    ["buildx TRUE", { CC_DOCKER_BUILDX: "TRUE" }, { buildkit: true }],
    ["buildx false", { CC_DOCKER_BUILDX: "false" }, { buildkit: false }],
    ["the engine socket", { CC_MOUNT_DOCKER_SOCKET: "true" }, { mountDockerSocket: true }],
    [
      "a login to the default registry",
      { CC_DOCKER_LOGIN_USERNAME: "me", CC_DOCKER_LOGIN_PASSWORD: "pw w/ space" },
      { login: { server: null, username: "me", password: "pw w/ space" } },
    ],
    [
      "a login to another registry",
      {
        CC_DOCKER_LOGIN_USERNAME: "me",
        CC_DOCKER_LOGIN_PASSWORD: "pw",
        CC_DOCKER_LOGIN_SERVER: "registry.example.com:5000",
      },
      { login: { server: "registry.example.com:5000", username: "me", password: "pw" } },
    ],
    [
      "an IPv6 subnet, dashed name",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00:1::/64" },
      { ipv6Subnet: "fd00:1::/64" },
    ],
    [
      "an IPv6 subnet, underscored name",
      { CC_DOCKER_FIXED_CIDR_V6: "2001:db8::/48" },
      { ipv6Subnet: "2001:db8::/48" },
    ],
    [
      "both IPv6 names, the same subnet",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00::/64", CC_DOCKER_FIXED_CIDR_V6: "fd00::/64" },
      { ipv6Subnet: "fd00::/64" },
    ],
  ];
  for (const [label, vars, want] of cases) {
    it(label, () =>
      assert.deepEqual(dockerSettings(vars), { settings: { ...DEFAULTS, ...want }, errors: [] }),
    );
  }
});

describe("dockerSettings: invalid", () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    [
      "a parent path",
      { CC_DOCKERFILE: "../../etc/passwd" },
      /^CC_DOCKERFILE="..\/..\/etc\/passwd" must be a relative path inside the repository, without "\.\." segments\.$/,
    ],
    ["a .. in the middle", { CC_DOCKERFILE: "a/../../b" }, /without "\.\." segments/],
    [
      "an absolute path",
      { CC_DOCKERFILE: "/etc/passwd" },
      /^CC_DOCKERFILE="\/etc\/passwd" must be a relative path inside the repository, not an absolute path/,
    ],
    ["a newline", { CC_DOCKERFILE: "Dockerfile\nx" }, /must not contain NUL, newline/],
    ["a NUL", { CC_DOCKERFILE: "Docker\0file" }, /must not contain NUL/],
    ["a backslash", { CC_DOCKERFILE: "..\\x" }, /must use \/ as separator/],
    ["a folder", { CC_DOCKERFILE: "docker/" }, /must name a file/],
    ["only dots", { CC_DOCKERFILE: "./." }, /must name a file/],
    [
      "a port that is not a number",
      { CC_DOCKER_EXPOSED_HTTP_PORT: "http" },
      /^CC_DOCKER_EXPOSED_HTTP_PORT="http" is not a port: use an integer from 1 to 65535\.$/,
    ],
    ["port 0", { CC_DOCKER_EXPOSED_HTTP_PORT: "0" }, /CC_DOCKER_EXPOSED_HTTP_PORT="0" is not a port/],
    ["port 65536", { CC_DOCKER_EXPOSED_HTTP_PORT: "65536" }, /"65536" is not a port/],
    ["a negative port", { CC_DOCKER_EXPOSED_HTTP_PORT: "-1" }, /"-1" is not a port/],
    ["a fractional port", { CC_DOCKER_EXPOSED_HTTP_PORT: "80.5" }, /"80.5" is not a port/],
    ["a hex port", { CC_DOCKER_EXPOSED_HTTP_PORT: "0x50" }, /"0x50" is not a port/],
    [
      "a bad TCP port",
      { CC_DOCKER_EXPOSED_TCP_PORT: "99999" },
      /^CC_DOCKER_EXPOSED_TCP_PORT="99999" is not a port/,
    ],
    [
      "buildx yes",
      { CC_DOCKER_BUILDX: "yes" },
      /^CC_DOCKER_BUILDX="yes" is not a boolean: use true or false\.$/,
    ],
    ["buildx 1", { CC_DOCKER_BUILDX: "1" }, /CC_DOCKER_BUILDX="1" is not a boolean/],
    ["socket on", { CC_MOUNT_DOCKER_SOCKET: "on" }, /CC_MOUNT_DOCKER_SOCKET="on" is not a boolean/],
    [
      "a user without a password",
      { CC_DOCKER_LOGIN_USERNAME: "me" },
      /CC_DOCKER_LOGIN_USERNAME is set but CC_DOCKER_LOGIN_PASSWORD is not/,
    ],
    [
      "a password without a user",
      { CC_DOCKER_LOGIN_PASSWORD: "pw" },
      /CC_DOCKER_LOGIN_PASSWORD is set but CC_DOCKER_LOGIN_USERNAME is not/,
    ],
    [
      "a server alone",
      { CC_DOCKER_LOGIN_SERVER: "ghcr.io" },
      /CC_DOCKER_LOGIN_SERVER is set but CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD are not/,
    ],
    [
      "a user like a flag",
      { CC_DOCKER_LOGIN_USERNAME: "--password=x", CC_DOCKER_LOGIN_PASSWORD: "pw" },
      /CC_DOCKER_LOGIN_USERNAME must not/,
    ],
    [
      "a server like a flag",
      { CC_DOCKER_LOGIN_USERNAME: "u", CC_DOCKER_LOGIN_PASSWORD: "pw", CC_DOCKER_LOGIN_SERVER: "-H x" },
      /CC_DOCKER_LOGIN_SERVER="-H x" is not a registry address/,
    ],
    [
      "a multi-line password",
      { CC_DOCKER_LOGIN_USERNAME: "u", CC_DOCKER_LOGIN_PASSWORD: "a\nb" },
      /^CC_DOCKER_LOGIN_PASSWORD must be a single line/,
    ],
    [
      "an IPv4 subnet",
      { "CC_DOCKER_FIXED-CIDR-V6": "10.0.0.0/8" },
      /^CC_DOCKER_FIXED-CIDR-V6="10\.0\.0\.0\/8" has an invalid IPv6 address/,
    ],
    [
      "no prefix",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00::" },
      /is not an IPv6 subnet: use address\/prefix, e\.g\. fd00:1::\/64/,
    ],
    [
      "prefix 0",
      { CC_DOCKER_FIXED_CIDR_V6: "::/0" },
      /^CC_DOCKER_FIXED_CIDR_V6="::\/0" has an invalid prefix length: use 1 to 128/,
    ],
    ["prefix 129", { "CC_DOCKER_FIXED-CIDR-V6": "fd00::/129" }, /invalid prefix length/],
    [
      "host bits set",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00:1::5/64" },
      /is not a network address: bits after the first 64 must be zero/,
    ],
    [
      "two different subnets",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00:1::/64", CC_DOCKER_FIXED_CIDR_V6: "fd00:2::/64" },
      /both set, to different subnets/,
    ],
  ];
  for (const [label, vars, re] of cases) {
    it(`rejects ${label}`, () => {
      const r = dockerSettings(vars);
      assert.equal(r.errors.length, 1, r.errors.join(" | "));
      assert.match(r.errors[0] ?? "", re);
    });
  }
  it("lists every problem at once and keeps the defaults for bad values", () => {
    const r = dockerSettings({
      CC_DOCKERFILE: "/x",
      CC_DOCKER_EXPOSED_HTTP_PORT: "x",
      CC_DOCKER_BUILDX: "maybe",
    });
    assert.equal(r.errors.length, 3);
    assert.deepEqual(r.settings, DEFAULTS);
  });
  it("never shows the registry password", () => {
    const r = dockerSettings({ CC_DOCKER_LOGIN_PASSWORD: "hunter2\nx", CC_DOCKER_LOGIN_SERVER: "-bad" });
    assert.ok(r.errors.length >= 2);
    for (const e of r.errors) assert.ok(!e.includes("hunter2"), e);
    assert.equal(r.settings.login, null);
  });
});

describe("relativeRepoPath", () => {
  const cases: [string, string | null][] = [
    ["Dockerfile", "Dockerfile"],
    ["a/b/Dockerfile", "a/b/Dockerfile"],
    ["./Dockerfile", "Dockerfile"],
    ["a/./b", "a/b"],
    ["...", "..."],
    ["..", null],
    ["a/..", null],
    ["/a", null],
    ["", null],
    ["a\tb", null],
  ];
  for (const [input, path] of cases) {
    it(JSON.stringify(input), () => {
      const r = relativeRepoPath(input);
      if (path === null) assert.ok("error" in r);
      else assert.deepEqual(r, { path });
    });
  }
});

describe("parseIpv6", () => {
  const valid: [string, string][] = [
    ["::", "00000000000000000000000000000000"],
    ["::1", "00000000000000000000000000000001"],
    ["1::", "00010000000000000000000000000000"],
    ["fd00:1::", "fd000001000000000000000000000000"],
    ["2001:db8:0:0:0:0:0:1", "20010db8000000000000000000000001"],
    ["2001:DB8::8:800:200C:417A", "20010db80000000000080800200c417a"],
    ["1:2:3:4:5:6:7::", "00010002000300040005000600070000"],
    ["::2:3:4:5:6:7:8", "00000002000300040005000600070008"],
    ["::ffff:192.0.2.1", "00000000000000000000ffffc0000201"],
    ["::1.2.3.4", "00000000000000000000000001020304"],
    ["64:ff9b::1.2.3.4", "0064ff9b000000000000000001020304"],
  ];
  const hex = (b: number[] | null) => (b ? b.map((x) => x.toString(16).padStart(2, "0")).join("") : null);
  for (const [text, want] of valid) {
    it(`reads ${text}`, () => assert.equal(hex(parseIpv6(text)), want));
  }
  const invalid = [
    "",
    ":",
    ":::",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7",
    "1:2:3:4:5:6:7:8::",
    "::1:2:3:4:5:6:7:8",
    "12345::",
    "g::",
    ":1::",
    "1::2:",
    "1.2.3.4",
    "::256.0.0.1",
    "::01.2.3.4",
    "::1.2.3",
    "1:2:3:4:5:6:7:1.2.3.4",
    "fe80::1%eth0",
    " ::1",
  ];
  for (const text of invalid) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.equal(parseIpv6(text), null));
  }
});

describe("ipv6CidrProblem", () => {
  const cases: [string, RegExp | null][] = [
    ["fd00:1::/64", null],
    ["fd00::/8", null],
    ["::1/128", null],
    ["8000::/1", null],
    ["2001:db8:abcd:12::/64", null],
    ["fd00::/064", /invalid prefix length/],
    ["fd00::/", /not an IPv6 subnet/],
    ["fd00::/64/1", /not an IPv6 subnet/],
    ["fd00:::/64", /has an invalid IPv6 address/],
    ["fd00:1::1/64", /not a network address/],
    ["::1/127", /not a network address/],
    ["fd00::/abc", /not an IPv6 subnet/],
  ];
  for (const [value, re] of cases) {
    it(value, () => {
      const r = ipv6CidrProblem(value);
      if (re === null) assert.equal(r, null);
      else assert.match(r ?? "", re);
    });
  }
});

const DOCKERFILE = [
  "FROM node:22",
  "ARG NODE_ENV=production",
  "ARG NPM_TOKEN",
  "ARG INSTANCE_TYPE",
  "ARG UNSET",
  "CMD node x",
].join("\n");

function input(over: Partial<DockerBuildInput> = {}): DockerBuildInput {
  return {
    appId: "app_1",
    deploymentId: "dep_2",
    buildFlavor: "M",
    vars: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", OTHER: "not declared" },
    platformVars: platformVariables({
      appId: "app_1",
      appName: "web",
      appHome: "/app",
      instanceNumber: 0,
      instanceId: "",
      instanceType: "build",
      port: 8080,
      deploymentId: "dep_2",
      commitId: "c0ffee",
    }),
    dockerfileText: DOCKERFILE,
    withoutCache: false,
    settings: DEFAULTS,
    ...over,
  };
}

function plan(over: Partial<DockerBuildInput> = {}) {
  const r = planDockerBuild(input(over));
  if (!r.ok) assert.fail(`expected a plan, got ${r.errors.join(" ")}`);
  return r.plan;
}

describe("planDockerBuild: refusals", () => {
  const cases: [string, Partial<DockerBuildInput>, string | RegExp][] = [
    [
      "no Dockerfile",
      { dockerfileText: null },
      "No Dockerfile found at Dockerfile in the pushed commit; add one or set CC_DOCKERFILE.",
    ],
    [
      "no Dockerfile at CC_DOCKERFILE",
      { dockerfileText: null, settings: { ...DEFAULTS, dockerfile: "docker/Dockerfile.prod" } },
      "No Dockerfile found at docker/Dockerfile.prod in the pushed commit; add one or set CC_DOCKERFILE.",
    ],
    [
      "no CMD nor ENTRYPOINT",
      { dockerfileText: "FROM node:22\nRUN npm ci" },
      /^Dockerfile has neither CMD nor ENTRYPOINT in its final stage/,
    ],
    [
      "a CMD only in a build stage, named after the file",
      {
        dockerfileText: "FROM img AS build\nCMD x\nFROM other",
        settings: { ...DEFAULTS, dockerfile: "Web.dockerfile" },
      },
      /^Web\.dockerfile has neither CMD nor ENTRYPOINT in its final stage/,
    ],
    [
      // Issue 15: the engine's build API carries build args in its URL, which it refuses past 1 MiB (431).
      "build args that would pass the engine's URL limit, named",
      {
        dockerfileText: "FROM img\nARG BIG_A\nARG BIG_B\nCMD x",
        vars: { BIG_A: "/".repeat(200 * 1024), BIG_B: "/".repeat(100 * 1024) },
      },
      /^The build args BIG_A, BIG_B take 921\d{3} bytes in the engine's build request URL: at most 786432\. Read large values at run time/,
    ],
    ["no FROM", { dockerfileText: "CMD x" }, /^Dockerfile has no FROM instruction/],
    ["an empty file", { dockerfileText: "" }, /^Dockerfile has no FROM instruction/],
  ];
  for (const [label, over, want] of cases) {
    it(label, () => {
      const r = planDockerBuild(input(over));
      assert.equal(r.ok, false);
      if (r.ok) return;
      assert.equal(r.errors.length, 1);
      if (typeof want === "string") assert.equal(r.errors[0], want);
      else assert.match(r.errors[0] ?? "", want);
    });
  }
});

describe("planDockerBuild: the plan", () => {
  it("names the image after the app and the deployment", () =>
    assert.equal(plan().image, "pier-app/app_1:dep_2"));
  it("labels the image", () =>
    assert.deepEqual(plan().labels, {
      "pier.managed": "true",
      "pier.app": "app_1",
      "pier.deployment": "dep_2",
    }));
  it("passes only the declared ARGs, app then platform variables", () =>
    assert.deepEqual(plan().buildArgs, {
      NODE_ENV: "production",
      NPM_TOKEN: "npm_secret_value",
      INSTANCE_TYPE: "build",
    }));
  it("lets platform variables win over app variables", () =>
    assert.equal(plan({ vars: { INSTANCE_TYPE: "production" } }).buildArgs.INSTANCE_TYPE, "build"));
  it("expands $APP_HOME in build args", () =>
    assert.deepEqual(plan({ vars: { NODE_ENV: "$APP_HOME/x" } }).buildArgs.NODE_ENV, "/app/x"));
  it("passes no build arg when none is declared", () =>
    assert.deepEqual(plan({ dockerfileText: "FROM img\nCMD x" }).buildArgs, {}));
  const memory: [DockerBuildInput["buildFlavor"], number][] = [
    ["pico", 256 * 2 ** 20],
    ["XS", 2 ** 30],
    ["M", 4 * 2 ** 30],
    ["XL", 16 * 2 ** 30],
  ];
  for (const [flavor, bytes] of memory) {
    it(`bounds the build's memory by the ${flavor} flavor`, () =>
      assert.equal(plan({ buildFlavor: flavor }).memoryBytes, bytes));
  }
  it("builds without cache when asked", () => assert.equal(plan({ withoutCache: true }).noCache, true));
  it("builds with cache by default", () => assert.equal(plan().noCache, false));
  it("uses BuildKit when the settings say so", () =>
    assert.equal(plan({ settings: { ...DEFAULTS, buildkit: true } }).buildkit, true));
  it("keeps the Dockerfile path", () =>
    assert.equal(plan({ settings: { ...DEFAULTS, dockerfile: "a/Dockerfile" } }).dockerfile, "a/Dockerfile"));
  it("carries the login", () => {
    const login = { server: "ghcr.io", username: "me", password: "pw_secret" };
    assert.deepEqual(plan({ settings: { ...DEFAULTS, login } }).login, login);
  });
});

describe("planDockerBuild: log lines", () => {
  const login = { server: null, username: "deployer", password: "registry_pw_123" };
  const cases: [string, Partial<DockerBuildInput>, (string | RegExp)[]][] = [
    [
      "the whole Install/Login phase",
      {},
      [
        "Dockerfile found: Dockerfile (1 stage).",
        "CMD found for the final image.",
        "No registry login (CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD unset): pulls from the default registry are anonymous and rate-limited.",
        "Build args passed: NODE_ENV, NPM_TOKEN, INSTANCE_TYPE.",
        "ARGs without a variable of that name (their Dockerfile default applies): UNSET.",
        "Warning: NPM_TOKEN looks secret; a build arg's value can be read from the image's history.",
        "Builder: classic docker build (set CC_DOCKER_BUILDX=true to use BuildKit).",
      ],
    ],
    [
      "ENTRYPOINT and CMD, several stages",
      { dockerfileText: "FROM img AS b\nFROM b\nENTRYPOINT x\nCMD y" },
      [
        "Dockerfile found: Dockerfile (2 stages).",
        "ENTRYPOINT and CMD found for the final image.",
        /^No registry login/,
        "Build args passed: none.",
      ],
    ],
    [
      "a login to the default registry",
      { settings: { ...DEFAULTS, login } },
      [/./, /./, "Registry login to the default registry as deployer."],
    ],
    [
      "a login to another registry",
      { settings: { ...DEFAULTS, login: { ...login, server: "registry.example.com" } } },
      [/./, /./, "Registry login to registry.example.com as deployer."],
    ],
  ];
  for (const [label, over, want] of cases) {
    it(label, () => {
      const lines = plan(over).logLines;
      want.forEach((w, i) => {
        if (typeof w === "string") assert.equal(lines[i], w);
        else assert.match(lines[i] ?? "", w);
      });
    });
  }

  const mentions: [string, Partial<DockerBuildInput>, RegExp][] = [
    [
      "BuildKit",
      { settings: { ...DEFAULTS, buildkit: true } },
      /^Builder: BuildKit \(CC_DOCKER_BUILDX=true\)\.$/,
    ],
    ["a cacheless build", { withoutCache: true }, /^Building without cache\.$/],
    [
      "heredocs without BuildKit",
      { dockerfileText: "FROM img\nRUN <<EOF\necho\nEOF\nCMD x" },
      /^Warning: the Dockerfile uses heredocs \(<<EOF\), which need BuildKit: set CC_DOCKER_BUILDX=true\.$/,
    ],
    [
      "an EXPOSEd port that is not the HTTP port",
      { dockerfileText: "FROM img\nEXPOSE 3000\nCMD x" },
      /^Note: the Dockerfile EXPOSEs 3000 but the HTTP port is 8080; set CC_DOCKER_EXPOSED_HTTP_PORT/,
    ],
  ];
  for (const [label, over, re] of mentions) {
    it(`mentions ${label}`, () =>
      assert.ok(
        plan(over).logLines.some((l) => re.test(l)),
        plan(over).logLines.join("\n"),
      ));
  }

  const silent: [string, Partial<DockerBuildInput>, RegExp][] = [
    [
      "heredocs with BuildKit",
      { dockerfileText: "FROM img\nRUN <<EOF\necho\nEOF\nCMD x", settings: { ...DEFAULTS, buildkit: true } },
      /heredoc/,
    ],
    ["an EXPOSEd HTTP port", { dockerfileText: "FROM img\nEXPOSE 8080 9000\nCMD x" }, /EXPOSEs/],
    ["no ARG without a variable", { dockerfileText: "FROM img\nARG NODE_ENV\nCMD x" }, /without a variable/],
    ["no secret build arg", { dockerfileText: "FROM img\nARG NODE_ENV\nCMD x" }, /looks secret/],
  ];
  for (const [label, over, re] of silent) {
    it(`says nothing of ${label}`, () => assert.ok(!plan(over).logLines.some((l) => re.test(l))));
  }

  it("never logs a password or a build arg's value", () => {
    const lines = plan({ settings: { ...DEFAULTS, login } }).logLines.join("\n");
    assert.ok(!lines.includes("registry_pw_123"));
    assert.ok(!lines.includes("npm_secret_value"));
    assert.ok(!lines.includes("production"));
  });
});
