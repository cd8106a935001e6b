// The one line reader (src/core/lines.ts): characters split across chunks stay whole, CRLF, last lines, bounds.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LineReader, readLines, splitLines } from "../../../src/core/lines.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("LineReader", () => {
  it("keeps a multi-byte character whole when a chunk ends inside it", () => {
    const all = bytes("héllo wörld 🚀\nnext\n");
    const r = new LineReader();
    const out: string[] = [];
    // Every cut point, byte by byte: the 2-byte é, ö and the 4-byte rocket are each split across chunks.
    for (const b of all) out.push(...r.push(Uint8Array.of(b)));
    out.push(...r.end());
    assert.deepEqual(out, ["héllo wörld 🚀", "next"]);
  });
  it("splits at each cut point of a 4-byte character without a replacement character", () => {
    const all = bytes("a🚀b\n");
    for (let cut = 1; cut < all.length; cut++) {
      const r = new LineReader();
      const out = [...r.push(all.subarray(0, cut)), ...r.push(all.subarray(cut)), ...r.end()];
      assert.deepEqual(out, ["a🚀b"], `cut at byte ${cut}`);
    }
  });
  it("gives a last line without a line end at the end", () => {
    const r = new LineReader();
    assert.deepEqual(r.push(bytes("a\nb")), ["a"]);
    assert.deepEqual(r.end(), ["b"]);
    assert.deepEqual(r.end(), []);
  });
  it("drops the \\r of CRLF only when asked, even when \\r and \\n arrive in two chunks", () => {
    const crlf = new LineReader({ crlf: true });
    assert.deepEqual([...crlf.push("a\r"), ...crlf.push("\nb\r\n"), ...crlf.end()], ["a", "b"]);
    const lf = new LineReader();
    assert.deepEqual([...lf.push("a\r\n"), ...lf.end()], ["a\r"]);
  });
  it("cuts a line longer than its bound into pieces, and never between the halves of a surrogate pair", () => {
    const r = new LineReader({ maxChars: 4 });
    assert.deepEqual(r.push("abcdefghij"), ["abcd", "efgh"]);
    assert.deepEqual([...r.push("\n"), ...r.end()], ["ij"]);
    const emoji = new LineReader({ maxChars: 4 });
    assert.deepEqual([...emoji.push("abc🚀de\n"), ...emoji.end()], ["abc", "🚀de"]);
  });
  it("keeps empty lines", () => assert.deepEqual(splitLines("a\n\nb"), ["a", "", "b"]));
});

describe("splitLines and readLines", () => {
  it("a final line end makes no extra line; an empty text has none", () => {
    assert.deepEqual(splitLines("a\nb\n"), ["a", "b"]);
    assert.deepEqual(splitLines(""), []);
    assert.deepEqual(splitLines("\n"), [""]);
  });
  it("reads the lines of an async stream of byte chunks", async () => {
    const all = bytes("ünïcode\r\nlast");
    async function* chunks() {
      for (let i = 0; i < all.length; i += 3) yield all.subarray(i, i + 3);
    }
    const got: string[] = [];
    for await (const l of readLines(chunks(), { crlf: true })) got.push(l);
    assert.deepEqual(got, ["ünïcode", "last"]);
  });
});
