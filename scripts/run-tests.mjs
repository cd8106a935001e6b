// Runs every compiled test file with node's built-in runner: unit tests first (fast),
// then the end-to-end tests one file at a time (they share dockerd and build images), then the disruptive
// ones (they restart dockerd under every app on the machine), last and one at a time. One run of node's test runner,
// so one summary with the totals.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";

function find(dir) {
  let out = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries.sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(find(p));
    else if (p.endsWith(".test.js")) out.push(p);
  }
  return out;
}

const only = process.argv.slice(2);
const pick = (files) => (only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files);
const unit = pick(find("dist/test/unit"));
const e2e = pick(find("dist/test/e2e"));
const disruptive = pick(find("dist/test/e2e-disruptive"));
const files = [...unit, ...e2e, ...disruptive];
if (files.length === 0) {
  console.error("run-tests: no test file found under dist/test (did the build run?)");
  process.exit(1);
}
// `node --test FILES` would sort the files by path (the disruptive ones would go first); run() keeps this
// order. The spec reporter prints one summary with the totals.
let failed = false;
const stream = run({ files, concurrency: 1 });
stream.on("test:fail", (t) => {
  if (!t.todo) failed = true;
});
stream.compose(new spec()).pipe(process.stdout);
stream.once("close", () => {
  process.exitCode = failed ? 1 : 0;
});
