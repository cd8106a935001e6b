// Whether package.json declares nothing to install: then a redeploy reuses node_modules without a lock file.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { declaresNoDependencies } from "../../../src/core/package-json.js";

const pkg = (extra: Record<string, unknown>) => JSON.stringify({ name: "a", version: "1.0.0", ...extra });

describe("package.json that declares no dependency", () => {
  const cases: [string, string | null, boolean][] = [
    ["no dependency field", pkg({ scripts: { start: "node server.js" } }), true],
    ["empty objects and lists", pkg({ dependencies: {}, devDependencies: {}, bundleDependencies: [] }), true],
    ["a byte-order mark first", `\uFEFF${pkg({})}`, true],
    ["a dependency", pkg({ dependencies: { express: "^4" } }), false],
    ["a development dependency", pkg({ devDependencies: { typescript: "^5" } }), false],
    ["an optional dependency", pkg({ optionalDependencies: { fsevents: "*" } }), false],
    ["a peer dependency (npm installs them)", pkg({ peerDependencies: { react: "^19" } }), false],
    ["bundled ones", pkg({ bundledDependencies: ["x"] }), false],
    ["bundleDependencies: true", pkg({ bundleDependencies: true }), false],
    ["workspaces", pkg({ workspaces: ["packages/*"] }), false],
    ["workspaces as an object", pkg({ workspaces: { packages: ["a"] } }), false],
    ["dependencies: null", pkg({ dependencies: null }), false],
    ["not JSON", "{", false],
    ["not an object", "[]", false],
    ["no package.json", null, false],
  ];
  for (const [what, text, expected] of cases)
    test(`${what}: ${expected}`, () => assert.equal(declaresNoDependencies(text), expected));
});
