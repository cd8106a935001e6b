// The one rule for an app's state, shared by `pier status` and the app list (`pier apps`, the console).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type AppStateFacts, appState } from "../../../src/core/app-state.js";

describe("appState", () => {
  const cases: [Partial<AppStateFacts>, string][] = [
    [{}, "not deployed"],
    [{ latestDeployment: "queued" }, "deploying"],
    [{ latestDeployment: "building" }, "deploying"],
    [{ latestDeployment: "failed" }, "not deployed"],
    [{ latestDeployment: "cancelled" }, "not deployed"],
    [{ released: true, running: 2 }, "running"],
    [{ released: true, running: 0 }, "down"],
    [{ released: true, running: 0, latestDeployment: "building" }, "down"],
    [{ stopped: true, released: true, running: 1 }, "stopped"],
    [{ stopped: true }, "stopped"],
  ];
  for (const [facts, want] of cases) {
    test(`${JSON.stringify(facts)} -> ${want}`, () => {
      assert.equal(
        appState({ stopped: false, released: false, latestDeployment: null, running: 0, ...facts }),
        want,
      );
    });
  }
});
