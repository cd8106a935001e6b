import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test } from "node:test";
import { ApiError, CliError, UsageError } from "../../../src/cli/errors.js";
import { renderEnvHuman, renderEnvShell, renderError, shellQuote, table } from "../../../src/cli/output.js";

describe("shell escaping of env output", () => {
  const cases: [string, string][] = [
    ["plain", "'plain'"],
    ["", "''"],
    ["it's", `'it'\\''s'`],
    ["''", `''\\'''\\'''`],
    ["$HOME `id` \\n", "'$HOME `id` \\n'"],
    ["a\nb", "'a\nb'"],
  ];
  for (const [value, quoted] of cases) {
    test(JSON.stringify(value), () => assert.equal(shellQuote(value), quoted));
  }

  test("a POSIX shell reads back every value exactly", () => {
    const vars = {
      QUOTE: 'it\'s "quoted"',
      DOLLAR: "$HOME and $(id) and `id`",
      MULTI: "line1\nline2\n",
      BACKSLASH: "a\\b\\n",
      EMPTY: "",
      SPACES: "  two  spaces  ",
    };
    const { text, skipped } = renderEnvShell(vars);
    assert.deepEqual(skipped, []);
    const script = `${text}\nnode -e 'process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(
      Object.keys(vars),
    )}.map((k) => [k, process.env[k]]))))'`;
    const out = execFileSync("sh", ["-c", script], { encoding: "utf8" });
    assert.deepEqual(JSON.parse(out), vars);
  });

  test("lines are export NAME='value', sorted; names a shell cannot export are left out and reported", () => {
    const { text, skipped } = renderEnvShell({ B: "2", A: "1", "CC_DOCKER_FIXED-CIDR-V6": "fd00::/64" });
    assert.equal(text, "export A='1'\nexport B='2'\n");
    assert.deepEqual(skipped, ["CC_DOCKER_FIXED-CIDR-V6"]);
  });

  test("human output is NAME=value lines", () => {
    assert.equal(renderEnvHuman({ B: "two words", A: "1" }), "A=1\nB=two words\n");
  });
});

describe("error rendering", () => {
  const names = ["apps", "status"];
  test("an API error: pier: <message> and hint: <hint>", () => {
    const e = new ApiError(404, "APP_NOT_FOUND", "No app 'nope'.", "See `pier apps`.");
    assert.equal(renderError(e, names), "pier: No app 'nope'.\nhint: See `pier apps`.\n");
  });
  test("no hint, no hint line", () => {
    assert.equal(renderError(new CliError("boom"), names), "pier: boom\n");
  });
  test("a usage error lists every problem, the commands when asked, and where help is", () => {
    const e = new UsageError(["--a: bad", "--b: worse"], {
      command: "apps",
      listCommands: true,
      hint: "try",
    });
    assert.equal(
      renderError(e, names),
      "pier: --a: bad\npier: --b: worse\nhint: try\n\nCommands: apps, status\nRun 'pier apps --help' for its options.\n",
    );
  });
  test("anything else is reported as a bug, without a stack", () => {
    assert.match(
      renderError(new TypeError("x is undefined"), names),
      /^pier: unexpected error: x is undefined\nhint: .*bug/,
    );
  });
});

test("table: aligned columns, - for empty cells, no trailing spaces", () => {
  assert.equal(
    table(
      ["NAME", "URL"],
      [
        ["web", "http://web.localhost"],
        ["worker-long", ""],
      ],
    ),
    "NAME         URL\nweb          http://web.localhost\nworker-long  -\n",
  );
});
