import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadCliConfig } from "../../../src/cli/config.js";
import { CliError } from "../../../src/cli/errors.js";

describe("finding the server", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-cfg-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("PIER_URL and PIER_TOKEN win; a trailing slash is dropped", () => {
    const c = loadCliConfig({ PIER_URL: "https://pier.example.com/", PIER_TOKEN: "t", PIER_DATA_DIR: dir });
    assert.equal(c.url, "https://pier.example.com");
    assert.equal(c.token, "t");
  });

  test("otherwise <data dir>/cli.json, written by pier server", () => {
    writeFileSync(join(dir, "cli.json"), JSON.stringify({ url: "http://127.0.0.1:7070", token: "secret" }));
    const c = loadCliConfig({ PIER_DATA_DIR: dir });
    assert.deepEqual([c.url, c.token], ["http://127.0.0.1:7070", "secret"]);
    assert.equal(loadCliConfig({ PIER_DATA_DIR: dir, PIER_TOKEN: "ci" }).token, "ci");
  });

  test("neither: says to start pier server or set PIER_URL and PIER_TOKEN", () => {
    assert.throws(
      () => loadCliConfig({ PIER_DATA_DIR: join(dir, "empty") }),
      (e: unknown) =>
        e instanceof CliError &&
        /cli\.json does not exist/.test(e.message) &&
        /pier server/.test(e.hint ?? "") &&
        /PIER_URL and PIER_TOKEN/.test(e.hint ?? ""),
    );
  });

  test("PIER_URL without PIER_TOKEN never borrows the local token", () => {
    assert.throws(
      () => loadCliConfig({ PIER_URL: "https://elsewhere.example", PIER_DATA_DIR: dir }),
      (e: unknown) => e instanceof CliError && /PIER_TOKEN/.test(e.message),
    );
  });

  test("bad values are named, and the token never appears in a message", () => {
    assert.throws(
      () => loadCliConfig({ PIER_URL: "ftp://x", PIER_TOKEN: "t" }),
      (e: unknown) => e instanceof CliError && /PIER_URL must be an http\(s\) URL/.test(e.message),
    );
    writeFileSync(join(dir, "cli.json"), JSON.stringify({ url: "nope", token: "hunter2hunter2" }));
    assert.throws(
      () => loadCliConfig({ PIER_DATA_DIR: dir }),
      (e: unknown) =>
        e instanceof CliError && /url: must be/.test(e.message) && !e.message.includes("hunter2"),
    );
  });
});
