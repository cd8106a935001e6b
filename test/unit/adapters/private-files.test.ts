import assert from "node:assert/strict";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  createPrivateFile,
  keepPrivate,
  makePrivate,
  PRIVATE_MARK,
  privateMode,
} from "../../../src/adapters/private-files.js";

describe("privateMode", () => {
  const cases: [Parameters<typeof privateMode>[0], number, number | null][] = [
    ["dir", 0o755, 0o700],
    ["dir", 0o700, 0o700],
    ["file", 0o644, 0o600],
    ["file", 0o444, 0o400],
    ["file", 0o755, 0o700],
    ["file", 0o600, 0o600],
    ["socket", 0o755, 0o600],
    ["link", 0o777, null],
  ];
  for (const [kind, mode, want] of cases) {
    test(`${kind} ${mode.toString(8)} -> ${want === null ? "left" : want.toString(8)}`, () =>
      assert.equal(privateMode(kind, mode), want));
  }
});

describe("makePrivate", () => {
  const root = mkdtempSync(join(tmpdir(), "pier-private-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const mode = (p: string) => (statSync(p).mode & 0o7777).toString(8);

  test("a 755/644 data dir (store, WAL, keys, a repository, the edge) becomes 700/600, programs 700", async () => {
    const data = join(root, "data");
    for (const d of ["repos/app-1.git/objects/ab", "repos/app-1.git/hooks", "edge/tls"])
      mkdirSync(join(data, d), { recursive: true });
    const files = [
      "pier.db",
      "pier.db-wal",
      "pier.db-shm",
      "secret.key",
      "edge/haproxy.cfg",
      "edge/tls/a.pem",
    ];
    for (const f of [...files, "repos/app-1.git/objects/ab/cd"]) writeFileSync(join(data, f), "x");
    writeFileSync(join(data, "repos/app-1.git/hooks/pre-receive"), "#!/bin/sh\n");
    chmodSync(join(data, "repos/app-1.git/hooks/pre-receive"), 0o755);
    chmodSync(join(data, "repos/app-1.git/objects/ab/cd"), 0o444);
    writeFileSync(join(root, "outside"), "x");
    chmodSync(join(root, "outside"), 0o644);
    symlinkSync(join(root, "outside"), join(data, "link"));
    chmodSync(data, 0o755);
    for (const f of files) chmodSync(join(data, f), 0o644);
    const first = await makePrivate(data);
    assert.ok(first.changed >= 10, String(first.changed));
    assert.deepEqual(first.failed, []);
    assert.equal(mode(data), "700");
    for (const d of ["repos", "repos/app-1.git/objects/ab", "edge/tls"])
      assert.equal(mode(join(data, d)), "700", d);
    for (const f of files) assert.equal(mode(join(data, f)), "600", f);
    assert.equal(mode(join(data, "repos/app-1.git/objects/ab/cd")), "400", "read-only stays read-only");
    assert.equal(mode(join(data, "repos/app-1.git/hooks/pre-receive")), "700");
    assert.equal(mode(join(root, "outside")), "644", "a link's target is left alone");
    assert.deepEqual(
      await makePrivate(data),
      { changed: 0, failed: [] },
      "nothing to change the second time",
    );
  });

  test("a missing data dir is created 0700; a new store file 0600", async () => {
    const fresh = join(root, "fresh", "data");
    await makePrivate(fresh);
    assert.equal(mode(fresh), "700");
    createPrivateFile(join(fresh, "pier.db"));
    assert.equal(mode(join(fresh, "pier.db")), "600");
  });
});

describe("keepPrivate (each start of pier server)", () => {
  const root = mkdtempSync(join(tmpdir(), "pier-keep-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const mode = (p: string) => (statSync(p).mode & 0o7777).toString(8);
  const deep = (data: string) => join(data, "repos/app-1.git/objects/ab/cd");
  const tree = (data: string) => {
    mkdirSync(join(data, "repos/app-1.git/objects/ab"), { recursive: true });
    writeFileSync(deep(data), "x");
    writeFileSync(join(data, "pier.db"), "x");
    chmodSync(deep(data), 0o644);
    chmodSync(join(data, "pier.db"), 0o644);
    chmodSync(data, 0o755);
  };

  test("the first start walks the whole tree and marks it; the next ones check the root and its entries only", async () => {
    const data = join(root, "a");
    tree(data);
    const first = await keepPrivate(data);
    assert.equal(first.walked, true);
    assert.equal(mode(deep(data)), "600");
    assert.equal(readFileSync(join(data, PRIVATE_MARK), "utf8").trim(), "1");
    chmodSync(deep(data), 0o644);
    chmodSync(join(data, "pier.db"), 0o644);
    chmodSync(join(data, "repos"), 0o755);
    const next = await keepPrivate(data);
    assert.deepEqual(next, { changed: 2, failed: [], walked: false });
    assert.equal(mode(join(data, "pier.db")), "600", "the root's entries are checked");
    assert.equal(mode(join(data, "repos")), "700", "so no one else traverses the tree");
    assert.equal(mode(deep(data)), "644", "below them, not walked again");
  });

  test("a root found open to others, or marked by older rules, is walked again whole", async () => {
    const data = join(root, "b");
    tree(data);
    await keepPrivate(data);
    chmodSync(deep(data), 0o644);
    chmodSync(data, 0o711);
    const reopened = await keepPrivate(data);
    assert.equal(reopened.walked, true);
    assert.equal(mode(deep(data)), "600");
    assert.equal(mode(data), "700");
    chmodSync(deep(data), 0o644);
    writeFileSync(join(data, PRIVATE_MARK), "0\n");
    assert.equal((await keepPrivate(data)).walked, true);
    assert.equal(mode(deep(data)), "600");
  });

  test("a missing data dir is created 0700 and marked", async () => {
    const fresh = join(root, "fresh", "data");
    assert.equal((await keepPrivate(fresh)).walked, true);
    assert.equal(mode(fresh), "700");
    assert.equal(mode(join(fresh, PRIVATE_MARK)), "600");
    assert.equal((await keepPrivate(fresh)).walked, false);
  });
});
