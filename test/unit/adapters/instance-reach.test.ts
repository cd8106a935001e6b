// The InstanceReach suite over the host's own network (one dockerd) and over the edge's dialer process
// (dialer.ts), here in this machine's network namespace: on a swarm the same process runs in the edge's
// sandbox (edge-sandbox.ts), which the swarm e2e files exercise.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { connectThroughDialer, hostPlace, parseDialRequest } from "../../../src/adapters/edge/reach.js";
import { instanceReachConformance } from "../../conformance/instance-reach.js";

const DIALER = fileURLToPath(new URL("../../../src/adapters/edge/dialer.js", import.meta.url));

instanceReachConformance("the host's own network", async () => ({ reach: hostPlace, done: async () => {} }));

async function startDialer() {
  const dir = mkdtempSync(join(tmpdir(), "pier-dialer-"));
  const sock = join(dir, "dial.sock");
  const child = spawn(process.execPath, [DIALER, sock], { stdio: ["pipe", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the dialer exited (${code})`)));
  });
  return { sock, child, dir };
}

instanceReachConformance("the edge's dialer", async () => {
  const { sock, child, dir } = await startDialer();
  return {
    reach: { connect: (host, port, timeoutMs) => connectThroughDialer(sock, host, port, timeoutMs) },
    done: async () => {
      child.stdin.end();
      await new Promise((r) => child.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

test("the dialer answers a request that is not `<ip> <port> <timeout>` with EINVAL, and ends with its parent", async () => {
  const { sock, child, dir } = await startDialer();
  try {
    for (const bad of ["example.com 80 1000", "127.0.0.1 0 1000", "127.0.0.1 80", "nonsense"]) {
      const answer = await new Promise<string>((resolve) => {
        const s = createConnection(sock, () => s.write(`${bad}\n`));
        let got = "";
        s.on("data", (c: Buffer) => {
          got += c.toString();
        });
        s.on("close", () => resolve(got));
      });
      assert.equal(answer, "error EINVAL\n", bad);
    }
  } finally {
    child.stdin.end();
    const code = await new Promise((r) => child.once("exit", r));
    assert.equal(code, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("dial requests: an IP address, a port and a timeout, nothing else", () => {
  assert.deepEqual(parseDialRequest("10.210.0.4 8080 1000"), {
    host: "10.210.0.4",
    port: 8080,
    timeoutMs: 1000,
  });
  assert.deepEqual(parseDialRequest("fd00::1 80 5"), { host: "fd00::1", port: 80, timeoutMs: 5 });
  for (const bad of ["localhost 80 1000", "10.0.0.1 65536 1000", "10.0.0.1 80 0", "10.0.0.1 80 1000 x", ""])
    assert.equal(parseDialRequest(bad), null, bad);
});
