// The environment of child processes: the server's secrets never pass.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CHILD_ENV_NAMES, childEnv, ExecError, exec, spawnChecked } from "../../../src/adapters/exec.js";

describe("childEnv", () => {
  const parent = {
    PATH: "/usr/bin",
    HOME: "/home/pier",
    LANG: "C.UTF-8",
    LC_ALL: "C",
    TZ: "UTC",
    PIER_ADMIN_TOKEN: "admin-token-0123456789abcdef",
    AWS_SECRET_ACCESS_KEY: "aws",
    PIER_DATA_DIR: "/data",
    NODE_OPTIONS: "--require /x.js",
    GIT_DIR: "/elsewhere",
  };
  it("keeps the allowed names and LC_*", () =>
    assert.deepEqual(childEnv({}, parent), {
      PATH: "/usr/bin",
      HOME: "/home/pier",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TZ: "UTC",
    }));
  it("adds what the child needs", () =>
    assert.equal(childEnv({ GIT_QUARANTINE_PATH: "/q" }, parent).GIT_QUARANTINE_PATH, "/q"));
  it("passes no PIER_ variable", () => assert.ok(!CHILD_ENV_NAMES.some((n) => n.startsWith("PIER_"))));
  it("a real child does not see PIER_ADMIN_TOKEN nor another secret of the server's environment", async () => {
    process.env.PIER_ADMIN_TOKEN = "admin-token-0123456789abcdef";
    process.env.MADE_UP_SECRET = "made-up";
    try {
      const { stdout } = await exec(["env"], { env: { GIT_DIR: "/x" } });
      assert.doesNotMatch(stdout, /PIER_ADMIN_TOKEN|MADE_UP_SECRET|admin-token/);
      assert.match(stdout, /^PATH=/m);
      assert.match(stdout, /^GIT_DIR=\/x$/m);
    } finally {
      delete process.env.PIER_ADMIN_TOKEN;
      delete process.env.MADE_UP_SECRET;
    }
  });
});

describe("exec's onLine", () => {
  it("gives whole lines, a character split across the child's writes included, and a last line without its end", async () => {
    const lines: string[] = [];
    // printf writes the first byte of é, then (after a pause) the rest: two chunks for the reader.
    await exec(["sh", "-c", "printf 'h\\303'; sleep 0.1; printf '\\251llo\\nlast'"], {
      onLine: (l) => lines.push(l),
    });
    assert.deepEqual(lines, ["héllo", "last"]);
  });
});

describe("spawnChecked", () => {
  it("streams a tar of a directory and resolves once tar exited 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pier-spawn-"));
    writeFileSync(join(dir, "a.txt"), "x");
    const tar = spawnChecked(["tar", "-C", dir, "-c", "."]);
    const chunks: Buffer[] = [];
    for await (const c of tar.stdout) chunks.push(c as Buffer);
    await tar.done;
    const list = await exec(["tar", "-t"], { input: Buffer.concat(chunks) });
    rmSync(dir, { recursive: true, force: true });
    assert.match(list.stdout, /a\.txt/);
  });
  it("rejects with the command, its exit code and the tail of its stderr when tar fails", async () => {
    const tar = spawnChecked(["tar", "-C", "/nonexistent-pier-dir", "-c", "."]);
    tar.stdout.resume();
    await assert.rejects(tar.done, (e: unknown) => {
      assert.ok(e instanceof ExecError);
      assert.deepEqual(e.argv, ["tar", "-C", "/nonexistent-pier-dir", "-c", "."]);
      assert.equal(e.exitCode, 2);
      assert.match(e.message, /^tar exited with 2: .*nonexistent-pier-dir/);
      return true;
    });
  });
  it("rejects naming the signal when the child was ended by one", async () => {
    const child = spawnChecked(["sleep", "30"]);
    child.kill();
    await assert.rejects(child.done, /^ExecError: sleep was ended by SIGTERM/);
  });
  it("a child that fails while nobody awaits it does not crash the server (no unhandled rejection)", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const child = spawnChecked(["false"]);
      child.stdout.resume();
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
