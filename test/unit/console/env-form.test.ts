import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changes, masked, type Row, rowsOf, toLines } from "../../../src/console/env-form.js";
import { parseEnvImport } from "../../../src/core/env-import.js";

let k = 1000;
const row = (name: string, value: string): Row => ({ key: k++, name, value, revealed: false });

describe("the console's variables form", () => {
  it("rows are sorted by name, each with its own key", () => {
    const rows = rowsOf({ B: "2", A: "1", a: "3" });
    assert.deepEqual(
      rows.map((r) => r.name),
      ["A", "B", "a"],
    );
    assert.equal(new Set(rows.map((r) => r.key)).size, 3);
  });

  const saved = { KEEP: "1", CHANGE: "old", DROP: "x" };
  const cases: {
    name: string;
    rows: Row[];
    set: Record<string, string>;
    unset: string[];
    problems: number;
  }[] = [
    { name: "nothing changed", rows: rowsOf(saved), set: {}, unset: [], problems: 0 },
    {
      name: "a change, a removal and a new variable, at once",
      rows: [row("KEEP", "1"), row("CHANGE", "new"), row("NEW", "")],
      set: { CHANGE: "new", NEW: "" },
      unset: ["DROP"],
      problems: 0,
    },
    {
      name: "blank rows are ignored",
      rows: [...rowsOf(saved), row("", "")],
      set: {},
      unset: [],
      problems: 0,
    },
    {
      name: "an invalid name is a problem and is not sent",
      rows: [...rowsOf(saved), row("1BAD", "v")],
      set: {},
      unset: [],
      problems: 1,
    },
    {
      name: "a value without a name is a problem",
      rows: [...rowsOf(saved), row("", "v")],
      set: {},
      unset: [],
      problems: 1,
    },
    {
      name: "a platform variable is a problem",
      rows: [...rowsOf(saved), row("PORT", "9")],
      set: {},
      unset: [],
      problems: 1,
    },
    {
      name: "a name given twice is a problem",
      rows: [...rowsOf(saved), row("KEEP", "2")],
      set: { KEEP: "2" },
      unset: [],
      problems: 1,
    },
    {
      name: "renaming a variable sets the new name and unsets the old one",
      rows: [row("KEEP", "1"), row("CHANGED", "old"), row("DROP", "x")],
      set: { CHANGED: "old" },
      unset: ["CHANGE"],
      problems: 0,
    },
    {
      name: "a name like an Object property is refused, not lost",
      rows: [...rowsOf(saved), row("constructor", "x")],
      set: {},
      unset: [],
      problems: 1,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = changes(saved, c.rows);
      assert.deepEqual(d.set, c.set);
      assert.deepEqual(d.unset, c.unset);
      assert.equal(d.problems.size, c.problems, [...d.problems.values()].join("; "));
      assert.equal(d.count, Object.keys(c.set).length + c.unset.length);
    });
  }

  it("expert text reads back to the same variables, whatever the values hold", () => {
    const vars: Record<string, string> = {
      PLAIN: "hello world",
      EMPTY: "",
      HASH: "a # not a comment",
      QUOTES: `it's "quoted"`,
      BACKSLASH: "C:\\path\\n",
      NEWLINES: "line 1\nline 2\r\n\tend",
      SPACES: "  padded  ",
      URL: "postgres://u:p@h:5432/db?x=1&y=2",
      EQUALS: "a=b=c",
      UNICODE: "héllo ✓",
    };
    const parsed = parseEnvImport(toLines(rowsOf(vars)));
    assert.deepEqual(parsed.errors, []);
    assert.deepEqual(parsed.vars, vars);
  });

  it("links' secrets and URL passwords are masked until revealed", () => {
    assert.equal(masked("KV_TOKEN", "abcdef"), "****");
    assert.equal(masked("REDIS_URL", "redis://:s3cret@host:6378"), "redis://:****@host:6378");
    assert.equal(
      masked("DATABASE_URL", "postgres://user:pw@db:5432/app"),
      "postgres://user:****@db:5432/app",
    );
    assert.equal(masked("KV_HOST", "pier-addon-x"), "pier-addon-x");
    // A raw `@` in the password hides none of it (it used to show what followed the first `@`).
    assert.equal(
      masked("DATABASE_URL", "postgres://user:p@ss@db:5432/app"),
      "postgres://user:****@db:5432/app",
    );
  });
});
