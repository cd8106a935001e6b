// Runs every compiled test file with node's built-in runner, in one run, so one summary with the totals
// (CI reads it). Unit tests first, their files in parallel (each in its own process; they share no port,
// folder or global: ports are 0, folders mkdtemp); then the end-to-end tests one file at a time (they share
// dockerd and build images); then the disruptive ones (they restart dockerd under every app on the machine),
// last and one at a time. `--unit` runs the unit files alone (`npm run test:unit`). ADR 0027.
// SIGINT, SIGTERM or SIGHUP ends the run: the test files' processes it started are ended (node's run()
// aborted: it SIGTERMs them; the e2e harness's `pier server` children follow their test process), then it
// exits non-zero; a second signal ends this process at once.

import { readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
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

const args = process.argv.slice(2);
const unitOnly = args.includes("--unit");
const only = args.filter((a) => a !== "--unit");
const pick = (files) => (only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files);
const unit = pick(find("dist/test/unit"));
const e2e = unitOnly ? [] : pick(find("dist/test/e2e"));
const disruptive = unitOnly ? [] : pick(find("dist/test/e2e-disruptive"));
// The swarm lab's files (test/e2e-swarm, ADR 0030) start three dockerd's in namespaces of their own (about
// 2 minutes, 500 MiB while they run): part of the default set, after the one-machine files.
const swarm = unitOnly ? [] : pick(find("dist/test/e2e-swarm"));
if (unit.length + e2e.length + disruptive.length + swarm.length === 0) {
  console.error("run-tests: no test file found under dist/test (did the build run?)");
  process.exit(1);
}

// One reporter over the phases: node's run() takes one concurrency per call, so the unit phase (parallel)
// and the end-to-end phase (serial) are two calls whose events feed one spec reporter. Each call ends with
// its totals (top-level diagnostics `tests N`, `pass N`, ...): they are added up and printed once, at the
// end, so the run still prints ONE summary.
const stop = new AbortController();
const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
let stoppedBy = "";
for (const sig of Object.keys(SIGNALS)) {
  process.once(sig, () => {
    stoppedBy = sig;
    console.error(`\nrun-tests: ${sig}: ending the test files' processes`);
    stop.abort();
  });
}

const reporter = new spec();
reporter.pipe(process.stdout);
const TOTAL = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([0-9.]+)$/;
const totals = new Map();
let failed = false;

async function phase(files, concurrency) {
  if (files.length === 0 || stoppedBy) return;
  for await (const event of run({ files, concurrency, signal: stop.signal })) {
    if (event.type === "test:fail" && !event.data.todo) failed = true;
    const total = event.type === "test:diagnostic" && !event.data.file && TOTAL.exec(event.data.message);
    if (total) totals.set(total[1], (totals.get(total[1]) ?? 0) + Number(total[2]));
    else if (!(event.type === "test:plan" && !event.data.file)) reporter.write(event);
  }
}

await phase(unit, Math.max(2, availableParallelism()));
await phase([...e2e, ...swarm, ...disruptive], 1);
for (const [name, n] of totals)
  reporter.write({ type: "test:diagnostic", data: { nesting: 0, message: `${name} ${n}` } });
reporter.end();
process.exitCode = stoppedBy ? 128 + SIGNALS[stoppedBy] : failed ? 1 : 0;
if (stoppedBy) console.error(`run-tests: stopped by ${stoppedBy}`);
