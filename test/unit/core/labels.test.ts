import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isBuildContainer, reservedLabels } from "../../../src/core/labels.js";

describe("reservedLabels", () => {
  const cases: [string, Record<string, string>, string[]][] = [
    ["no labels", {}, []],
    ["a user's own labels", { "org.opencontainers.image.title": "x", maintainer: "me" }, []],
    [
      "what Pier's base images and builds carry",
      { "pier.managed": "true", "pier.base": "sha256:1", "pier.base.generation": "3", "pier.app": "app-1" },
      [],
    ],
    ["a Dockerfile FROM pier/node:22 (its Dockerfile's hash)", { "pier.node.dockerfile": "0123abcd" }, []],
    ["a release image's writable paths (ADR 0023)", { "pier.writable": "/" }, ["pier.writable"]],
    ["a routing label", { "pier.http-target": "127.0.0.1:2375" }, ["pier.http-target"]],
    ["the redirect label", { "pier.force-https": "true" }, ["pier.force-https"]],
    [
      "several, sorted, whatever the case",
      { "pier.role": "sandbox", "PIER.Sandbox": "x", "pier.addon": "a" },
      ["PIER.Sandbox", "pier.addon", "pier.role"],
    ],
  ];
  for (const [name, labels, want] of cases) {
    test(name, () => assert.deepEqual(reservedLabels(labels), want));
  }
});

describe("isBuildContainer", () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ["a build container", { "pier.app": "a", "pier.deployment": "d", "pier.role": "build" }, true],
    ["an instance", { "pier.app": "a", "pier.role": "instance", "pier.instance-id": "u" }, false],
    [
      "an instance that inherited its image's build role (Pier before ADR 0021)",
      { "pier.app": "a", "pier.role": "build", "pier.instance-id": "u" },
      false,
    ],
    ["a Dockerfile release's instance (no role)", { "pier.app": "a", "pier.instance-id": "u" }, false],
    ["a sandbox", { "pier.app": "a", "pier.role": "sandbox" }, false],
  ];
  for (const [name, labels, want] of cases) test(name, () => assert.equal(isBuildContainer(labels), want));
});
