// The bounded queues of log followers: past the bound, lines are dropped and a marker says how many.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Dropped,
  DropQueue,
  droppedLine,
  FollowerQueue,
  isDropped,
  LineSplitter,
} from "../../../src/core/bounded-queue.js";

const drain = <T>(q: DropQueue<T>): (T | Dropped)[] => {
  const out: (T | Dropped)[] = [];
  for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
  return out;
};

describe("DropQueue", () => {
  const cases: {
    name: string;
    limits: { items: number; bytes: number };
    steps: (string | "shift")[];
    want: (string | Dropped)[];
  }[] = [
    {
      name: "under the bound, everything in order",
      limits: { items: 3, bytes: 100 },
      steps: ["a", "b"],
      want: ["a", "b"],
    },
    {
      name: "past the item bound, the newest are counted where they were lost",
      limits: { items: 2, bytes: 100 },
      steps: ["a", "b", "c", "d", "e"],
      want: ["a", "b", { dropped: 3 }],
    },
    {
      name: "past the byte bound too",
      limits: { items: 100, bytes: 5 },
      steps: ["aa", "bb", "cc", "d"],
      want: ["aa", "bb", { dropped: 1 }, "d"],
    },
    {
      name: "room again after the reader took some: the marker sits between the kept lines",
      limits: { items: 2, bytes: 100 },
      steps: ["a", "b", "c", "shift", "d", "e"],
      want: ["b", { dropped: 1 }, "d", { dropped: 1 }],
    },
    {
      name: "one line larger than the byte bound is kept when the queue is empty",
      limits: { items: 10, bytes: 3 },
      steps: ["abcdef", "g"],
      want: ["abcdef", { dropped: 1 }],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const q = new DropQueue<string>(c.limits, (s) => s.length);
      const taken: (string | Dropped)[] = [];
      for (const s of c.steps) {
        if (s === "shift") q.shift();
        else q.push(s);
      }
      taken.push(...drain(q));
      assert.deepEqual(taken, c.want);
    });
  }

  it("holds at most its bound however much is pushed, and counts every drop", () => {
    const q = new DropQueue<string>({ items: 10, bytes: 1e9 }, (s) => s.length);
    for (let i = 0; i < 100_000; i++) q.push(`line ${i}`);
    assert.equal(q.size, 10);
    assert.equal(q.length, 11, "10 lines and one marker");
    assert.equal(q.droppedTotal, 99_990);
    const all = drain(q);
    assert.deepEqual(all.at(-1), { dropped: 99_990 });
    assert.equal(q.length, 0);
  });
});

describe("droppedLine", () => {
  it("says how many lines were dropped", () => {
    assert.equal(droppedLine(1), "... 1 line dropped");
    assert.equal(droppedLine(1234), "... 1234 lines dropped");
    assert.ok(isDropped({ dropped: 2 }));
    assert.ok(!isDropped({ line: "x" }));
    assert.ok(!isDropped("x"));
  });
});

describe("FollowerQueue", () => {
  it("a reader waits for lines, takes the marker in place and stops at the end", async () => {
    const q = new FollowerQueue<string>({ items: 2, bytes: 100 }, (s) => s.length);
    const seen: (string | Dropped)[] = [];
    const reader = (async () => {
      for await (const x of q) seen.push(x);
    })();
    q.push("a");
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen, ["a"]);
    for (const s of ["b", "c", "d", "e"]) q.push(s);
    q.end();
    assert.equal(q.push("after end"), false);
    await reader;
    assert.deepEqual(seen, ["a", "b", "c", { dropped: 2 }]);
    assert.equal(q.droppedTotal, 2);
  });
});

describe("LineSplitter", () => {
  it("splits chunks into lines, across chunk boundaries", () => {
    const s = new LineSplitter(100);
    assert.deepEqual(s.push("a\nb"), ["a"]);
    assert.deepEqual(s.push("c\n\nd"), ["bc", ""]);
    assert.deepEqual(s.end(), ["d"]);
    assert.deepEqual(s.end(), []);
  });
  it("never holds more than its bound of a line without an end: it comes out in pieces", () => {
    const s = new LineSplitter(4);
    assert.deepEqual(s.push("abcdefghij"), ["abcd", "efgh"]);
    assert.deepEqual(s.push("kl\nmnopqrstu\n"), ["ijkl", "mnop", "qrst", "u"]);
    let out = 0;
    for (let i = 0; i < 1000; i++) out += s.push("xxx").reduce((n, l) => n + l.length, 0);
    const rest = s.end()[0] ?? "";
    assert.ok(rest.length <= 4, `holds ${rest.length} characters`);
    assert.equal(out + rest.length, 3000, "nothing lost");
  });
});

describe("LineSplitter on bytes", () => {
  it("keeps a UTF-8 character split across two chunks whole", () => {
    const all = new TextEncoder().encode("é\n");
    const s = new LineSplitter(100);
    assert.deepEqual([...s.push(all.subarray(0, 1)), ...s.push(all.subarray(1)), ...s.end()], ["é"]);
  });
});
