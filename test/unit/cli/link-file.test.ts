import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { CliError, UsageError } from "../../../src/cli/errors.js";
import { findLinkFile, LINK_FILE, resolveApp, writeLinkFile } from "../../../src/cli/link-file.js";

describe("app resolution: --app, else .pier.json here or in a parent", () => {
  const root = mkdtempSync(join(tmpdir(), "pier-link-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  const project = join(root, "project");
  const deep = join(project, "src", "lib");
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(project, LINK_FILE), JSON.stringify({ app: "app-0123456789ab", name: "web" }));

  test("a link file in a parent folder names the app by id", () => {
    assert.deepEqual(resolveApp(undefined, deep, "status"), {
      ref: "app-0123456789ab",
      linkPath: join(project, LINK_FILE),
    });
  });

  test("--app wins over the link file", () => {
    assert.deepEqual(resolveApp("other", deep, "status"), { ref: "other" });
  });

  test("the nearest link file wins", () => {
    const sub = join(project, "src");
    writeFileSync(join(sub, LINK_FILE), JSON.stringify({ app: "app-sub" }));
    try {
      assert.equal(resolveApp(undefined, deep, "status").ref, "app-sub");
    } finally {
      rmSync(join(sub, LINK_FILE));
    }
  });

  test("no app anywhere: a usage error that says how to give one", () => {
    const lonely = mkdtempSync(join(root, "lonely-"));
    // The temp folder's own parents must not hold a link file for this test to mean anything.
    if (findLinkFile(lonely)?.path.startsWith(root) === false) return;
    assert.throws(
      () => resolveApp(undefined, lonely, "status"),
      (e: unknown) =>
        e instanceof UsageError &&
        e.exitCode === 2 &&
        /--app/.test(e.hint ?? "") &&
        /pier link/.test(e.hint ?? ""),
    );
  });

  test("a broken link file is an error naming the file", () => {
    const broken = join(root, "broken");
    mkdirSync(broken);
    writeFileSync(join(broken, LINK_FILE), "{ not json");
    assert.throws(
      () => resolveApp(undefined, broken, "status"),
      (e: unknown) => e instanceof CliError && e.message.includes(join(broken, LINK_FILE)),
    );
    writeFileSync(join(broken, LINK_FILE), JSON.stringify({ name: "web" }));
    assert.throws(
      () => resolveApp(undefined, broken, "status"),
      (e: unknown) => e instanceof CliError && /app: /.test(e.message),
    );
  });

  test("writeLinkFile writes { app, name } that resolves back", () => {
    const dir = join(root, "fresh");
    mkdirSync(dir);
    const path = writeLinkFile(dir, { id: "app-1", name: "api" });
    assert.deepEqual(JSON.parse(readFileSync(path, "utf8")), { app: "app-1", name: "api" });
    assert.equal(resolveApp(undefined, dir, "logs").ref, "app-1");
  });
});
