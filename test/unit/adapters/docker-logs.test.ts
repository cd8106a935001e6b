// The engine's log frames (src/adapters/engine/docker-logs.ts): 8-byte headers [stream, 0, 0, 0, size] and a
// payload, parsed by hand so that a follower's backpressure reaches the engine (ADR 0025). The lines must not
// depend on where the engine's chunks are cut: inside a header, inside a payload, inside a UTF-8 character.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import { LogFrames, logLines, noteLine, pumpLogs } from "../../../src/adapters/engine/docker-logs.js";
import type { InstanceLogLine } from "../../../src/core/ports.js";

function frame(stream: 1 | 2 | 3, text: string): Buffer {
  const payload = Buffer.from(text, "utf8");
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

const AT = "2026-01-01T00:00:00.000000000Z";
const show = (ls: InstanceLogLine[]) => ls.map((l) => `${l.stream} ${l.at} ${l.line}`);

/** Every frame of a log whose lines are cut across frames: one line in two, a character in two. */
const e = Buffer.from("é", "utf8");
const log = Buffer.concat([
  frame(1, `${AT} hello wo`),
  frame(2, `${AT} an error\n`),
  frame(1, "rld\n"),
  frame(1, `${AT} caf`),
  // "é" is two bytes: each in a frame of its own.
  Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 0, 0, 1]), e.subarray(0, 1)]),
  Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 0, 0, 1]), e.subarray(1)]),
  frame(1, ` ☕\n${AT} last without end`),
]);
const want = [
  `stderr ${AT} an error`,
  `stdout ${AT} hello world`,
  `stdout ${AT} café ☕`,
  `stdout ${AT} last without end`,
];

describe("the engine's log frames", () => {
  test("the engine's own note (stream 3: a swarm task's node is down) is not a line of the app's", () => {
    const why =
      "Error grabbing logs: rpc error: code = Unknown desc = warning: incomplete log stream. some logs could not be retrieved for the following reasons: node 7epkvkseh3ie is not available";
    const notes: string[] = [];
    const lines = logLines(
      Buffer.concat([frame(1, `${AT} one\n`), frame(3, `${why}\n`), frame(1, `${AT} two\n`)]),
      (n) => notes.push(n),
    );
    assert.deepEqual(show(lines), [`stdout ${AT} one`, `stdout ${AT} two`]);
    assert.deepEqual(notes, [why]);
    // Said as Pier's, on stderr, naming the node by its name.
    const line = noteLine(why, new Map([["7epkvkseh3ie", "node2"]]));
    assert.equal(line.stream, "stderr");
    assert.equal(line.line, "pier: some of this instance's log could not be read (node2 is not available)");
    assert.ok(!Number.isNaN(Date.parse(line.at)), "timed");
  });

  test("read whole: each stream's lines, a line cut across frames and a character cut in two joined", () => {
    assert.deepEqual(show(logLines(log)), want);
  });

  test("the same lines wherever the chunks are cut (every cut in two, and byte by byte)", () => {
    for (let cut = 1; cut < log.length; cut++) {
      const frames = new LogFrames();
      const got = [...frames.push(log.subarray(0, cut)), ...frames.push(log.subarray(cut)), ...frames.end()];
      assert.deepEqual(show(got), want, `cut at ${cut}`);
    }
    const frames = new LogFrames();
    const got: InstanceLogLine[] = [];
    for (let i = 0; i < log.length; i++) got.push(...frames.push(log.subarray(i, i + 1)));
    got.push(...frames.end());
    assert.deepEqual(show(got), want);
  });

  test("followed: the next chunk is read only once the sink took the last one's lines", async () => {
    let pulled = 0;
    const chunks = [frame(1, `${AT} one\n`), frame(1, `${AT} two\n`), frame(1, `${AT} three\n`)];
    const stream = Readable.from(
      (function* () {
        for (const c of chunks) {
          pulled++;
          yield c;
        }
      })(),
      { highWaterMark: 1, objectMode: true },
    );
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const pumping = pumpLogs(
      stream,
      (l) => {
        seen.push(l.line);
        // The sink holds the first line until the test lets it go.
        if (l.line === "one") return new Promise<void>((r) => (release = r));
      },
      new AbortController().signal,
    );
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen, ["one"]);
    const whileHeld = pulled;
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(pulled, whileHeld, "nothing more is read while the sink holds a line");
    release();
    await pumping;
    assert.deepEqual(seen, ["one", "two", "three"]);
  });
});
