import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { renderEnvFile, shellQuote } from "../../../src/core/shell.js";

test("values survive a real shell unchanged", () => {
  const vars = {
    PLAIN: "x",
    SPACES: "two words",
    QUOTES: `it's "quoted" $HOME \`cmd\``,
    MULTI: "line1\nline2",
    EMPTY: "",
    "CC_DOCKER_FIXED-CIDR-V6": "fd00::/64",
  };
  const out = execFileSync(
    "/bin/sh",
    ["-c", `set -a; ${renderEnvFile(vars).replace(/\n(?=[A-Z])/g, "\n")} set +a; env`],
    {
      env: {},
    },
  ).toString();
  for (const [k, v] of Object.entries(vars)) {
    if (k.includes("-")) assert.ok(!out.includes(`${k}=`), "names a shell cannot export are left out");
    else assert.ok(out.includes(`${k}=${v}\n`), `${k} in ${out}`);
  }
  assert.equal(shellQuote("a'b"), `'a'\\''b'`);
});
