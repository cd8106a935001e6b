// Runs every compiled test file with node's built-in runner: unit tests first (fast, in parallel),
// then the end-to-end tests one file at a time (they share dockerd and build images), then the disruptive
// ones (they restart dockerd under every app on the machine), last and one at a time. One `node --test` call,
// so one summary with the totals.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

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
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", "--test-reporter=spec", ...files], {
  stdio: "inherit",
});
process.exit(r.status ?? 1);
