import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  bundledNpmMajor,
  chooseNodeVersion,
  chooseNpmVersion,
  formatVersionList,
  markVersions,
  type NodeVersion,
  type ScheduleEntry,
} from "../../../src/core/node-versions.js";

/** Real entries of node-releases' release-schedule.json. */
const SCHEDULE: Record<string, ScheduleEntry> = {
  "v0.12": { start: "2015-02-06", end: "2016-12-31" },
  v14: { start: "2020-04-21", lts: "2020-10-27", end: "2023-04-30", codename: "Fermium" },
  v16: { start: "2021-04-20", lts: "2021-10-26", end: "2023-09-11", codename: "Gallium" },
  v18: { start: "2022-04-19", lts: "2022-10-25", end: "2025-04-30", codename: "Hydrogen" },
  v20: { start: "2023-04-18", lts: "2023-10-24", end: "2026-04-30", codename: "Iron" },
  v22: { start: "2024-04-24", lts: "2024-10-29", end: "2027-04-30", codename: "Jod" },
  v23: { start: "2024-10-16", end: "2025-06-01" },
  v24: { start: "2025-05-06", lts: "2025-10-28", end: "2028-04-30", codename: "Krypton" },
};

/** The day the contract's versions were current: 24 is not LTS yet, 23 and 18 just reached end of life. */
const TODAY = "2025-07-01";

const AVAILABLE = [
  "14.18.0",
  "14.21.3",
  "16.20.2",
  "18.20.8",
  "20.18.0",
  "20.19.2",
  "22.15.0",
  "22.15.1",
  "22.16.0",
  "23.11.1",
  "24.1.0",
  "24.2.0",
  "25.0.0-rc.1",
  "0.12.18",
];

const VERSIONS: NodeVersion[] = markVersions(AVAILABLE, SCHEDULE, TODAY);

const v = (version: string) => {
  const found = VERSIONS.find((x) => x.version === version);
  assert.ok(found, version);
  return found;
};

describe("markVersions", () => {
  it("sorts newest first and leaves out prereleases and non-versions", () => {
    const marked = markVersions([...AVAILABLE, "nope", "22.16.0", "26.0.0-nightly2025"], SCHEDULE, TODAY);
    assert.deepEqual(
      marked.map((x) => x.version),
      [
        "24.2.0",
        "24.1.0",
        "23.11.1",
        "22.16.0",
        "22.15.1",
        "22.15.0",
        "20.19.2",
        "20.18.0",
        "18.20.8",
        "16.20.2",
        "14.21.3",
        "14.18.0",
        "0.12.18",
      ],
    );
  });

  const cases: [string, string, Omit<NodeVersion, "version">][] = [
    ["an LTS line", "22.16.0", { major: 22, lts: "Jod", eol: false }],
    ["an older LTS line", "20.19.2", { major: 20, lts: "Iron", eol: false }],
    ["a line not yet LTS (its LTS date is ahead)", "24.2.0", { major: 24, lts: null, eol: false }],
    ["an odd line past its end", "23.11.1", { major: 23, lts: null, eol: true }],
    ["an LTS line past its end keeps its codename", "18.20.8", { major: 18, lts: "Hydrogen", eol: true }],
    ["a 0.x line is looked up as v0.<minor>", "0.12.18", { major: 0, lts: null, eol: true }],
  ];
  for (const [name, version, want] of cases) {
    it(name, () => assert.deepEqual(v(version), { version, ...want }));
  }

  it("a line the schedule does not know is neither LTS nor end-of-life", () => {
    assert.deepEqual(markVersions(["27.0.0"], SCHEDULE, TODAY), [
      { version: "27.0.0", major: 27, lts: null, eol: false },
    ]);
  });

  it("the day of a date counts (LTS from the lts date, end-of-life from the end date)", () => {
    assert.equal(markVersions(["24.11.0"], SCHEDULE, "2025-10-28")[0]?.lts, "Krypton");
    assert.equal(markVersions(["24.11.0"], SCHEDULE, "2025-10-27")[0]?.lts, null);
    assert.equal(markVersions(["20.19.2"], SCHEDULE, "2026-04-30")[0]?.eol, true);
    assert.equal(markVersions(["20.19.2"], SCHEDULE, "2026-04-29")[0]?.eol, false);
  });

  it("an LTS line without a codename is named by its key", () => {
    const s = { v27: { start: "2027-04-22", lts: "2027-10-20", end: "2030-04-30", codename: "" } };
    assert.equal(markVersions(["27.1.0"], s, "2027-11-01")[0]?.lts, "v27");
  });
});

describe("chooseNodeVersion: chosen", () => {
  const cases: [string, string | undefined, string | undefined, string, string][] = [
    // name, CC_NODE_VERSION, engines.node, version, reason
    [
      "neither: the newest LTS that is not end-of-life",
      undefined,
      undefined,
      "22.16.0",
      "neither engines.node in package.json nor CC_NODE_VERSION is set, so the newest LTS (Jod): 22.16.0",
    ],
    ["empty values count as unset", " ", "", "22.16.0", ""],
    ["a major", "20", undefined, "20.19.2", "CC_NODE_VERSION=20 (the newest 20.x): 20.19.2"],
    ["a major with a v", "v22", undefined, "22.16.0", "CC_NODE_VERSION=v22 (the newest 22.x): 22.16.0"],
    ["a major.minor", "22.15", undefined, "22.15.1", "CC_NODE_VERSION=22.15 (the newest 22.15.x): 22.15.1"],
    ["an exact version", "22.15.0", undefined, "22.15.0", "CC_NODE_VERSION=22.15.0: 22.15.0"],
    [
      "an exact version with a v and spaces",
      " v14.18.0 ",
      undefined,
      "14.18.0",
      "CC_NODE_VERSION=v14.18.0: 14.18.0",
    ],
    ["a major that is not LTS", "24", undefined, "24.2.0", ""],
    ["an end-of-life major is still chosen when asked for", "16", undefined, "16.20.2", ""],
    [
      "engines.node alone",
      undefined,
      ">=18 <21",
      "20.19.2",
      'engines.node ">=18 <21" in package.json: 20.19.2',
    ],
    [
      "engines.node takes priority over CC_NODE_VERSION",
      "22",
      ">=18 <21",
      "20.19.2",
      'engines.node ">=18 <21" in package.json (it takes priority over CC_NODE_VERSION=22): 20.19.2',
    ],
    ["engines.node wins over an invalid CC_NODE_VERSION", "abc", "22.x", "22.16.0", ""],
    ["engines.node exact", undefined, "22.15.0", "22.15.0", ""],
    ["engines.node caret", undefined, "^20.18.0", "20.19.2", ""],
    ["engines.node tilde", undefined, "~22.15.0", "22.15.1", ""],
    ["engines.node * is the newest, LTS or not", undefined, "*", "24.2.0", ""],
    ["engines.node union", undefined, "^14 || ^16", "16.20.2", ""],
    ["engines.node never picks a prerelease", undefined, ">=25.0.0-0", "", ""],
  ];
  for (const [name, cc, engines, version, reason] of cases) {
    it(name, () => {
      const r = chooseNodeVersion({ ccNodeVersion: cc, enginesNode: engines, available: VERSIONS });
      if (version === "") {
        assert.equal(r.ok, false);
        return;
      }
      assert.ok(r.ok, r.ok ? "" : r.error);
      assert.equal(r.version.version, version);
      if (reason) assert.equal(r.reason, reason);
    });
  }

  it("does not rely on the order of the list", () => {
    const r = chooseNodeVersion({
      ccNodeVersion: "22",
      enginesNode: undefined,
      available: [...VERSIONS].reverse(),
    });
    assert.ok(r.ok);
    assert.equal(r.version.version, "22.16.0");
  });
});

describe("chooseNodeVersion: errors name the input", () => {
  const cases: [string, string | undefined, string | undefined, RegExp][] = [
    [
      "a major that does not exist",
      "99",
      undefined,
      /^CC_NODE_VERSION=99: no Node\.js 99 is available; available majors: 24, 23, 22, 20, 18, 16, 14, 0\.$/,
    ],
    [
      "a minor that does not exist",
      "22.99",
      undefined,
      /^CC_NODE_VERSION=22\.99: no Node\.js 22\.99\.x is available; the newest 22\.x is 22\.16\.0\.$/,
    ],
    [
      "a patch that does not exist",
      "22.16.9",
      undefined,
      /^CC_NODE_VERSION=22\.16\.9: no Node\.js 22\.16\.9 is available/,
    ],
    [
      "not a version",
      "abc",
      undefined,
      /^CC_NODE_VERSION="abc" is not a Node\.js version: use <major>, <major>\.<minor> or <major>\.<minor>\.<patch>/,
    ],
    ["x in a version", "22.x.y", undefined, /^CC_NODE_VERSION="22\.x\.y" is not a Node\.js version/],
    ["a range is not accepted there", ">=20", undefined, /^CC_NODE_VERSION=">=20" is not a Node\.js version/],
    ["too many parts", "22.16.0.1", undefined, /CC_NODE_VERSION="22\.16\.0\.1" is not/],
    ["lts/* is not a shape", "lts/*", undefined, /CC_NODE_VERSION="lts\/\*" is not/],
    ["leading zeros", "022", undefined, /CC_NODE_VERSION="022" is not/],
    [
      "a range nothing satisfies",
      undefined,
      ">=30",
      /^engines\.node ">=30" in package\.json: no available Node\.js version satisfies this range; available majors: 24/,
    ],
    [
      "an invalid range",
      undefined,
      "banana",
      /^engines\.node "banana" in package\.json is not a valid version range/,
    ],
  ];
  for (const [name, cc, engines, error] of cases) {
    it(name, () => {
      const r = chooseNodeVersion({ ccNodeVersion: cc, enginesNode: engines, available: VERSIONS });
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, error);
    });
  }

  it("no LTS available: says to set CC_NODE_VERSION", () => {
    const r = chooseNodeVersion({
      ccNodeVersion: undefined,
      enginesNode: undefined,
      available: [v("24.2.0"), v("18.20.8")],
    });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /set CC_NODE_VERSION/);
  });
});

describe("chooseNpmVersion", () => {
  const NPM = [
    "6.14.17",
    "6.14.18",
    "8.19.3",
    "8.19.4",
    "10.8.2",
    "10.9.2",
    "10.9.3",
    "11.0.0",
    "11.4.2",
    "11.5.0-pre.0",
    "12.0.0-rc",
  ];
  const ENGINES: Record<string, string | undefined> = {
    "6.14.18": undefined,
    "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
    "10.8.2": "^18.17.0 || >=20.5.0",
    "10.9.2": "^18.17.0 || >=20.5.0",
    "10.9.3": "^20.17.0 || >=22.9.0",
    "11.0.0": "^20.17.0 || >=22.9.0",
    "11.4.2": "^20.17.0 || >=22.9.0",
  };
  const cases: [string, string, string | null][] = [
    ["Node 22.16.0: npm 10, the newest 10.9.x it accepts", "22.16.0", "10.9.3"],
    ["Node 18.20.8: the newest npm 10 whose engines accept it", "18.20.8", "10.9.2"],
    ["Node 24: npm 11, not the prerelease", "24.2.0", "11.4.2"],
    ["Node 16: npm 8", "16.20.2", "8.19.4"],
    ["Node 17: npm 8", "17.9.1", "8.19.4"],
    ["Node 14: npm 6 (no engines: accepted)", "14.21.3", "6.14.18"],
    ["Node 12: npm 6", "12.22.12", "6.14.18"],
    ["Node 18.0.0: no npm 10 accepts it", "18.0.0", null],
    ["not a version", "abc", null],
  ];
  for (const [name, node, want] of cases) {
    it(name, () => assert.equal(chooseNpmVersion(node, NPM, ENGINES), want));
  }

  it("the bundled npm table", () => {
    assert.deepEqual(
      [26, 24, 23, 22, 18, 17, 16, 15, 14, 12, 0].map(bundledNpmMajor),
      [11, 11, 10, 10, 10, 8, 8, 6, 6, 6, 6],
    );
  });
});

describe("formatVersionList", () => {
  it("one line per major, newest patch, LTS and end-of-life marked", () => {
    assert.deepEqual(formatVersionList(VERSIONS), [
      "24.2.0",
      "23.11.1  end-of-life",
      "22.16.0  LTS (Jod)",
      "20.19.2  LTS (Iron)",
      "18.20.8  LTS (Hydrogen), end-of-life",
      "16.20.2  LTS (Gallium), end-of-life",
      "14.21.3  LTS (Fermium), end-of-life",
      "0.12.18  end-of-life",
    ]);
  });
  it("an empty list", () => assert.deepEqual(formatVersionList([]), []));
});
