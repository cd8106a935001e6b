// The git adapter against real git, in a temp dir (no network).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { exec } from "../../../src/adapters/exec.js";
import {
  archiveCommit,
  commitInfo,
  ensureBareRepo,
  removeRepo,
  revParse,
} from "../../../src/adapters/git.js";

const env = {
  ...process.env,
  GIT_AUTHOR_NAME: "Ada",
  GIT_AUTHOR_EMAIL: "ada@pier.test",
  GIT_COMMITTER_NAME: "Ada",
  GIT_COMMITTER_EMAIL: "ada@pier.test",
};

describe("git adapter", () => {
  const tmp = mkdtempSync(join(tmpdir(), "pier-git-"));
  const work = join(tmp, "work");
  const bare = join(tmp, "app.git");
  let sha = "";

  before(async () => {
    await exec(["git", "init", "-q", "-b", "master", work]);
    mkdirSync(join(work, "bin"));
    writeFileSync(join(work, "hello.txt"), "hello\n");
    writeFileSync(join(work, "bin", "run"), "#!/bin/sh\necho run\n", { mode: 0o755 });
    await exec(["ln", "-s", "hello.txt", join(work, "link")]);
    await exec(["git", "-C", work, "add", "-A"], { env });
    await exec(["git", "-C", work, "commit", "-q", "-m", "first commit"], { env });
    sha = (await exec(["git", "-C", work, "rev-parse", "HEAD"])).stdout.trim();
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  test("ensureBareRepo makes a bare repo on master with Pier's settings and hook, idempotently", async () => {
    await ensureBareRepo(bare, "#!/bin/sh\nexit 0\n", 1000);
    const hook = join(bare, "hooks", "pre-receive");
    assert.equal(readFileSync(hook, "utf8"), "#!/bin/sh\nexit 0\n");
    assert.equal(statSync(hook).mode & 0o777, 0o700, "the hook is Pier's user's only");
    assert.equal(
      (await exec(["git", "-C", bare, "symbolic-ref", "HEAD"])).stdout.trim(),
      "refs/heads/master",
    );
    const config = async (name: string) => (await exec(["git", "-C", bare, "config", name])).stdout.trim();
    assert.equal(await config("receive.fsckObjects"), "true");
    assert.equal(await config("receive.maxInputSize"), "1000");
    assert.equal(await config("receive.denyDeletes"), "true");

    const before = statSync(hook).mtimeMs;
    await Promise.all([1, 2, 3].map(() => ensureBareRepo(bare, "#!/bin/sh\nexit 0\n", 1000)));
    assert.equal(statSync(hook).mtimeMs, before, "an unchanged hook is not rewritten");
    await ensureBareRepo(bare, "#!/bin/sh\nexit 1\n", 2000);
    assert.equal(readFileSync(hook, "utf8"), "#!/bin/sh\nexit 1\n");
    assert.equal(await config("receive.maxInputSize"), "2000");
    await ensureBareRepo(bare, "#!/bin/sh\nexit 0\n", 1_000_000);
    await exec(["git", "-C", work, "push", "-q", bare, "master"]);
    // Everything git wrote, before and with the push, is private to Pier's user (ADR 0024).
    const found = (await exec(["find", bare, "-printf", "%y %m %p\n"])).stdout.trim().split("\n");
    const open = found.filter((l) => !/^(d 700|f 600|f 400|f 700) /.test(l));
    assert.deepEqual(open, [], "every directory 0700, every file 0600 (objects 0400, programs 0700)");
    assert.ok(
      found.some((l) => /^f [46]00 .*\/objects\/[0-9a-f]{2}\//.test(l)),
      "the pushed objects",
    );
    assert.equal(await config("core.sharedRepository"), "0600");
  });

  test("revParse finds commits, answers null for what is not there, refuses what is not a ref", async () => {
    assert.equal(await revParse(bare, "refs/heads/master"), sha);
    assert.equal(await revParse(bare, sha), sha);
    assert.equal(await revParse(bare, "refs/heads/nope"), null);
    assert.equal(await revParse(bare, "0".repeat(40)), null);
    assert.equal(await revParse(join(tmp, "missing.git"), "refs/heads/master"), null);
    for (const bad of [
      "--output=/tmp/x",
      "-h",
      "master",
      "HEAD~1",
      "refs/tags/v1",
      "refs/heads/a b",
      sha.slice(0, 7),
    ]) {
      await assert.rejects(revParse(bare, bad), /refusing revision/, bad);
    }
  });

  test("archiveCommit writes the commit's files, modes and symlinks", async () => {
    const dest = join(tmp, "out");
    mkdirSync(dest);
    await archiveCommit(bare, sha, dest);
    assert.equal(readFileSync(join(dest, "hello.txt"), "utf8"), "hello\n");
    assert.equal(statSync(join(dest, "bin", "run")).mode & 0o111, 0o111);
    assert.equal(readlinkSync(join(dest, "link")), "hello.txt");
  });

  test("archiveCommit of a missing commit fails with git's reason, not tar's", async () => {
    const dest = mkdtempSync(join(tmp, "none-"));
    await assert.rejects(
      archiveCommit(bare, "1".repeat(40), dest),
      /^ExecError: git exited with 128: fatal: not a tree object/,
    );
    await assert.rejects(archiveCommit(bare, "--remote=x", tmp), /not a commit id/);
  });

  test("commitInfo gives subject and author", async () => {
    assert.deepEqual(await commitInfo(bare, sha), {
      sha,
      subject: "first commit",
      author: "Ada <ada@pier.test>",
    });
    await assert.rejects(commitInfo(bare, "HEAD"), /not a commit id/);
  });

  test("removeRepo removes it, and is fine when it is gone", async () => {
    await removeRepo(bare);
    assert.equal(await revParse(bare, "refs/heads/master"), null);
    await removeRepo(bare);
  });
});
