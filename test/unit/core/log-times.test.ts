// A log line's time as a key that sorts: the engine's times have any number of fraction digits.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { timeKey } from "../../../src/core/log-times.js";

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
