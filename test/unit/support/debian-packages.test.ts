import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { debianCacheDir, debianEntry, debianPackages } from "../../support/debian-packages.js";

// What the framework e2e tests rely on without a download (the download itself is exercised by them): bad
// names refused before any container runs, one entry per set of packages, and a whole entry reused.
let cache = "";
before(() => {
  cache = mkdtempSync(join(tmpdir(), "pier-debian-cache-"));
  process.env.PIER_TEST_CACHE = cache;
});
after(() => {
  rmSync(cache, { recursive: true, force: true });
});

test("the cache lives under $PIER_TEST_CACHE", () => {
  assert.equal(debianCacheDir(), join(cache, "debian"));
});

test("a set or package name that is not a plain Debian name is refused, naming it", async () => {
  await assert.rejects(debianPackages("../x", ["php-twig"]), /set '\.\.\/x' is not a simple name/);
  await assert.rejects(debianPackages("sym", ["php-twig", "$(id)"]), /bad package names: \$\(id\)/);
  await assert.rejects(debianPackages("sym", []), /bad package names/);
});

test("one entry per set of packages: the roots' order does not matter, the closure flag does", () => {
  const a = debianEntry("sym", ["php-twig", "php-symfony-yaml"], true);
  assert.equal(debianEntry("sym", ["php-symfony-yaml", "php-twig"], true), a);
  assert.notEqual(debianEntry("sym", ["php-twig", "php-symfony-yaml"], false), a);
  assert.notEqual(debianEntry("sym", ["php-twig"], true), a);
  assert.match(a, /\/debian\/sym-[0-9a-f]{12}$/);
});

test("a whole entry (its package list written) is returned as is, without a download", async () => {
  const entry = debianEntry("ready", ["wordpress"], false);
  mkdirSync(join(entry, "root"), { recursive: true });
  writeFileSync(join(entry, "packages.txt"), "wordpress_6.8.3+dfsg1-1_all.deb\n");
  assert.equal(await debianPackages("ready", ["wordpress"], { closure: false }), join(entry, "root"));
});
