// A log line's time as a key that sorts: the engine's times have any number of fraction digits.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cursorText, MAX_CURSORS, parseCursors, timeKey } from "../../../src/core/log-times.js";

describe("the engine's times as keys", () => {
  const cases: [string, string][] = [
    ["2026-11-29T07:55:01.1Z", "2026-11-29T07:55:01.100000000Z"],
    ["2026-11-29T07:55:01.123456789Z", "2026-11-29T07:55:01.123456789Z"],
    ["2026-11-29T07:55:01Z", "2026-11-29T07:55:01.000000000Z"],
    ["2026-11-29T07:55:01.123Z", "2026-11-29T07:55:01.123000000Z"],
  ];
  for (const [at, key] of cases) test(`${at} -> ${key}`, () => assert.equal(timeKey(at), key));

  test("keys sort as the times do, whatever their digits", () => {
    assert.ok(timeKey("2026-11-29T07:55:01.1Z") < timeKey("2026-11-29T07:55:01.12Z"));
    assert.ok("2026-11-29T07:55:01.1Z" > "2026-11-29T07:55:01.12Z", "as text they do not");
  });
});

describe("the cursors of followed lines", () => {
  const key = "2026-11-29T07:55:01.100000000Z";

  test("a cursor made is read back, by instance; the last of one instance counts", () => {
    const text = [cursorText("c-1", { key, n: 2 }), cursorText("svc.1_x", { key, n: 1 })].join(",");
    assert.deepEqual(
      [...parseCursors(text)],
      [
        ["c-1", { key, n: 2 }],
        ["svc.1_x", { key, n: 1 }],
      ],
    );
    assert.deepEqual([...parseCursors("")], []);
  });

  const refused: [string, RegExp][] = [
    ["c-1", /'c-1' is not the cursor of a followed log line/],
    [`c-1@${key}@0`, /is not the cursor/],
    [`c-1@2026-11-29T07:55:01Z@1`, /is not the cursor/],
    [`c-1@not-a-time@1`, /is not the cursor/],
    [`c 1@${key}@1`, /is not the cursor/],
    [`c-1@${key}@1@2`, /is not the cursor/],
    [
      Array(MAX_CURSORS + 1)
        .fill(`c-1@${key}@1`)
        .join(","),
      /at most 100 cursors, not 101/,
    ],
  ];
  for (const [text, why] of refused)
    test(`refused: ${text.slice(0, 60)}`, () => assert.throws(() => parseCursors(text), why));
});
