// An app's ceiling and the caps on variables (issue 15, ADR 0022): the pure rules, as tables.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  envBytes,
  envCapProblem,
  instanceEnvProblem,
  MAX_ENV_BYTES,
  MAX_INSTANCE_ENV_BYTES,
  MAX_VARIABLES,
} from "../../../src/core/env-limits.js";
import {
  breachHint,
  type Ceiling,
  ceilingBreach,
  effectiveCeiling,
  hostDefaults,
  NO_OVERRIDES,
  type Size,
} from "../../../src/core/limits.js";

describe("ceilingBreach: the first limit a size passes, named with its value", () => {
  const ceiling: Ceiling = { maxFlavor: "M", maxInstances: 2, maxMemoryMiB: 6144 };
  const cases: [string, Size, string | null, RegExp | null][] = [
    ["the default size", { flavor: "nano", instances: 1 }, null, null],
    ["exactly the ceiling's flavor and count", { flavor: "M", instances: 1 }, null, null],
    ["memory exactly at the limit", { flavor: "S", instances: 2, buildFlavor: "M" }, null, null],
    [
      "XL over M",
      { flavor: "XL", instances: 1 },
      "maxFlavor",
      /^Flavor XL is larger than web's largest allowed flavor, M \(limit maxFlavor\)\.$/,
    ],
    [
      "a build flavor over M",
      { flavor: "nano", instances: 1, buildFlavor: "L" },
      "maxFlavor",
      /^Build flavor L is larger than web's largest allowed flavor, M \(limit maxFlavor\)\.$/,
    ],
    [
      "20 instances over 2",
      { flavor: "pico", instances: 20 },
      "maxInstances",
      /^20 instances are more than web may run: at most 2 \(limit maxInstances\)\.$/,
    ],
    [
      "2 x M = 8192 MiB over 6144",
      { flavor: "M", instances: 2 },
      "maxMemoryMiB",
      /^2 x M is 8192 MiB of memory, more than web may use: at most 6144 MiB \(limit maxMemoryMiB\)\.$/,
    ],
    // The flavor is named first: raising the count would not help.
    ["XL and 20 at once", { flavor: "XL", instances: 20 }, "maxFlavor", /Flavor XL/],
  ];
  for (const [name, size, limit, message] of cases) {
    it(name, () => {
      const b = ceilingBreach(size, ceiling, "web");
      assert.equal(b?.limit ?? null, limit);
      if (message) assert.match(b?.message ?? "", message);
    });
  }

  it("the hint says who raises it and how, with the value asked for", () => {
    const b = ceilingBreach({ flavor: "pico", instances: 3 }, ceiling, "web");
    assert.ok(b);
    assert.equal(
      breachHint(b, "web"),
      "Ask for less, or have an admin raise the limit: pier limits set --max-instances 3 --app web (an admin token only; an app's token cannot change its limits).",
    );
  });
});

describe("effectiveCeiling: the admin's value for the app, else the server's default", () => {
  const defaults: Ceiling = { maxFlavor: "L", maxInstances: 2, maxMemoryMiB: 12000 };
  it("nothing set: the defaults", () => assert.deepEqual(effectiveCeiling(defaults, NO_OVERRIDES), defaults));
  it("each field on its own", () =>
    assert.deepEqual(
      effectiveCeiling(defaults, { maxFlavor: "XL", maxInstances: null, maxMemoryMiB: 20000 }),
      {
        maxFlavor: "XL",
        maxInstances: 2,
        maxMemoryMiB: 20000,
      },
    ));
});

describe("hostDefaults: a quarter of pid_max in instances' PIDs, half the memory, the flavor that fits", () => {
  const cases: [string, { memoryMiB: number; pidMax: number }, Ceiling][] = [
    // The hostile probe's host: 23 GiB, pid_max 32768 (1024 PIDs an instance).
    [
      "23 GiB, pid_max 32768",
      { memoryMiB: 24105, pidMax: 32768 },
      { maxFlavor: "L", maxInstances: 8, maxMemoryMiB: 12052 },
    ],
    [
      "64 GiB, pid_max 4194304",
      { memoryMiB: 65536, pidMax: 4194304 },
      { maxFlavor: "XL", maxInstances: 20, maxMemoryMiB: 32768 },
    ],
    [
      "2 GiB, pid_max 65536",
      { memoryMiB: 2048, pidMax: 65536 },
      { maxFlavor: "XS", maxInstances: 16, maxMemoryMiB: 1024 },
    ],
    [
      "tiny: 300 MiB, pid_max 4096",
      { memoryMiB: 300, pidMax: 4096 },
      { maxFlavor: "pico", maxInstances: 1, maxMemoryMiB: 256 },
    ],
  ];
  for (const [name, host, want] of cases) it(name, () => assert.deepEqual(hostDefaults(host), want));

  it("the probe's 20 x XL (20 x 16 GiB, 20 x 4096 PIDs) is refused there", () => {
    const d = hostDefaults({ memoryMiB: 24105, pidMax: 32768 });
    assert.equal(ceilingBreach({ flavor: "XL", instances: 20 }, d, "x")?.limit, "maxFlavor");
    assert.equal(ceilingBreach({ flavor: "L", instances: 20 }, d, "x")?.limit, "maxInstances");
    assert.equal(ceilingBreach({ flavor: "L", instances: 2 }, d, "x")?.limit, "maxMemoryMiB");
  });
});

describe("the caps on variables", () => {
  const many = (n: number, size = 1) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`V${i}`, "x".repeat(size)]));
  it("envBytes counts NAME=value and a NUL, in UTF-8", () => {
    assert.equal(envBytes({ A: "1" }), 4);
    assert.equal(envBytes({ É: "é" }), 6);
    assert.equal(envBytes({}), 0);
  });
  const cases: [string, Record<string, string>, RegExp | null][] = [
    ["none", {}, null],
    [`${MAX_VARIABLES} variables`, many(MAX_VARIABLES), null],
    [
      `${MAX_VARIABLES + 1} variables`,
      many(MAX_VARIABLES + 1),
      /^web would have 1001 variables: at most 1000 \(the cap on the number of variables\)\.$/,
    ],
    ["4 x 64 KiB less their names", many(4, 64 * 1024 - 5), null],
    [
      "5 x 60 KiB",
      many(5, 60 * 1024),
      /^web's variables would take 307220 bytes: at most 262144 \(256 KiB, the cap on the variables' total size, names and values\)\.$/,
    ],
  ];
  for (const [name, vars, problem] of cases)
    it(name, () => {
      const p = envCapProblem(vars, "web");
      if (problem) assert.match(p ?? "", problem);
      else assert.equal(p, null);
    });

  it("the caps stay under what the engine accepts (measured: ~2 MiB in all, 128 KiB a variable)", () => {
    assert.ok(MAX_ENV_BYTES * 4 <= MAX_INSTANCE_ENV_BYTES);
    assert.ok(MAX_INSTANCE_ENV_BYTES * 2 <= 2 * 1024 * 1024);
  });

  it("an instance's environment: 1 MiB with its links' variables, named", () => {
    assert.equal(instanceEnvProblem(many(16, 64 * 1024 - 10), "web"), null);
    assert.match(
      instanceEnvProblem(many(17, 64 * 1024), "web") ?? "",
      /^The environment of web's instances \(its variables, its links' and the platform's\) would take 1114187 bytes: at most 1048576 \(1024 KiB, the cap on an instance's environment\)\.$/,
    );
  });
});
