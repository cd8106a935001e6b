// A throw that escapes every handler, or a rejection no one catches, ends pier server with a fatal log
// record carrying the stack, and a non-zero exit code (issue 15: the control plane once died silently).
// Each case runs in a child process, as pier server does.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "../../../src/server");

/** Runs `body` after exitOnCrash is installed, with stderr dropped: only the log (stdout) is kept. */
function crashWith(body: string) {
  const script = [
    `import { exitOnCrash } from ${JSON.stringify(join(SRC, "crash.js"))};`,
    `import { createLogger } from ${JSON.stringify(join(SRC, "logging.js"))};`,
    `exitOnCrash(createLogger("info"));`,
    body,
  ].join("\n");
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "ignore"],
    encoding: "utf8",
    timeout: 20_000,
  });
  const records = r.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number; msg: string; crash: string; err?: { stack?: string } });
  return { status: r.status, records };
}

describe("a crash of pier server leaves a trace", () => {
  const cases: [string, string, string, RegExp][] = [
    [
      "a throw in an event listener",
      `import { EventEmitter } from "node:events"; const e = new EventEmitter(); e.on("x", () => { throw new Error("boom in a listener"); }); setTimeout(() => e.emit("x"), 10);`,
      "uncaught exception",
      /boom in a listener/,
    ],
    [
      "a stream 'error' with no listener",
      `import { PassThrough } from "node:stream"; const s = new PassThrough(); setTimeout(() => s.destroy(new Error("EPIPE-like stream failure")), 10);`,
      "uncaught exception",
      /EPIPE-like stream failure/,
    ],
    [
      "a rejection no one catches",
      `void (async () => { await new Promise((r) => setTimeout(r, 10)); throw new Error("rejected in a background task"); })();`,
      "unhandled rejection",
      /rejected in a background task/,
    ],
  ];
  for (const [name, body, kind, stack] of cases) {
    test(`${name}: one fatal record with the stack, exit code 70`, () => {
      const { status, records } = crashWith(body);
      assert.equal(status, 70);
      const fatal = records.filter((r) => r.level === 60);
      assert.equal(fatal.length, 1, JSON.stringify(records));
      assert.equal(fatal[0]?.crash, kind);
      assert.match(fatal[0]?.msg ?? "", /pier server crashed .* exiting with code 70/);
      assert.match(fatal[0]?.err?.stack ?? "", stack);
      assert.match(fatal[0]?.err?.stack ?? "", /\n\s+at /, "the stack, not only the message");
    });
  }
});
