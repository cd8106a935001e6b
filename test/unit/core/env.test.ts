import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  healthCheckPaths,
  instanceEnvironment,
  platformVariables,
  READONLY_VARIABLES,
  validateVariable,
  validateVariableName,
} from "../../../src/core/env.js";
import { parseEnvImport } from "../../../src/core/env-import.js";
import {
  isSecretVariable,
  maskedValueProblem,
  maskSecrets,
  shownVariables,
} from "../../../src/core/env-secrets.js";

describe("validateVariableName", () => {
  const valid = [
    "A",
    "a",
    "_",
    "_1",
    "NODE_ENV",
    "cc_lower",
    "A1B2",
    "CC_DOCKER_FIXED-CIDR-V6",
    "CC_DOCKER_FIXED_CIDR_V6",
  ];
  for (const name of valid) {
    it(`accepts ${name}`, () => assert.equal(validateVariableName(name), null));
  }
  it("accepts a 255-character name", () => assert.equal(validateVariableName("A".repeat(255)), null));

  const invalid: [string, string, RegExp][] = [
    ["empty", "", /must not be empty/],
    [
      "a leading digit",
      "1FOO",
      /"1FOO" is invalid: use ASCII letters, digits and _, not starting with a digit/,
    ],
    ["a dash", "FOO-BAR", /"FOO-BAR" is invalid/],
    ["another dashed name", "CC-DOCKER", /"CC-DOCKER" is invalid/],
    ["a space", "FOO BAR", /"FOO BAR" is invalid/],
    ["a dot", "a.b", /"a.b" is invalid/],
    ["non-ASCII", "CAFÉ", /"CAFÉ" is invalid/],
    ["an equals sign", "A=B", /"A=B" is invalid/],
    ["a newline", "A\nB", /"A\\nB" is invalid/],
    ["256 characters", "A".repeat(256), /too long \(256 characters; at most 255\)/],
  ];
  for (const [label, name, re] of invalid) {
    it(`rejects ${label}`, () => assert.match(validateVariableName(name) ?? "", re));
  }

  for (const name of READONLY_VARIABLES) {
    it(`rejects the read-only ${name}, saying the platform sets it`, () => {
      assert.equal(
        validateVariableName(name),
        `${name} is set by the platform in every instance and cannot be changed.`,
      );
    });
  }
  it("is case-sensitive about read-only names", () => assert.equal(validateVariableName("port"), null));
});

describe("validateVariable", () => {
  const cases: [string, string, string, RegExp | null][] = [
    ["a plain value", "A", "x", null],
    ["an empty value", "A", "", null],
    ["a multi-line value", "KEY", "-----BEGIN-----\nabc\n-----END-----\n", null],
    ["64 KiB exactly", "A", "x".repeat(65536), null],
    [
      "one byte over 64 KiB",
      "A",
      "x".repeat(65537),
      /The value of A is too long \(65537 bytes; at most 65536, the cap on one value's size\)/,
    ],
    ["64 KiB counted in UTF-8 bytes", "A", "é".repeat(32769), /65538 bytes/],
    ["a NUL", "A", "a\0b", /The value of A contains a NUL character/],
    ["a bad name, whatever the value", "1A", "x", /"1A" is invalid/],
    ["a read-only name", "PORT", "3000", /PORT is set by the platform/],
  ];
  for (const [label, name, value, re] of cases) {
    it(label, () => {
      const r = validateVariable(name, value);
      if (re === null) assert.equal(r, null);
      else assert.match(r ?? "", re);
    });
  }
  it("never repeats the value in its message", () => {
    assert.ok(!(validateVariable("A", `hunter2\0${"x".repeat(10)}`) ?? "").includes("hunter2"));
  });
});

describe("parseEnvImport: lines", () => {
  const ok: [string, string, Record<string, string>][] = [
    ["one line", "A=1", { A: "1" }],
    ["several lines, CRLF", "A=1\r\nB=2\r\n", { A: "1", B: "2" }],
    ["blank lines and comments", "\n# comment\n  # indented comment\nA=1\n\n", { A: "1" }],
    ["export prefix", "export A=1\nexport   B=2", { A: "1", B: "2" }],
    ["a variable named export", "export=1", { export: "1" }],
    ["spaces around =", "A = 1 ", { A: "1" }],
    ["an empty value", "A=", { A: "" }],
    ["= in the value", "URL=a=b=c", { URL: "a=b=c" }],
    ["an inline comment after whitespace", "A=1 # one", { A: "1" }],
    ["a # not after whitespace", "COLOR=#fff\nU=http://x/#top", { COLOR: "#fff", U: "http://x/#top" }],
    ["an empty value then a comment", "A= # nothing", { A: "" }],
    ["single quotes are literal", "A='x \\n \"y\" # z'", { A: 'x \\n "y" # z' }],
    ["double quotes keep spaces and #", 'A="  a # b  "', { A: "  a # b  " }],
    ["double-quoted escapes", 'A="l1\\nl2\\t\\"q\\" \\\\ \\x"', { A: 'l1\nl2\t"q" \\ \\x' }],
    [
      "a double-quoted value spanning lines",
      'KEY="-----BEGIN-----\nabc\n-----END-----"\nB=2',
      { KEY: "-----BEGIN-----\nabc\n-----END-----", B: "2" },
    ],
    ["a comment after a closing quote", "A=\"x\" # c\nB='y' # d", { A: "x", B: "y" }],
    [
      "the dashed contract name",
      "CC_DOCKER_FIXED-CIDR-V6=fd00::/64",
      { "CC_DOCKER_FIXED-CIDR-V6": "fd00::/64" },
    ],
    ["a name given twice keeps the last", "A=1\nA=2", { A: "2" }],
    ["a byte order mark", "\uFEFFA=1", { A: "1" }],
    ["empty input", "", {}],
  ];
  for (const [label, text, vars] of ok) {
    it(label, () => assert.deepEqual(parseEnvImport(text), { vars, errors: [] }));
  }

  const bad: [string, string, Record<string, string>, RegExp[]][] = [
    ["a line without =", "A=1\njust words\nB=2", { A: "1", B: "2" }, [/^Line 2: expected NAME=value\.$/]],
    ["a bad name", "1A=x", {}, [/^Line 1: The variable name "1A" is invalid/]],
    ["a read-only name", "\n\nPORT=3000", {}, [/^Line 3: PORT is set by the platform/]],
    ["an unclosed double quote", 'A="abc\nB=2', {}, [/^Line 1: the double-quoted value of A is not closed/]],
    [
      "an unclosed single quote",
      "A='abc\nB=2",
      { B: "2" },
      [/^Line 1: the single-quoted value of A is not closed/],
    ],
    ["text after a closing quote", 'A="x"y', {}, [/^Line 1: unexpected text after the closing quote of A/]],
    ["a NUL in a value", "A=a\0b", {}, [/^Line 1: The value of A contains a NUL/]],
    [
      "every bad line at once, numbered after a multi-line value",
      'K="a\nb"\nbad\n2X=1\nOK=1',
      { K: "a\nb", OK: "1" },
      [/^Line 3: expected/, /^Line 4: .*"2X"/],
    ],
  ];
  for (const [label, text, vars, res] of bad) {
    it(`reports ${label}`, () => {
      const r = parseEnvImport(text);
      assert.deepEqual(r.vars, vars);
      assert.equal(r.errors.length, res.length, r.errors.join(" | "));
      for (const [i, re] of res.entries()) assert.match(r.errors[i] ?? "", re);
    });
  }
  it("never shows a line's content in an error", () => {
    const r = parseEnvImport("s3cr3tpassword");
    assert.deepEqual(r.errors, ["Line 1: expected NAME=value."]);
  });
});

describe("parseEnvImport: JSON", () => {
  const ok: [string, string, Record<string, string>][] = [
    ["an object of strings", '{"A":"1","B":"multi\\nline"}', { A: "1", B: "multi\nline" }],
    ["an empty object", "{}", {}],
    ["surrounding whitespace", '\n  {"A":"1"}  \n', { A: "1" }],
    ["an array of {name, value}", '[{"name":"A","value":"1"},{"name":"B","value":""}]', { A: "1", B: "" }],
  ];
  for (const [label, text, vars] of ok) {
    it(label, () => assert.deepEqual(parseEnvImport(text), { vars, errors: [] }));
  }
  const bad: [string, string, Record<string, string>, RegExp][] = [
    ["invalid JSON", '{"A":', {}, /^The input is not valid JSON/],
    [
      "a number value",
      '{"A":1,"B":"2"}',
      { B: "2" },
      /^Key "A": the value of "A" must be a string, not a number/,
    ],
    ["a null value", '{"A":null}', {}, /not null/],
    ["a nested object", '{"A":{}}', {}, /not an object/],
    ["a bad name", '{"1A":"x"}', {}, /^Key "1A": The variable name "1A" is invalid/],
    ["a read-only name", '{"APP_ID":"x"}', {}, /APP_ID is set by the platform/],
    ["an array item without a name", '[{"value":"1"}]', {}, /^Item 0: "name" must be a string/],
    ["an array item that is not an object", "[1]", {}, /^Item 0: expected an object/],
  ];
  for (const [label, text, vars, re] of bad) {
    it(`reports ${label}`, () => {
      const r = parseEnvImport(text);
      assert.deepEqual(r.vars, vars);
      assert.equal(r.errors.length, 1, r.errors.join(" | "));
      assert.match(r.errors[0] ?? "", re);
    });
  }
});

const platform = {
  appId: "app_1",
  appName: "web",
  appHome: "/app",
  instanceNumber: 2,
  instanceId: "inst_9",
  instanceType: "production" as const,
  port: 8080,
  deploymentId: "dep_3",
  commitId: "abc123",
};

describe("platformVariables", () => {
  it("sets every read-only variable as a string", () => {
    assert.deepEqual(platformVariables(platform), {
      APP_ID: "app_1",
      CC_APP_NAME: "web",
      APP_HOME: "/app",
      INSTANCE_NUMBER: "2",
      INSTANCE_ID: "inst_9",
      INSTANCE_TYPE: "production",
      PORT: "8080",
      CC_DEPLOYMENT_ID: "dep_3",
      CC_COMMIT_ID: "abc123",
    });
  });
  it("names exactly the read-only variables", () => {
    assert.deepEqual(Object.keys(platformVariables(platform)).sort(), [...READONLY_VARIABLES].sort());
  });
  it("says build during a build", () => {
    assert.equal(platformVariables({ ...platform, instanceType: "build" }).INSTANCE_TYPE, "build");
  });
});

describe("instanceEnvironment", () => {
  const pv = platformVariables(platform);
  const expand: [string, string, string][] = [
    ["$APP_HOME", "$APP_HOME/.yarncache/", "/app/.yarncache/"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${...} is the input under test
    ["${APP_HOME}", "${APP_HOME}x", "/appx"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${...} is the input under test
    ["several times", "$APP_HOME:${APP_HOME}/bin", "/app:/app/bin"],
    ["not a longer name", "$APP_HOME_DIR and $APP_HOMEX", "$APP_HOME_DIR and $APP_HOMEX"],
    ["not another variable", "$HOME/x", "$HOME/x"],
    ["a value without $", "plain", "plain"],
    ["next to punctuation", "a=$APP_HOME.", "a=/app."],
  ];
  for (const [label, value, want] of expand) {
    it(`expands ${label}`, () => assert.equal(instanceEnvironment({ V: value }, pv, "/app").V, want));
  }
  it("does not treat $ in the home folder as a pattern", () => {
    assert.equal(instanceEnvironment({ V: "$APP_HOME" }, {}, "/a$&b").V, "/a$&b");
  });
  it("puts platform variables on top of app variables", () => {
    const env = instanceEnvironment({ A: "1", PORT: "3000", APP_ID: "spoofed" }, pv, "/app");
    assert.equal(env.A, "1");
    assert.equal(env.PORT, "8080");
    assert.equal(env.APP_ID, "app_1");
  });
  it("drops a read-only name the platform does not set this time", () => {
    const env = instanceEnvironment({ INSTANCE_ID: "old", A: "1" }, { PORT: "8080" }, "/app");
    assert.deepEqual(env, { A: "1", PORT: "8080" });
  });
  it("does not change its inputs", () => {
    const app = { V: "$APP_HOME" };
    instanceEnvironment(app, pv, "/app");
    assert.deepEqual(app, { V: "$APP_HOME" });
  });
});

describe("healthCheckPaths", () => {
  const ok: [string, Record<string, string>, string[]][] = [
    ["none: the root", {}, ["/"]],
    ["unrelated variables: the root", { CC_HEALTH_CHECK_PATHS: "/x", CC_HEALTH_CHECK_PATH_X: "/y" }, ["/"]],
    ["the single path", { CC_HEALTH_CHECK_PATH: "/health" }, ["/health"]],
    [
      "numbered paths in numeric order",
      { CC_HEALTH_CHECK_PATH_10: "/c", CC_HEALTH_CHECK_PATH_2: "/b", CC_HEALTH_CHECK_PATH_0: "/a" },
      ["/a", "/b", "/c"],
    ],
    ["gaps allowed", { CC_HEALTH_CHECK_PATH_5: "/b", CC_HEALTH_CHECK_PATH_1: "/a" }, ["/a", "/b"]],
    ["the single path first", { CC_HEALTH_CHECK_PATH_0: "/n", CC_HEALTH_CHECK_PATH: "/s" }, ["/s", "/n"]],
    ["a query string", { CC_HEALTH_CHECK_PATH: "/h?full=1&x=%20" }, ["/h?full=1&x=%20"]],
    [
      "a repeated path once",
      { CC_HEALTH_CHECK_PATH: "/a", CC_HEALTH_CHECK_PATH_0: "/a", CC_HEALTH_CHECK_PATH_1: "/b" },
      ["/a", "/b"],
    ],
  ];
  for (const [label, vars, paths] of ok) {
    it(label, () => assert.deepEqual(healthCheckPaths(vars), { paths, errors: [] }));
  }
  const bad: [string, Record<string, string>, RegExp][] = [
    [
      "no leading /",
      { CC_HEALTH_CHECK_PATH: "health" },
      /^CC_HEALTH_CHECK_PATH="health": a health check path must start with \//,
    ],
    ["an empty path", { CC_HEALTH_CHECK_PATH_0: "" }, /^CC_HEALTH_CHECK_PATH_0="": .*must start with \//],
    ["a full URL", { CC_HEALTH_CHECK_PATH: "http://x/" }, /must start with \//],
    [
      "a space",
      { CC_HEALTH_CHECK_PATH_1: "/a b" },
      /^CC_HEALTH_CHECK_PATH_1="\/a b": .*whitespace or control/,
    ],
    ["a tab", { CC_HEALTH_CHECK_PATH: "/a\tb" }, /whitespace or control/],
    ["a newline", { CC_HEALTH_CHECK_PATH: "/a\nGET /b" }, /whitespace or control/],
    ["non-ASCII", { CC_HEALTH_CHECK_PATH: "/café" }, /percent-encode/],
    [
      "a leading zero",
      { CC_HEALTH_CHECK_PATH_01: "/a" },
      /^CC_HEALTH_CHECK_PATH_01: .*without leading zeros \(CC_HEALTH_CHECK_PATH_1\)/,
    ],
    ["a very long path", { CC_HEALTH_CHECK_PATH: `/${"a".repeat(2048)}` }, /at most 2048/],
  ];
  for (const [label, vars, re] of bad) {
    it(`rejects ${label}`, () => {
      const r = healthCheckPaths(vars);
      assert.equal(r.errors.length, 1, r.errors.join(" | "));
      assert.match(r.errors[0] ?? "", re);
      assert.deepEqual(r.paths, []);
    });
  }
  it("keeps the good paths and reports every bad one", () => {
    const r = healthCheckPaths({
      CC_HEALTH_CHECK_PATH: "x",
      CC_HEALTH_CHECK_PATH_0: "/ok",
      CC_HEALTH_CHECK_PATH_1: "y",
    });
    assert.deepEqual(r.paths, ["/ok"]);
    assert.equal(r.errors.length, 2);
  });
});

describe("isSecretVariable", () => {
  const cases: [string, boolean][] = [
    ["NPM_TOKEN", true],
    ["CC_DOCKER_LOGIN_PASSWORD", true],
    ["DB_PASSWD", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["STRIPE_SECRET", true],
    ["API_KEY", true],
    ["APIKEY", true],
    ["api_key", true],
    ["API_KEYS", true],
    ["GITHUB_TOKENS", true],
    ["PRIVATE_KEY_PEM", true],
    ["REDISCLI_AUTH", true],
    ["POSTGRESQL_ADDON_PASSWORD", true],
    ["KV_TOKEN", true],
    ["WP_NONCE_SALT", true],
    ["WP_LOGGED_IN_SALT", true],
    ["SALTY_SNACKS", false],
    ["KEYBOARD_LAYOUT", false],
    ["TOKENIZER_MODEL", false],
    ["SECRETARY_EMAIL", false],
    ["PASSWORDLESS", false],
    ["AUTHOR", false],
    ["NODE_ENV", false],
    ["PORT", false],
    ["CC_DOCKER_LOGIN_USERNAME", false],
    ["DATABASE_URL", false],
  ];
  for (const [name, secret] of cases) {
    it(`${name} → ${secret}`, () => assert.equal(isSecretVariable(name), secret));
  }
});

describe("maskSecrets", () => {
  const vars = {
    NPM_TOKEN: "npm_abcdef123",
    CC_DOCKER_LOGIN_PASSWORD: "p@ss w/rd",
    SHORT_TOKEN: "abc",
    NODE_ENV: "production",
    DATABASE_URL: "postgres://user:dbpa55word@db:5432/app",
    SSH_KEY: "-----BEGIN KEY-----\nAAAAline2secret\n-----END KEY-----",
    LONG_SECRET: "abcd1234abcd",
    SUB_SECRET: "abcd",
  };
  const cases: [string, string, string][] = [
    ["a token", "npm config: //r/:_authToken=npm_abcdef123", "npm config: //r/:_authToken=****"],
    ["every occurrence", "npm_abcdef123 and npm_abcdef123", "**** and ****"],
    ["a password with spaces", "login with p@ss w/rd failed", "login with **** failed"],
    ["its percent-encoded form", "https://u:p%40ss%20w%2Frd@h", "https://u:****@h"],
    ["not a short secret", "abc is short", "abc is short"],
    ["not a non-secret value", "NODE_ENV is production", "NODE_ENV is production"],
    ["a URL's password in any variable", "connect dbpa55word failed", "connect **** failed"],
    ["one line of a multi-line secret", "key line: AAAAline2secret", "key line: ****"],
    ["the longest secret whole", "x abcd1234abcd y abcd", "x **** y ****"],
    ["nothing in a clean line", "Building image...", "Building image..."],
  ];
  for (const [label, text, want] of cases) {
    it(`masks ${label}`, () => assert.equal(maskSecrets(text, vars), want));
  }
  it("returns the text when there is no secret", () =>
    assert.equal(maskSecrets("a b", { NODE_ENV: "a b" }), "a b"));
  it("masks nothing with no variables", () =>
    assert.equal(maskSecrets("npm_abcdef123", {}), "npm_abcdef123"));
});

describe("shownVariables and maskedValueProblem (ADR 0024)", () => {
  it("masks secret names and URL passwords, keeps the rest and empty values", () => {
    assert.deepEqual(
      shownVariables({ DB_PASSWORD: "hunter2", API_TOKEN: "", URL: "https://u:pw1234@h/x", PLAIN: "1" }),
      { DB_PASSWORD: "****", API_TOKEN: "", URL: "https://u:****@h/x", PLAIN: "1" },
    );
  });
  const cases: [string, string, RegExp | null][] = [
    ["DB_PASSWORD", "****", /DB_PASSWORD is Pier's mask \(\*\*\*\*\), not a secret/],
    ["DATABASE_URL", "postgres://u:****@db/x", /a URL whose password is Pier's mask/],
    ["DB_PASSWORD", "*****", null],
    ["GREETING", "****", null],
    ["DATABASE_URL", "postgres://u:pw@db/x", null],
    ["DB_PASSWORD", "hunter2", null],
  ];
  for (const [name, value, want] of cases) {
    it(`${name}=${value} -> ${want ?? "ok"}`, () => {
      const got = maskedValueProblem(name, value);
      if (want === null) assert.equal(got, null);
      else assert.match(got ?? "", want);
    });
  }
});
