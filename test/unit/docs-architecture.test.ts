// docs/architecture.md is the newcomers' map: every path it names exists, and every port of
// src/core/ports.ts is on it. A file moved or a port added without the map failing here would leave it wrong.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";

const map = readFileSync("docs/architecture.md", "utf8");
const ports = readFileSync("src/core/ports.ts", "utf8");

test("every path docs/architecture.md names exists", () => {
  const paths = [...map.matchAll(/`((?:src|test|docs|bench)\/[^`\s]*)`/g)].map((m) => m[1] ?? "");
  assert.ok(paths.length > 40, `only ${paths.length} paths found: is the map still there?`);
  const missing = paths.filter((p) => !existsSync(p));
  assert.deepEqual(missing, [], "named in docs/architecture.md but not in the tree");
});

test("every port of src/core/ports.ts is on the map", () => {
  // A port is an interface with methods (data shapes have none): a line `  name(` inside its body.
  const names = [...ports.matchAll(/^export interface (\w+)[^{]*\{\n((?:.|\n)*?)^\}/gm)]
    .filter((m) => /^ {2}\w+\(/m.test(m[2] ?? ""))
    .map((m) => m[1] ?? "");
  assert.ok(names.includes("Engine") || names.includes("ReleaseInstances"), names.join(", "));
  const absent = names.filter((n) => !map.includes(`\`${n}\``));
  assert.deepEqual(absent, [], "ports missing from docs/architecture.md");
});
