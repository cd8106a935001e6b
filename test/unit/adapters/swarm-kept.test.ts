// What the Swarm driver keeps of a stopped instance (src/adapters/engine/swarm-kept.ts): its lines once each,
// the newest 1 MiB, across stops, in private files that go when the instance is removed.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { KEPT_BYTES, KeptLogs, mergeLines, newest } from "../../../src/adapters/engine/swarm-kept.js";
import type { InstanceLogLine } from "../../../src/core/ports.js";

const line = (at: number, text: string, stream: "stdout" | "stderr" = "stdout"): InstanceLogLine => ({
  at: new Date(Date.UTC(2026, 10, 29, 0, 0, at)).toISOString(),
  stream,
  line: text,
});

describe("the lines kept of a stopped swarm instance", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-kept-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("two reads of one log merge to each line once, in time order; the same text at two times stays twice", () => {
    const a = [line(1, "ready"), line(3, "working")];
    const b = [line(3, "working"), line(2, "ready"), line(4, "bye"), line(3, "working", "stderr")];
    assert.deepEqual(
      mergeLines(a, b).map((l) => `${l.at.slice(17, 19)} ${l.stream} ${l.line}`),
      ["01 stdout ready", "02 stdout ready", "03 stdout working", "03 stderr working", "04 stdout bye"],
    );
  });

  test("only the newest lines that fit are kept, and always the last one", () => {
    const lines = Array.from({ length: 10 }, (_, i) => line(i, "x".repeat(60)));
    // 100 bytes a line as counted (60 of text and 40 for its time and stream).
    assert.deepEqual(newest(lines, 350), lines.slice(7));
    assert.deepEqual(newest([line(1, "y".repeat(500))], 100).length, 1);
    assert.deepEqual(newest([], 100), []);
  });

  test("a stop's lines and end are kept, a second stop's after them, and removal forgets both", async () => {
    const kept = new KeptLogs(dir);
    assert.equal(await kept.end("svc1"), null);
    assert.deepEqual(await kept.lines("svc1"), []);
    // The first stop: the log's tail comes first, then the line printed on SIGTERM.
    const first = kept.follow("svc1", async (onLine, signal) => {
      onLine(line(1, "ready"));
      setTimeout(() => onLine(line(5, "bye")), 50);
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
    });
    await first.end({ state: "complete", exitCode: 0 });
    assert.deepEqual(await kept.end("svc1"), { state: "complete", exitCode: 0 });
    assert.deepEqual(
      (await kept.lines("svc1")).map((l) => l.line),
      ["ready", "bye"],
    );
    // Started again and stopped again: the swarm's log of the new task has some of the same lines.
    const second = kept.follow("svc1", async (onLine) => {
      onLine(line(5, "bye"));
      onLine(line(9, "ready again"));
      onLine(line(10, "killed"));
    });
    await second.end({ state: "failed", exitCode: 137 });
    assert.deepEqual(
      (await kept.lines("svc1")).map((l) => l.line),
      ["ready", "bye", "ready again", "killed"],
    );
    // Read by another process (a restarted pier server): from the files.
    assert.deepEqual(await new KeptLogs(dir).end("svc1"), { state: "failed", exitCode: 137 });
    for (const f of readdirSync(dir)) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
    await kept.drop("svc1");
    assert.equal(await kept.end("svc1"), null);
    assert.deepEqual(await kept.lines("svc1"), []);
    assert.deepEqual(readdirSync(dir), []);
  });

  test("two stops of one instance at once (a retire and a pier stop) keep a whole record", async () => {
    const kept = new KeptLogs(dir);
    const stop = (text: string) =>
      kept.follow("svcC", async (onLine) => onLine(line(2, text))).end({ state: "complete", exitCode: 0 });
    await Promise.all([stop("from one"), stop("from the other")]);
    const lines = (await new KeptLogs(dir).lines("svcC")).map((l) => l.line);
    assert.ok(lines.length >= 1 && lines.every((l) => l.startsWith("from")), lines.join(", "));
    assert.deepEqual(await new KeptLogs(dir).end("svcC"), { state: "complete", exitCode: 0 });
    await kept.drop("svcC");
    assert.deepEqual(readdirSync(dir), [], "no temporary file left");
  });

  test("what was kept of services that are gone is swept; the others' stays", async () => {
    const kept = new KeptLogs(dir);
    for (const id of ["svcA", "svcB"])
      await kept
        .follow(id, async (onLine) => onLine(line(1, `${id} ends`)))
        .end({ state: "complete", exitCode: 0 });
    assert.equal(await kept.sweep(new Set(["svcB"])), 2, "svcA's two files");
    assert.equal(await kept.end("svcA"), null);
    assert.deepEqual(await kept.lines("svcA"), []);
    assert.deepEqual(
      (await kept.lines("svcB")).map((l) => l.line),
      ["svcB ends"],
    );
    await kept.drop("svcB");
  });

  test("a log that cannot be followed (its node is down) still keeps the end; a chatty one its newest 1 MiB", async () => {
    const kept = new KeptLogs(dir);
    await kept
      .follow("svc2", async () => {
        throw new Error("node down");
      })
      .end({ state: "shutdown", exitCode: null });
    assert.deepEqual(await kept.end("svc2"), { state: "shutdown", exitCode: null });
    const chatty = kept.follow("svc3", async (onLine) => {
      for (let i = 0; i < 30_000; i++)
        onLine({
          ...line(1, `${i} ${"z".repeat(60)}`),
          at: `2026-11-29T00:00:01.${String(i).padStart(6, "0")}Z`,
        });
    });
    await chatty.end({ state: "complete", exitCode: 0 });
    const lines = await kept.lines("svc3");
    const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l.line) + 40, 0);
    assert.ok(bytes <= KEPT_BYTES && bytes > KEPT_BYTES - 200, `${bytes} bytes kept`);
    assert.equal(lines.at(-1)?.line.split(" ")[0], "29999", "the newest line is kept");
  });
});
