import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { withWorkers } from "../../../src/core/workers.js";

test("no worker: the start command as it is", () => {
  assert.deepEqual(withWorkers(["npm", "start"], []), ["npm", "start"]);
});

test("workers run beside the main process, restarted per policy, in a real shell", async () => {
  const [cmd, ...args] = withWorkers(
    ["/bin/sh", "-c", "sleep 0.5; echo main done; sleep 5"],
    [
      { command: "echo once-$((1+1))", restart: "no", delaySeconds: 0 },
      { command: "echo fail; exit 2", restart: "on-failure", delaySeconds: 0 },
      { command: `echo "it's quoted"`, restart: "no", delaySeconds: 0 },
    ],
  );
  const child = spawn(cmd!, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  await new Promise((r) => setTimeout(r, 1500));
  process.kill(-child.pid!, "SIGKILL");
  assert.match(out, /once-2/);
  assert.ok((out.match(/^fail$/gm) ?? []).length >= 2, "on-failure restarts a failing worker");
  assert.match(out, /it's quoted/);
  assert.match(out, /main done/);
});
