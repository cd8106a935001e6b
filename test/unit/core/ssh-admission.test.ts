// Which SSH connection gets an unauthenticated slot: a few addresses cannot keep everyone else out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { admit, type Unauthenticated } from "../../../src/core/ssh-admission.js";

const from = (source: string | null, n: number, since = 0): Unauthenticated[] =>
  Array.from({ length: n }, (_, i) => ({ source, openedAt: since + i }));

describe("admit", () => {
  const limits = { max: 8, perSource: 2 };
  const cases: {
    name: string;
    held: Unauthenticated[];
    source: string | null;
    want: "accept" | "evict" | "per-source" | "full";
    evicts?: string;
  }[] = [
    { name: "room: accepted", held: from("a", 2), source: "b", want: "accept" },
    { name: "an address at its own cap is refused", held: from("a", 2), source: "a", want: "per-source" },
    {
      name: "full with 4 addresses of 2: a newcomer takes a slot of the largest",
      held: [...from("a", 2), ...from("b", 2), ...from("c", 2), ...from("d", 2)],
      source: "e",
      want: "evict",
      evicts: "a",
    },
    {
      name: "full with 8 addresses of 1: a newcomer is refused (it would hold as many as they do)",
      held: ["a", "b", "c", "d", "e", "f", "g", "h"].flatMap((s) => from(s, 1)),
      source: "z",
      want: "full",
    },
    {
      name: "one of the crowding addresses cannot evict another crowding address of the same size",
      held: [...from("a", 2), ...from("b", 2), ...from("c", 2), ...from("d", 1), ...from("e", 1)],
      source: "d",
      want: "full",
    },
    {
      name: "the builds' socket (no address) is refused when full, never evicts",
      held: from(null, 8),
      source: null,
      want: "full",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = admit(c.held, c.source, limits);
      const got = v.accept ? (v.evict ? "evict" : "accept") : v.why;
      assert.equal(got, c.want);
      if (c.evicts) assert.equal(v.accept && v.evict?.source, c.evicts);
    });
  }

  it("evicts the oldest connection of the largest holder", () => {
    const held = [...from("a", 1, 50), ...from("b", 3, 10), ...from("c", 3, 100), ...from("d", 1)];
    const v = admit(held, "z", { max: 8, perSource: 4 });
    assert.ok(v.accept && v.evict);
    assert.deepEqual(v.evict, { source: "b", openedAt: 10 });
  });
});
