// The planners' whole outputs (build plans, deploy log lines, the HAProxy config text) are byte-identical to
// those recorded before they were split into steps (ADR 0029).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type HaproxyConfigInput, renderHaproxyConfig } from "../../../src/core/edge-config.js";
import { type DockerBuildInput, dockerSettings, planDockerBuild } from "../../../src/core/plan-docker.js";
import { type NodeBuildInput, planNodeBuild } from "../../../src/core/plan-node.js";
import { type PhpBuildInput, planPhpBuild } from "../../../src/core/plan-php.js";
import { GOLDEN, type GoldenCase } from "./planners-golden.js";

/** The recorded inputs are the planners' own input types, read back from JSON. */
function run(c: GoldenCase): unknown {
  const [arg] = c.args;
  switch (c.fn) {
    case "planNodeBuild":
      return planNodeBuild(arg as NodeBuildInput);
    case "planPhpBuild":
      return planPhpBuild(arg as PhpBuildInput);
    case "planDockerBuild":
      return planDockerBuild(arg as DockerBuildInput);
    case "dockerSettings":
      return dockerSettings(arg as Record<string, string>);
    case "renderHaproxyConfig":
      return renderHaproxyConfig(arg as HaproxyConfigInput);
  }
}

describe("planners' outputs are byte-identical to the recorded ones", () => {
  GOLDEN.forEach((c, i) => {
    it(`${c.fn} #${i}`, () => assert.deepStrictEqual(JSON.parse(JSON.stringify(run(c))), c.out));
  });
});
