import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseSse, parseSseParts, type SseEvent } from "../../../src/core/sse.js";

async function collect(chunks: (string | Uint8Array)[]): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  async function* source() {
    yield* chunks;
  }
  for await (const e of parseSse(source())) events.push(e);
  return events;
}

describe("SSE parsing", () => {
  test("data events, then a named end event", async () => {
    assert.deepEqual(await collect(['data: {"line":"a"}\n\n', 'event: end\ndata: {"state":"failed"}\n\n']), [
      { event: "message", data: '{"line":"a"}' },
      { event: "end", data: '{"state":"failed"}' },
    ]);
  });

  test("chunks split anywhere, even inside a UTF-8 character", async () => {
    const bytes = new TextEncoder().encode("data: héllo\r\n\r\ndata: x\n\n");
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
    assert.deepEqual(await collect(chunks), [
      { event: "message", data: "héllo" },
      { event: "message", data: "x" },
    ]);
  });

  test("comments and ids are skipped; several data lines join with \\n; no space after the colon", async () => {
    assert.deepEqual(await collect([": keep-alive\n\nid: 3\ndata:one\ndata: two\n\n"]), [
      { event: "message", data: "one\ntwo" },
    ]);
  });

  test("with their parts, a comment between events comes as it stands; one among an event's fields does not", async () => {
    const parts = [];
    async function* source() {
      yield ": alive\n\ndata: a\n: inside\ndata: b\n\n";
      yield ":bare\n";
    }
    for await (const p of parseSseParts(source())) parts.push(p);
    assert.deepEqual(parts, [{ comment: "alive" }, { event: "message", data: "a\nb" }, { comment: "bare" }]);
  });

  test("an event without data is not delivered; a last event without a blank line is", async () => {
    assert.deepEqual(await collect(["event: ping\n\n", "event: end\ndata: {}"]), [
      { event: "end", data: "{}" },
    ]);
  });
});
