// The one rule for app names (a DNS label that cannot look like an app id), shared by the API, the CLI
// and the edge.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { appNameProblem, hostnameProblem } from "../../../src/core/names.js";

describe("appNameProblem", () => {
  const cases: [string, string | undefined, RegExp | null][] = [
    ["web", undefined, null],
    ["my-app-2", undefined, null],
    ["a", undefined, null],
    [`a${"b".repeat(62)}`, undefined, null],
    [`a${"b".repeat(63)}`, undefined, /longer than 63/],
    ["", undefined, /empty/],
    ["x-", undefined, /must not end with '-'/],
    ["-x", undefined, /must start with a lowercase letter/],
    ["1app", undefined, /must start with a lowercase letter/],
    ["Web", undefined, /must start with a lowercase letter/],
    ["a_b", undefined, /only lowercase letters/],
    ["a.b", undefined, /only lowercase letters/],
    ["a b", undefined, /only lowercase letters/],
    ["app-0123456789ab", undefined, /form of an app id/],
    ["app-web", undefined, null],
    ["app-0123456789abc", undefined, null],
    ["web", `${"d".repeat(62)}.${"d".repeat(62)}.${"d".repeat(62)}.${"d".repeat(62)}`, /longer than 253/],
    ["web", "example.com", null],
  ];
  for (const [name, domain, problem] of cases) {
    test(`${JSON.stringify(name.length > 20 ? `${name.slice(0, 20)}…` : name)} on ${domain ? `a domain of ${domain.length}` : "any domain"}`, () => {
      const got = appNameProblem(name, domain);
      if (problem === null) assert.equal(got, null);
      else assert.match(got ?? "", problem);
    });
  }
});

describe("hostnameProblem", () => {
  for (const [host, ok] of [
    ["web.localhost", true],
    ["x-.localhost", false],
    ["a..b", false],
    ["Web.localhost", false],
    ["web.localhost\nbackend evil", false],
  ] as const) {
    test(JSON.stringify(host), () => assert.equal(hostnameProblem(host) === null, ok));
  }
});
