// The server's log never holds a URL's credentials, in a message, a field or an error; a deployment's
// error is masked with the app's secrets too.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { maskUrlCredentials, secretMasker } from "../../../src/core/env-secrets.js";
import { createLogger, maskDeep, maskedError } from "../../../src/server/logging.js";

describe("server log masking", () => {
  test("every string of a record, nested, loses URL credentials", () => {
    const got = maskDeep(
      { msg: "fetch https://u:hunter22@reg/x", a: [{ b: "git+ssh://me:pw1234@h/r" }], n: 3, ok: true },
      maskUrlCredentials,
    );
    assert.deepEqual(got, {
      msg: "fetch https://u:****@reg/x",
      a: [{ b: "git+ssh://me:****@h/r" }],
      n: 3,
      ok: true,
    });
  });
  test("an error's message and stack are masked with the app's secrets", () => {
    const mask = secretMasker({ DB_PASS: "s3cr3t-value", NPM_TOKEN: "npm_abcdef" });
    const e = new Error("npm ERR! 401 with npm_abcdef at https://x:s3cr3t-value@registry");
    const got = maskedError(e, mask);
    assert.equal(got.type, "Error");
    assert.doesNotMatch(JSON.stringify(got), /s3cr3t-value|npm_abcdef/);
    assert.match(String(got.message), /npm ERR! 401 with \*\*\*\*/);
  });
  test("the server's logger masks messages, fields and errors as it writes them", () => {
    const lines: string[] = [];
    const log = createLogger("info", { write: (l: string) => void lines.push(l) });
    log.info({ registry: "https://me:pa55word@npm.example" }, "using https://me:pa55word@npm.example");
    log.error({ err: new Error("cannot reach https://me:pa55word@npm.example") }, "failed");
    log.warn("plain https://me:pa55word@npm.example");
    assert.equal(lines.length, 3);
    for (const l of lines) {
      assert.doesNotMatch(l, /pa55word/);
      assert.match(l, /me:\*\*\*\*@npm\.example/);
    }
  });
});
