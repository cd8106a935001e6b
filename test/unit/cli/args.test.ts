import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  APP,
  checkFlags,
  countFlag,
  FORMAT,
  HELP,
  humanJson,
  parseFlags,
  splitCommand,
  subcommand,
  timeFlag,
} from "../../../src/cli/args.js";
import type { ApiClient } from "../../../src/cli/client.js";
import { UsageError } from "../../../src/cli/errors.js";
import { run } from "../../../src/cli/run.js";
import { memoryIo } from "./io.js";

describe("splitCommand: the command is the first word that is not a flag or a flag's value", () => {
  const cases: [string[], string | undefined, string[]][] = [
    [["apps"], "apps", []],
    [["apps", "--format", "json"], "apps", ["--format", "json"]],
    [["--app", "web", "status"], "status", ["--app", "web"]],
    [["-a", "web", "logs", "-f"], "logs", ["-a", "web", "-f"]],
    [["--format", "json", "apps"], "apps", ["--format", "json"]],
    [["--app=web", "status"], "status", ["--app=web"]],
    [["env", "set", "A", "1"], "env", ["set", "A", "1"]],
    [["--version"], undefined, ["--version"]],
    [[], undefined, []],
    [["--", "apps"], undefined, ["--", "apps"]],
  ];
  for (const [argv, command, rest] of cases) {
    test(argv.join(" ") || "(nothing)", () => {
      assert.deepEqual(splitCommand(argv), { command, rest });
    });
  }
});

describe("parseFlags", () => {
  const options = { ...HELP, ...APP, ...FORMAT, follow: { type: "boolean", short: "f" } } as const;

  test("reads long, short and = forms, and positionals anywhere", () => {
    const { values, positionals } = parseFlags(
      "logs",
      ["-a", "web", "x", "--format=json", "-f", "y"],
      options,
    );
    assert.equal(values.app, "web");
    assert.equal(values.format, "json");
    assert.equal(values.follow, true);
    assert.deepEqual(positionals, ["x", "y"]);
  });

  test("after --, a dash is a value", () => {
    assert.deepEqual(parseFlags("env", ["set", "N", "--", "-1"], options).positionals, ["set", "N", "-1"]);
  });

  test("an unknown option is a usage error naming it and the command, with the command list", () => {
    assert.throws(
      () => parseFlags("apps", ["--frobnicate"], options),
      (e: unknown) =>
        e instanceof UsageError &&
        e.exitCode === 2 &&
        e.message === "unknown option '--frobnicate' for 'pier apps'" &&
        e.listCommands &&
        e.command === "apps",
    );
  });

  test("a missing value is a usage error naming the option", () => {
    assert.throws(
      () => parseFlags("status", ["--app"], options),
      (e: unknown) => e instanceof UsageError && /--app/.test(e.message),
    );
  });
});

describe("checkFlags: every problem, each as --flag: rule", () => {
  const schema = z.object({
    format: humanJson,
    instances: countFlag(1).optional(),
    since: timeFlag.optional(),
  });

  test("defaults and conversions", () => {
    assert.deepEqual(checkFlags("x", schema, { instances: "3" }), { format: "human", instances: 3 });
  });

  test("all problems at once", () => {
    assert.throws(
      () => checkFlags("scale", schema, { format: "yaml", instances: "0", since: "yesterday" }),
      (e: unknown) => {
        assert.ok(e instanceof UsageError);
        assert.deepEqual(e.problems, [
          "--format: must be one of human, json",
          "--instances: must be a whole number, at least 1",
          "--since: must be an ISO time (2026-01-31T12:00:00Z) or a duration such as 10m or 2h",
        ]);
        return true;
      },
    );
  });

  const times: [string, boolean][] = [
    ["10m", true],
    ["2h", true],
    ["1d", true],
    ["30s", true],
    ["2026-01-31T12:00:00Z", true],
    ["2026-01-31", true],
    ["yesterday", false],
    ["10", false],
    ["-5m", false],
    ["2026-13-45", false],
  ];
  for (const [value, ok] of times) {
    test(`--since ${value} is ${ok ? "accepted" : "refused"}`, () => {
      assert.equal(timeFlag.safeParse(value).success, ok);
    });
  }
});

describe("run: usage errors exit 2 without a server", () => {
  const noServer = () => {
    throw new Error("no server in this test");
  };
  const pier = async (argv: string[], cwd?: string) => {
    const io = memoryIo({ cwd });
    const code = await run(argv, { io, makeClient: noServer as () => ApiClient, version: "9.9.9" });
    return { code, stdout: io.stdout, stderr: io.stderr };
  };

  test("unknown command: named, with the command list", async () => {
    const r = await pier(["frobnicate"]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^pier: unknown command 'frobnicate'\n/);
    assert.match(r.stderr, /Commands: server, create, apps, status, .*env.*ssh-keys/);
  });

  test("unknown flag of a command: named, with the command list and a pointer to its help", async () => {
    const r = await pier(["apps", "--colour"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /pier: unknown option '--colour' for 'pier apps'/);
    assert.match(r.stderr, /Commands: /);
    assert.match(r.stderr, /Run 'pier apps --help'/);
  });

  test("bad values of create are listed together", async () => {
    const r = await pier(["create", "--type", "cobol", "--flavor", "huge", "x"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /pier: --type: must be one of docker, node, phpserver\n/);
    assert.match(r.stderr, /pier: --flavor: must be one of pico, nano, XS, S, M, L, XL\n/);
  });

  test("--help on a command prints its usage on stdout", async () => {
    const r = await pier(["restart", "--help"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: pier restart/);
    assert.match(r.stdout, /--exit-on deploy-start\|deploy-end/);
    assert.equal(r.stderr, "");
  });

  test("help, --help and --version", async () => {
    assert.match((await pier(["help"])).stdout, /Commands:\n {2}server/);
    assert.match((await pier(["--help"])).stdout, /Usage: pier <command>/);
    assert.match((await pier(["help", "logs"])).stdout, /^Usage: pier logs/);
    assert.deepEqual(await pier(["--version"]), { code: 0, stdout: "pier 9.9.9\n", stderr: "" });
  });

  test("no command: usage error", async () => {
    const r = await pier([]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no command given/);
  });

  test("delete without --yes and without a terminal refuses and says to pass --yes", async () => {
    const r = await pier(["delete", "--app", "web"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--yes/);
  });

  test("scale with nothing to change", async () => {
    const r = await pier(["scale", "--app", "web"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /nothing to change/);
  });

  test("logs --deployment with --tail is refused", async () => {
    const r = await pier(["logs", "--app", "web", "--deployment", "latest", "--tail", "5"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--tail apply to runtime logs/);
  });
});

describe("subcommand: a command's table of subcommands", () => {
  const table = { list: "L", "join-command": "J" };
  test("a known one is its handler", () => {
    assert.equal(subcommand("nodes", table, "join-command", "join-command"), "J");
  });
  test("an unknown one, or a name every object has, is a usage error naming it, the command and what it takes", () => {
    for (const sub of ["frob", "toString", "__proto__"]) {
      assert.throws(
        () => subcommand("nodes", table, sub, "join-command"),
        (e: unknown) =>
          e instanceof UsageError &&
          e.message.includes(`unknown nodes command '${sub}' (expected join-command)`),
      );
    }
  });
});
