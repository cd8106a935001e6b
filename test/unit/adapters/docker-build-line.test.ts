import assert from "node:assert/strict";
import { test } from "node:test";
import { cleanBuildLine } from "../../../src/adapters/engine/docker.js";

test("build output lines are cleaned for the deploy log", () => {
  const cases: [string, boolean, string][] = [
    ["\x1b[91mKilled", false, "Killed"],
    ["Step 2/7 : RUN make", false, "Step 2/7 : RUN make"],
    ["aGktNDIK", true, "hi-42"],
    ["aGktNDIK", false, "aGktNDIK"],
    ["bGluZSAxCmxpbmUgMgo=", true, "line 1\nline 2"],
    ["[internal] load build definition", true, "[internal] load build definition"],
    ["progress\r", false, "progress"],
    ["//79/w==", true, "//79/w=="],
  ];
  for (const [input, buildkit, expected] of cases)
    assert.equal(cleanBuildLine(input, buildkit), expected, input);
});
