// `pier logs -f` outlives a server that goes away: it follows again once the server answers, after the
// last line printed of each instance (their cursors), and ends when the app is deleted. A first connection
// that fails, an error answer, or a server that does not come back ends it with an error.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiClient } from "../../../src/cli/client.js";
import type { Context } from "../../../src/cli/command.js";
import { followRuntimeLogs } from "../../../src/cli/follow-runtime.js";
import type { RuntimeLogLine } from "../../../src/cli/schemas.js";
import { memoryIo } from "./io.js";

const at = (n: number) => `2026-11-29T10:00:0${n}.${n}00000000Z`;
/** A followed line of the instance `id` (as a server sends it: with its cursor). */
const line = (n: number, text: string, id = "c-1"): RuntimeLogLine => ({
  at: at(n),
  instance: 1,
  stream: "stdout",
  line: text,
  cursor: `${id}@${at(n)}@1`,
});
/** The same, from a server older than cursors. */
const bare = (n: number, text: string): RuntimeLogLine => {
  const { cursor: _, ...l } = line(n, text);
  return l;
};
const stream = (...ls: RuntimeLogLine[]) => ({
  status: 200,
  text: ls.map((l) => `data: ${JSON.stringify(l)}\n\n`).join(""),
});
const unreachable = "unreachable" as const;
const appGone = {
  status: 404,
  text: JSON.stringify({ error: { code: "APP_NOT_FOUND", message: "No app 'web'." } }),
};

/** A context whose server answers each request with the next of `answers`; the queries it was sent. */
function setUp(answers: ({ status: number; text: string } | typeof unreachable)[]) {
  const queries: URLSearchParams[] = [];
  const fakeFetch = (async (input: string | URL | Request) => {
    queries.push(new URL(String(input)).searchParams);
    const a = answers.shift() ?? appGone;
    if (a === unreachable) throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    return new Response(a.text, { status: a.status });
  }) as typeof fetch;
  const io = memoryIo();
  const ctx: Context = {
    ...io,
    out: (t) => io.out(t),
    err: (t) => io.err(t),
    client: () => new ApiClient({ url: "http://pier.test", token: "t", source: "test" }, fakeFetch),
    commands: [],
    version: "0",
  };
  const printed: string[] = [];
  const follow = (o: { comeBackMs?: number } = {}) =>
    followRuntimeLogs(ctx, "web", { tail: 10, retryMs: 1, ...o }, (l) => void printed.push(l.line));
  return { io, queries, printed, follow };
}

describe("pier logs -f when the server goes", () => {
  test("followed again after each instance's last line once the server answers; the app's deletion ends it", async () => {
    const { io, queries, printed, follow } = setUp([
      stream(line(1, "a", "c-2"), line(2, "b")),
      unreachable,
      unreachable,
      stream(line(3, "c")),
      appGone,
    ]);
    assert.equal(await follow(), 0);
    assert.deepEqual(printed, ["a", "b", "c"]);
    assert.equal(queries[0]?.get("tail"), "10");
    assert.equal(queries[0]?.get("after"), null);
    assert.equal(
      queries[3]?.get("after"),
      `c-2@${at(1)}@1,c-1@${at(2)}@1`,
      "the cursor of each instance's last line printed",
    );
    assert.equal(queries[3]?.get("since"), at(2), "an instance without a cursor: from the latest line");
    assert.equal(queries[3]?.get("tail"), null);
    assert.equal(queries[4]?.get("after"), `c-2@${at(1)}@1,c-1@${at(3)}@1`);
    // Said once each time the server goes (twice here), not at each attempt.
    assert.equal(io.stderr.match(/following again once it answers/g)?.length, 2, io.stderr);
    assert.match(io.stderr, /pier: the server closed the log stream; following again/);
    assert.match(io.stderr, /pier: following again\.\n/);
    assert.match(io.stderr, /The app web was deleted: its log ends here\.\n$/);
  });

  test("from a server older than cursors, the lines printed before it went are not printed again", async () => {
    const { queries, printed, follow } = setUp([
      stream(bare(1, "a"), bare(2, "b")),
      unreachable,
      stream(bare(2, "b"), bare(3, "c")),
      appGone,
    ]);
    assert.equal(await follow(), 0);
    assert.deepEqual(printed, ["a", "b", "c"]);
    assert.equal(queries[2]?.get("since"), at(2));
    assert.equal(queries[2]?.get("after"), null);
  });

  test("a first connection that fails is an error, as in any command", async () => {
    const { follow } = setUp([unreachable]);
    await assert.rejects(follow(), /cannot reach the Pier server at http:\/\/pier\.test: ECONNREFUSED/);
  });

  test("a server that does not come back ends the follow with an error naming it", async () => {
    const { follow } = setUp([stream(line(1, "a")), ...Array<typeof unreachable>(50).fill(unreachable)]);
    await assert.rejects(
      follow({ comeBackMs: 20 }),
      /the Pier server has not answered for 0 s: stopped following/,
    );
  });

  test("an error answer when following again ends it with that error", async () => {
    const denied = {
      status: 401,
      text: JSON.stringify({ error: { code: "UNAUTHORIZED", message: "Bad token." } }),
    };
    const { printed, follow } = setUp([stream(line(1, "a")), denied]);
    await assert.rejects(follow(), /Bad token\./);
    assert.deepEqual(printed, ["a"]);
  });
});
