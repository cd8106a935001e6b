import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { markVersions } from "../../../src/core/node-versions.js";
import {
  ignoresNodeModules,
  type NodeBuildInput,
  type NodeBuildPlan,
  type NodeProjectFiles,
  parsePackageJson,
  parsePackageManager,
  planNodeBuild,
  registryHost,
} from "../../../src/core/plan-node.js";
import { readWorkers } from "../../../src/core/workers.js";

/** Real entries of node-releases' release-schedule.json; on TODAY 22 is the newest LTS, 18 and 23 are end-of-life. */
const SCHEDULE = {
  v14: { start: "2020-04-21", lts: "2020-10-27", end: "2023-04-30", codename: "Fermium" },
  v16: { start: "2021-04-20", lts: "2021-10-26", end: "2023-09-11", codename: "Gallium" },
  v18: { start: "2022-04-19", lts: "2022-10-25", end: "2025-04-30", codename: "Hydrogen" },
  v20: { start: "2023-04-18", lts: "2023-10-24", end: "2026-04-30", codename: "Iron" },
  v22: { start: "2024-04-24", lts: "2024-10-29", end: "2027-04-30", codename: "Jod" },
  v23: { start: "2024-10-16", end: "2025-06-01" },
  v24: { start: "2025-05-06", lts: "2025-10-28", end: "2028-04-30", codename: "Krypton" },
};
const TODAY = "2025-07-01";
const VERSIONS = markVersions(
  [
    "14.17.0",
    "14.21.3",
    "16.8.0",
    "16.20.2",
    "18.20.8",
    "20.19.2",
    "22.15.1",
    "22.16.0",
    "23.11.1",
    "24.2.0",
  ],
  SCHEDULE,
  TODAY,
);
const NPM_VERSIONS = ["6.14.18", "8.19.4", "10.9.2", "11.4.2"];
const NPM_ENGINES: Record<string, string | undefined> = {
  "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
  "10.9.2": "^18.17.0 || >=20.5.0",
  "11.4.2": "^20.17.0 || >=22.9.0",
};

const TOKEN = "npm_s3cr3tT0k3nValue";

const pkg = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: "app", version: "1.0.0", scripts: { start: "node server.js" }, ...extra });

const NO_LOCKS = {
  packageLock: false,
  npmShrinkwrap: false,
  yarnLock: false,
  bunLock: false,
  pnpmLock: false,
};
const FILES: NodeProjectFiles = {
  packageJson: pkg(),
  gitignore: "/node_modules\n",
  lockFiles: NO_LOCKS,
  yarnrcYml: false,
};

type Files = Partial<Omit<NodeProjectFiles, "lockFiles">> & {
  lockFiles?: Partial<NodeProjectFiles["lockFiles"]>;
};

function input(vars: Record<string, string> = {}, files: Files = {}): NodeBuildInput {
  return {
    vars: { NODE_ENV: "production", ...vars },
    files: { ...FILES, ...files, lockFiles: { ...NO_LOCKS, ...files.lockFiles } },
    versions: VERSIONS,
    npmVersions: NPM_VERSIONS,
    npmEngines: NPM_ENGINES,
  };
}

function plan(vars: Record<string, string> = {}, files: Files = {}): NodeBuildPlan {
  const r = planNodeBuild(input(vars, files));
  assert.ok(r.ok, r.ok ? "" : r.errors.join("\n"));
  return r.plan;
}

function errors(vars: Record<string, string> = {}, files: Files = {}): string[] {
  const r = planNodeBuild(input(vars, files));
  assert.equal(r.ok, false, "the plan should fail");
  return r.ok ? [] : r.errors;
}

/** The install step's command (the one labelled "Installing dependencies" or CC_CUSTOM_BUILD_TOOL). */
const install = (p: NodeBuildPlan) =>
  p.buildSteps.find(
    (s) => s.label.startsWith("Installing dependencies") || s.label.includes("CC_CUSTOM_BUILD_TOOL"),
  )?.command;

describe("planNodeBuild: package.json (mandatory conditions)", () => {
  const cases: [string, string | null, RegExp[]][] = [
    ["missing", null, [/^No package\.json at the root of the application: add one with "name", "version"/]],
    ["invalid JSON", "{ name: ", [/^package\.json is not valid JSON: .*Fix its syntax\.$/]],
    ["not an object", "[]", [/^package\.json must hold a JSON object/]],
    [
      "no name",
      JSON.stringify({ version: "1.0.0", main: "a.js" }),
      [/^package\.json: "name" is missing: add e\.g\. "name": "my-app"\.$/],
    ],
    [
      "no version",
      JSON.stringify({ name: "a", main: "a.js" }),
      [/^package\.json: "version" is missing: add e\.g\. "version": "1\.0\.0"\.$/],
    ],
    [
      "a name that is not a string",
      JSON.stringify({ name: 3, version: "1", main: "a.js" }),
      [/"name" must be a string/],
    ],
    ["an empty name", JSON.stringify({ name: "", version: "1", main: "a.js" }), [/"name" must not be empty/]],
    [
      "neither main nor scripts.start",
      JSON.stringify({ name: "a", version: "1", scripts: { build: "tsc" } }),
      [
        /neither "scripts\.start" nor "main": add "scripts": \{ "start": "node server\.js" \} or "main": "server\.js"/,
      ],
    ],
    [
      "every problem at once",
      JSON.stringify({ scripts: {} }),
      [/"name" is missing/, /"version" is missing/, /neither "scripts\.start" nor "main"/],
    ],
    ["a script that is not a string", pkg({ scripts: { start: 1 } }), [/"scripts\.start" must be a string/]],
    ["scripts not an object", pkg({ scripts: "node a.js", main: "a.js" }), [/"scripts" must be an object/]],
    [
      "main that looks like an option",
      pkg({ scripts: {}, main: "--require=x" }),
      [/"main" must be a file path/],
    ],
    ["engines.node not a string", pkg({ engines: { node: 22 } }), [/"engines\.node" must be a string/]],
  ];
  for (const [name, text, want] of cases) {
    it(name, () => {
      const errs = errors({}, { packageJson: text });
      assert.equal(errs.length, want.length, errs.join("\n"));
      want.forEach((re, i) => {
        assert.match(errs[i] ?? "", re);
      });
    });
  }

  const valid: [string, string][] = [
    ["scripts.start only", pkg()],
    ["main only", JSON.stringify({ name: "a", version: "1", main: "index.js" })],
    ["a byte order mark", `\uFEFF${pkg()}`],
    ["unknown fields are kept", pkg({ private: true, workspaces: ["a"], type: "module" })],
  ];
  for (const [name, text] of valid) it(`valid: ${name}`, () => void plan({}, { packageJson: text }));
});

describe("planNodeBuild: mandatory conditions that warn", () => {
  const cases: [string, Record<string, string>, string | null, RegExp | null][] = [
    ["all met", {}, "/node_modules\n", null],
    ["node_modules without a slash", {}, "node_modules\n", null],
    ["node_modules/ with a trailing slash", {}, "dist\nnode_modules/\n", null],
    ["**/node_modules", {}, "**/node_modules\n", null],
    ["no .gitignore", {}, null, /^There is no \.gitignore: add one with the line \/node_modules/],
    [
      "/node_modules missing",
      {},
      "dist\n",
      /^\/node_modules is not in \.gitignore: add the line \/node_modules/,
    ],
    ["only in a comment", {}, "# /node_modules\n", /not in \.gitignore/],
    ["taken back by a ! line", {}, "node_modules\n!node_modules\n", /not in \.gitignore/],
    ["a sub-folder's node_modules only", {}, "app/node_modules\n", /not in \.gitignore/],
    [
      "NODE_ENV empty (counts as unset)",
      { NODE_ENV: "" },
      "/node_modules",
      /^NODE_ENV is not set: set NODE_ENV=production/,
    ],
    [
      "NODE_ENV development",
      { NODE_ENV: "development" },
      "/node_modules",
      /^NODE_ENV is "development": set NODE_ENV=production \(required by the mandatory configuration\)\.$/,
    ],
  ];
  for (const [name, vars, gitignore, want] of cases) {
    it(name, () => {
      const p = plan(vars, { gitignore });
      if (want === null) assert.deepEqual(p.warnings, []);
      else {
        assert.equal(p.warnings.length, 1, p.warnings.join("\n"));
        assert.match(p.warnings[0] ?? "", want);
      }
    });
  }

  it("NODE_ENV not set at all", () => {
    const r = planNodeBuild({ ...input(), vars: {} });
    assert.ok(r.ok);
    assert.deepEqual(r.plan.warnings, [
      "NODE_ENV is not set: set NODE_ENV=production (required by the mandatory configuration).",
    ]);
  });

  it("the log says where to listen", () =>
    assert.ok(plan().logLines.includes("The application must listen on 0.0.0.0:8080 (PORT=8080).")));
});

describe("planNodeBuild: Node.js and npm versions", () => {
  const cases: [string, Record<string, string>, Record<string, unknown>, string, string | null, RegExp][] = [
    [
      "default: the newest LTS",
      {},
      {},
      "22.16.0",
      "10.9.2",
      /^Node\.js version: neither engines\.node .* the newest LTS \(Jod\): 22\.16\.0\.$/,
    ],
    [
      "CC_NODE_VERSION major",
      { CC_NODE_VERSION: "20" },
      {},
      "20.19.2",
      "10.9.2",
      /CC_NODE_VERSION=20 \(the newest 20\.x\): 20\.19\.2/,
    ],
    [
      "CC_NODE_VERSION minor",
      { CC_NODE_VERSION: "22.15" },
      {},
      "22.15.1",
      "10.9.2",
      /CC_NODE_VERSION=22\.15/,
    ],
    [
      "CC_NODE_VERSION exact",
      { CC_NODE_VERSION: "24.2.0" },
      {},
      "24.2.0",
      "11.4.2",
      /CC_NODE_VERSION=24\.2\.0: 24\.2\.0/,
    ],
    ["CC_NODE_VERSION 16: npm 8", { CC_NODE_VERSION: "16" }, {}, "16.20.2", "8.19.4", /CC_NODE_VERSION=16/],
    ["CC_NODE_VERSION 14: npm 6", { CC_NODE_VERSION: "14" }, {}, "14.21.3", "6.14.18", /CC_NODE_VERSION=14/],
    [
      "engines.node",
      {},
      { engines: { node: ">=18 <21" } },
      "20.19.2",
      "10.9.2",
      /^Node\.js version: engines\.node ">=18 <21" in package\.json: 20\.19\.2\.$/,
    ],
    [
      "engines.node over CC_NODE_VERSION",
      { CC_NODE_VERSION: "22" },
      { engines: { node: ">=18 <21" } },
      "20.19.2",
      "10.9.2",
      /engines\.node ">=18 <21" in package\.json \(it takes priority over CC_NODE_VERSION=22\): 20\.19\.2/,
    ],
  ];
  for (const [name, vars, extra, node, npm, log] of cases) {
    it(name, () => {
      const p = plan(vars, { packageJson: pkg(extra) });
      assert.equal(p.nodeVersion, node);
      assert.equal(p.npmVersion, npm);
      assert.match(p.logLines[0] ?? "", log);
      assert.match(p.logLines[1] ?? "", new RegExp(`^npm ${npm?.replace(/\./g, "\\.")}: the newest npm`));
    });
  }

  it("an invalid CC_NODE_VERSION beside engines.node is ignored with a warning", () => {
    const p = plan({ CC_NODE_VERSION: "abc" }, { packageJson: pkg({ engines: { node: "22.x" } }) });
    assert.equal(p.nodeVersion, "22.16.0");
    assert.ok(
      p.warnings.some((w) =>
        /^CC_NODE_VERSION="abc" is not a Node\.js version: .* It is ignored: engines\.node/.test(w),
      ),
      p.warnings.join("\n"),
    );
  });

  it("an end-of-life version warns", () => {
    const p = plan({ CC_NODE_VERSION: "18" });
    assert.ok(
      p.warnings.some((w) => /^Node\.js 18\.20\.8 is end-of-life/.test(w)),
      p.warnings.join("\n"),
    );
  });

  it("no npm fits: null, and the log says so", () => {
    const p = planNodeBuild({ ...input({ CC_NODE_VERSION: "22" }), npmVersions: ["11.4.2"] });
    assert.ok(p.ok);
    assert.equal(p.plan.npmVersion, null);
    assert.ok(p.plan.logLines.includes("No npm 10.x release accepts Node.js 22.16.0."));
  });

  const bad: [string, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [
      "a major that does not exist",
      { CC_NODE_VERSION: "99" },
      {},
      /^CC_NODE_VERSION=99: no Node\.js 99 is available; available majors: 24, 23, 22/,
    ],
    ["not a version", { CC_NODE_VERSION: "abc" }, {}, /^CC_NODE_VERSION="abc" is not a Node\.js version/],
    [
      "a range nothing satisfies",
      {},
      { engines: { node: ">=30" } },
      /^engines\.node ">=30" in package\.json: no available Node\.js version satisfies/,
    ],
  ];
  for (const [name, vars, extra, want] of bad) {
    it(`error: ${name}`, () => {
      const errs = errors(vars, { packageJson: pkg(extra) });
      assert.equal(errs.length, 1, errs.join("\n"));
      assert.match(errs[0] ?? "", want);
    });
  }
});

describe("planNodeBuild: build tool", () => {
  const L = (locks: Partial<NodeProjectFiles["lockFiles"]>) => ({ lockFiles: locks });
  const cases: [string, Record<string, string>, Files, NodeBuildPlan["tool"], RegExp][] = [
    [
      "no lock file: npm install",
      {},
      {},
      "npm-install",
      /^Build tool: npm install \(the default \(no bun\.lock, bun\.lockb or yarn\.lock\)\)\.$/,
    ],
    [
      "package-lock.json stays npm install",
      {},
      L({ packageLock: true }),
      "npm-install",
      /package-lock\.json is followed by npm install/,
    ],
    [
      "bun.lock: bun",
      {},
      L({ bunLock: true }),
      "bun",
      /^Build tool: Bun \(bun\.lock\/bun\.lockb is in the application folder\)\.$/,
    ],
    [
      "yarn.lock: yarn",
      {},
      L({ yarnLock: true }),
      "yarn",
      /^Build tool: Yarn Classic \(v1\) \(yarn\.lock is in the application folder\)\.$/,
    ],
    [
      "yarn.lock and .yarnrc.yml: yarn2",
      {},
      { ...L({ yarnLock: true }), yarnrcYml: true },
      "yarn2",
      /\.yarnrc\.yml is present/,
    ],
    [
      "yarn.lock and packageManager yarn@4: yarn2",
      {},
      { ...L({ yarnLock: true }), packageJson: pkg({ packageManager: "yarn@4.1.0" }) },
      "yarn2",
      /packageManager is yarn@4\.1\.0/,
    ],
    [
      "yarn.lock and packageManager yarn@1: yarn",
      {},
      { ...L({ yarnLock: true }), packageJson: pkg({ packageManager: "yarn@1.22.22" }) },
      "yarn",
      /yarn\.lock/,
    ],
    [
      "CC_NODE_BUILD_TOOL=npm",
      { CC_NODE_BUILD_TOOL: "npm" },
      {},
      "npm-install",
      /^Build tool: npm install \(CC_NODE_BUILD_TOOL=npm\)\.$/,
    ],
    [
      "CC_NODE_BUILD_TOOL=npm-install",
      { CC_NODE_BUILD_TOOL: "npm-install" },
      {},
      "npm-install",
      /CC_NODE_BUILD_TOOL=npm-install/,
    ],
    [
      "CC_NODE_BUILD_TOOL=npm with package-lock.json",
      { CC_NODE_BUILD_TOOL: "npm" },
      L({ packageLock: true }),
      "npm-install",
      /CC_NODE_BUILD_TOOL=npm/,
    ],
    [
      "CC_NODE_BUILD_TOOL=npm-ci",
      { CC_NODE_BUILD_TOOL: "npm-ci" },
      L({ packageLock: true }),
      "npm-ci",
      /^Build tool: npm ci/,
    ],
    [
      "npm-ci with npm-shrinkwrap.json",
      { CC_NODE_BUILD_TOOL: "npm-ci" },
      L({ npmShrinkwrap: true }),
      "npm-ci",
      /npm ci/,
    ],
    ["CC_NODE_BUILD_TOOL=yarn", { CC_NODE_BUILD_TOOL: "yarn" }, {}, "yarn", /CC_NODE_BUILD_TOOL=yarn\)/],
    ["CC_NODE_BUILD_TOOL=yarn2", { CC_NODE_BUILD_TOOL: "yarn2" }, {}, "yarn2", /CC_NODE_BUILD_TOOL=yarn2/],
    ["CC_NODE_BUILD_TOOL=bun", { CC_NODE_BUILD_TOOL: "bun" }, {}, "bun", /CC_NODE_BUILD_TOOL=bun/],
    [
      "CC_NODE_BUILD_TOOL=custom",
      { CC_NODE_BUILD_TOOL: "custom", CC_CUSTOM_BUILD_TOOL: "pnpm install && pnpm build" },
      {},
      "custom",
      /^Build tool: CC_CUSTOM_BUILD_TOOL \(CC_NODE_BUILD_TOOL=custom\)\.$/,
    ],
    [
      "the variable overrides yarn.lock",
      { CC_NODE_BUILD_TOOL: "npm" },
      L({ yarnLock: true }),
      "npm-install",
      /CC_NODE_BUILD_TOOL=npm, over the lock-file rule \(yarn\.lock\)/,
    ],
    [
      "the variable overrides bun.lock",
      { CC_NODE_BUILD_TOOL: "yarn" },
      L({ bunLock: true }),
      "yarn",
      /over the lock-file rule \(bun\.lock\/bun\.lockb\)/,
    ],
    [
      "the variable settles conflicting lock files",
      { CC_NODE_BUILD_TOOL: "bun" },
      L({ bunLock: true, yarnLock: true }),
      "bun",
      /CC_NODE_BUILD_TOOL=bun/,
    ],
    [
      "the value is read without case and spaces",
      { CC_NODE_BUILD_TOOL: " Yarn " },
      {},
      "yarn",
      /CC_NODE_BUILD_TOOL=yarn/,
    ],
  ];
  for (const [name, vars, files, tool, log] of cases) {
    it(name, () => {
      const p = plan(vars, files);
      assert.equal(p.tool, tool);
      const line = p.logLines.find((l) => l.startsWith("Build tool: "));
      assert.match(line ?? "", log);
    });
  }

  const bad: [string, Record<string, string>, Files, RegExp][] = [
    [
      "an unknown value lists the values",
      { CC_NODE_BUILD_TOOL: "pnpm" },
      {},
      /^CC_NODE_BUILD_TOOL="pnpm" is not a build tool: use one of bun, npm, npm-install, npm-ci, yarn, yarn2, custom\.$/,
    ],
    [
      "custom without CC_CUSTOM_BUILD_TOOL",
      { CC_NODE_BUILD_TOOL: "custom" },
      {},
      /^CC_NODE_BUILD_TOOL=custom needs CC_CUSTOM_BUILD_TOOL/,
    ],
    [
      "conflicting lock files",
      {},
      L({ bunLock: true, yarnLock: true }),
      /^Conflicting lock files: bun\.lock \(or bun\.lockb\) and yarn\.lock .* Set CC_NODE_BUILD_TOOL \(bun, yarn or yarn2\) to choose, or delete the lock file you do not use\.$/,
    ],
    [
      "npm-ci without a lock file",
      { CC_NODE_BUILD_TOOL: "npm-ci" },
      {},
      /^CC_NODE_BUILD_TOOL=npm-ci needs package-lock\.json or npm-shrinkwrap\.json/,
    ],
    [
      "yarn with packageManager yarn@4",
      { CC_NODE_BUILD_TOOL: "yarn" },
      { packageJson: pkg({ packageManager: "yarn@4.1.0" }) },
      /^CC_NODE_BUILD_TOOL=yarn is Yarn Classic \(v1\), but packageManager is yarn@4\.1\.0: set CC_NODE_BUILD_TOOL=yarn2\.$/,
    ],
    [
      "yarn2 with packageManager yarn@1",
      { CC_NODE_BUILD_TOOL: "yarn2" },
      { packageJson: pkg({ packageManager: "yarn@1.22.22" }) },
      /set CC_NODE_BUILD_TOOL=yarn\.$/,
    ],
    [
      "yarn.lock with packageManager pnpm",
      {},
      { lockFiles: { yarnLock: true }, packageJson: pkg({ packageManager: "pnpm@9.1.0" }) },
      /packageManager is pnpm@9\.1\.0/,
    ],
    [
      "yarn2 on a Node.js without Corepack",
      { CC_NODE_BUILD_TOOL: "yarn2", CC_NODE_VERSION: "16.8.0" },
      {},
      /^Yarn 2\+ is provided through Corepack, which Node\.js 16\.8\.0 lacks/,
    ],
  ];
  for (const [name, vars, files, want] of bad) {
    it(`error: ${name}`, () => {
      const errs = errors(vars, files);
      assert.equal(errs.length, 1, errs.join("\n"));
      assert.match(errs[0] ?? "", want);
    });
  }

  const warned: [string, Record<string, string>, Files, RegExp][] = [
    [
      "pnpm-lock.yaml without custom",
      {},
      L({ pnpmLock: true }),
      /^pnpm-lock\.yaml is not used: for pnpm set CC_NODE_BUILD_TOOL=custom/,
    ],
    [
      "a yarn.lock the variable overrides",
      { CC_NODE_BUILD_TOOL: "npm" },
      L({ yarnLock: true }),
      /^yarn\.lock is not used: the build tool is npm install\.$/,
    ],
    [
      "a package-lock.json beside yarn.lock",
      {},
      L({ yarnLock: true, packageLock: true }),
      /^package-lock\.json \/ npm-shrinkwrap\.json is not used/,
    ],
    [
      "CC_CUSTOM_BUILD_TOOL without custom",
      { CC_CUSTOM_BUILD_TOOL: "pnpm i" },
      {},
      /^CC_CUSTOM_BUILD_TOOL is ignored: set CC_NODE_BUILD_TOOL=custom/,
    ],
    [
      "packageManager pnpm with npm",
      {},
      { packageJson: pkg({ packageManager: "pnpm@9.1.0" }) },
      /packageManager is pnpm@9\.1\.0 but dependencies are installed with npm: CC_NODE_BUILD_TOOL must be set for pnpm/,
    ],
    [
      "packageManager that is not name@version",
      {},
      { packageJson: pkg({ packageManager: "pnpm" }) },
      /"packageManager" "pnpm" is not <name>@<version>/,
    ],
  ];
  for (const [name, vars, files, want] of warned) {
    it(`warning: ${name}`, () => {
      const p = plan(vars, files);
      assert.equal(p.warnings.length, 1, p.warnings.join("\n"));
      assert.match(p.warnings[0] ?? "", want);
    });
  }
});

describe("planNodeBuild: development dependencies (section 8 table × tools)", () => {
  // The four rows of the table, plus a NODE_ENV other than production (the package manager's default).
  const rows: [string, Record<string, string>, boolean, RegExp][] = [
    [
      "any NODE_ENV, install",
      { NODE_ENV: "production", CC_NODE_DEV_DEPENDENCIES: "install" },
      true,
      /\(CC_NODE_DEV_DEPENDENCIES=install\)/,
    ],
    [
      "any NODE_ENV, ignore",
      { NODE_ENV: "development", CC_NODE_DEV_DEPENDENCIES: "ignore" },
      false,
      /\(CC_NODE_DEV_DEPENDENCIES=ignore\)/,
    ],
    [
      "production, unset",
      { NODE_ENV: "production" },
      false,
      /\(NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default\)/,
    ],
    ["unset, unset", { NODE_ENV: "" }, true, /\(NODE_ENV unset and CC_NODE_DEV_DEPENDENCIES unset/],
    [
      "development, unset",
      { NODE_ENV: "development" },
      true,
      /\(NODE_ENV=development and CC_NODE_DEV_DEPENDENCIES unset/,
    ],
  ];
  const tools: [
    string,
    Record<string, string>,
    Files,
    string,
    string,
    Record<string, string>,
    Record<string, string>,
  ][] = [
    // tool, vars, files, command with dev deps, command without, env with, env without
    [
      "npm install",
      {},
      {},
      "npm install --include=dev",
      "npm install --omit=dev",
      { npm_config_include: "dev" },
      { npm_config_omit: "dev" },
    ],
    [
      "npm ci",
      { CC_NODE_BUILD_TOOL: "npm-ci" },
      { lockFiles: { packageLock: true } },
      "npm ci --include=dev",
      "npm ci --omit=dev",
      { npm_config_include: "dev" },
      { npm_config_omit: "dev" },
    ],
    [
      "npm 6 (Node.js 14)",
      { CC_NODE_VERSION: "14" },
      {},
      "npm install --production=false",
      "npm install --production",
      { npm_config_production: "false" },
      { npm_config_production: "true" },
    ],
    [
      "yarn v1",
      { CC_NODE_BUILD_TOOL: "yarn" },
      {},
      "yarn install --production=false",
      "yarn install --production=true",
      {},
      {},
    ],
    [
      "yarn2",
      { CC_NODE_BUILD_TOOL: "yarn2" },
      {},
      "yarn install",
      "yarn workspaces focus --all --production",
      {},
      {},
    ],
    ["bun", { CC_NODE_BUILD_TOOL: "bun" }, {}, "bun install", "bun install --production", {}, {}],
  ];
  const DEV_KEYS = ["npm_config_include", "npm_config_omit", "npm_config_production"];
  for (const [row, rowVars, installed, why] of rows) {
    for (const [tool, toolVars, files, withDev, withoutDev, envWith, envWithout] of tools) {
      it(`${row} → ${installed ? "installed" : "not installed"}, with ${tool}`, () => {
        const p = plan({ ...rowVars, ...toolVars }, files);
        assert.equal(p.devDependencies, installed);
        assert.equal(install(p), installed ? withDev : withoutDev);
        const env = Object.fromEntries(Object.entries(p.buildEnv).filter(([k]) => DEV_KEYS.includes(k)));
        assert.deepEqual(env, installed ? envWith : envWithout);
        assert.match(p.logLines.find((l) => l.startsWith("Development dependencies: ")) ?? "", why);
      });
    }
  }

  it("custom: left to the command, NODE_ENV as the app set it", () => {
    const p = plan({
      NODE_ENV: "staging",
      CC_NODE_BUILD_TOOL: "custom",
      CC_CUSTOM_BUILD_TOOL: "pnpm install --prod",
    });
    assert.equal(install(p), "pnpm install --prod");
    assert.equal(p.buildEnv.NODE_ENV, "staging");
    for (const k of DEV_KEYS) assert.equal(p.buildEnv[k], undefined);
    assert.ok(
      p.logLines.includes(
        "Development dependencies: left to CC_CUSTOM_BUILD_TOOL (NODE_ENV is passed as the application sets it).",
      ),
    );
  });

  it("custom with CC_NODE_DEV_DEPENDENCIES warns that the command decides", () => {
    const p = plan({
      CC_NODE_BUILD_TOOL: "custom",
      CC_CUSTOM_BUILD_TOOL: "pnpm install",
      CC_NODE_DEV_DEPENDENCIES: "install",
    });
    assert.ok(
      p.warnings.some((w) =>
        w.startsWith("CC_NODE_DEV_DEPENDENCIES is not applied with CC_NODE_BUILD_TOOL=custom"),
      ),
    );
  });

  it("an unknown value is an error naming the choices", () => {
    assert.deepEqual(errors({ CC_NODE_DEV_DEPENDENCIES: "yes" }), [
      'CC_NODE_DEV_DEPENDENCIES="yes" is not a choice: use install or ignore (or unset it).',
    ]);
  });

  it("yarn 3 through Corepack imports workspace-tools before focusing", () => {
    const p = plan({ CC_NODE_BUILD_TOOL: "yarn2" }, { packageJson: pkg({ packageManager: "yarn@3.6.4" }) });
    assert.deepEqual(
      p.buildSteps.map((s) => s.command),
      [
        "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; } && corepack enable",
        "yarn plugin import workspace-tools",
        "yarn workspaces focus --all --production",
      ],
    );
  });
});

describe("planNodeBuild: build steps", () => {
  const COREPACK =
    "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; } && corepack enable";
  const cases: [string, Record<string, string>, Files, [string, string][]][] = [
    ["npm, no hook", {}, {}, [["Installing dependencies: npm install --omit=dev", "npm install --omit=dev"]]],
    [
      "hooks around the install, verbatim",
      { CC_PRE_BUILD_HOOK: "echo pre && ./setup.sh", CC_POST_BUILD_HOOK: "npm run build\nnpm run check" },
      {},
      [
        ["Running CC_PRE_BUILD_HOOK", "echo pre && ./setup.sh"],
        ["Installing dependencies: npm install --omit=dev", "npm install --omit=dev"],
        ["Running CC_POST_BUILD_HOOK", "npm run build\nnpm run check"],
      ],
    ],
    [
      "custom: the contract's pnpm example",
      {
        CC_NODE_BUILD_TOOL: "custom",
        CC_PRE_BUILD_HOOK: "npm install -g pnpm",
        CC_CUSTOM_BUILD_TOOL: "pnpm install && pnpm build",
      },
      {},
      [
        ["Running CC_PRE_BUILD_HOOK", "npm install -g pnpm"],
        ["Running CC_CUSTOM_BUILD_TOOL", "pnpm install && pnpm build"],
      ],
    ],
    [
      "packageManager pnpm with custom: Corepack first",
      { CC_NODE_BUILD_TOOL: "custom", CC_CUSTOM_BUILD_TOOL: "pnpm install" },
      { packageJson: pkg({ packageManager: "pnpm@9.1.0" }) },
      [
        ["Enabling Corepack (packageManager pnpm@9.1.0)", COREPACK],
        ["Running CC_CUSTOM_BUILD_TOOL", "pnpm install"],
      ],
    ],
    [
      "yarn v1 without packageManager: Yarn Classic from npm",
      {},
      { lockFiles: { yarnLock: true } },
      [
        [
          "Installing Yarn Classic (v1)",
          "yarn --version 2>/dev/null | grep -q '^1\\.' || npm install --global yarn@1",
        ],
        ["Installing dependencies: yarn install --production=true", "yarn install --production=true"],
      ],
    ],
    [
      "yarn v1 with packageManager: Corepack provides it",
      {},
      { lockFiles: { yarnLock: true }, packageJson: pkg({ packageManager: "yarn@1.22.22" }) },
      [
        ["Enabling Corepack (packageManager yarn@1.22.22)", COREPACK],
        ["Installing dependencies: yarn install --production=true", "yarn install --production=true"],
      ],
    ],
    [
      "yarn2 with packageManager yarn@4",
      { CC_NODE_DEV_DEPENDENCIES: "install" },
      { lockFiles: { yarnLock: true }, packageJson: pkg({ packageManager: "yarn@4.1.0+sha512.abc" }) },
      [
        ["Enabling Corepack (packageManager yarn@4.1.0+sha512.abc)", COREPACK],
        ["Installing dependencies: yarn install", "yarn install"],
      ],
    ],
    [
      "yarn2 without packageManager: the latest stable Yarn through Corepack",
      { CC_NODE_DEV_DEPENDENCIES: "install" },
      { lockFiles: { yarnLock: true }, yarnrcYml: true },
      [
        [
          "Enabling Yarn (latest stable) through Corepack",
          "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; } && corepack enable && corepack prepare yarn@stable --activate",
        ],
        ["Installing dependencies: yarn install", "yarn install"],
      ],
    ],
    [
      "bun: the latest Bun from npm",
      {},
      { lockFiles: { bunLock: true } },
      [
        ["Installing Bun (latest)", "command -v bun >/dev/null 2>&1 || npm install --global bun"],
        ["Installing dependencies: bun install --production", "bun install --production"],
      ],
    ],
    [
      "bun pinned by packageManager",
      {},
      { lockFiles: { bunLock: true }, packageJson: pkg({ packageManager: "bun@1.2.16" }) },
      [
        [
          "Installing Bun 1.2.16 (packageManager)",
          '[ "$(bun --version 2>/dev/null)" = 1.2.16 ] || npm install --global bun@1.2.16',
        ],
        ["Installing dependencies: bun install --production", "bun install --production"],
      ],
    ],
    [
      "the tool is set up before the pre-build hook",
      { CC_PRE_BUILD_HOOK: "yarn config set registry https://r.example.com" },
      { lockFiles: { yarnLock: true } },
      [
        [
          "Installing Yarn Classic (v1)",
          "yarn --version 2>/dev/null | grep -q '^1\\.' || npm install --global yarn@1",
        ],
        ["Running CC_PRE_BUILD_HOOK", "yarn config set registry https://r.example.com"],
        ["Installing dependencies: yarn install --production=true", "yarn install --production=true"],
      ],
    ],
  ];
  for (const [name, vars, files, steps] of cases) {
    it(name, () => {
      const p = plan(vars, files);
      assert.deepEqual(
        p.buildSteps.map((s) => [s.label, s.command]),
        steps,
      );
      const logged = p.logLines.filter((l) => l.startsWith("Step "));
      assert.deepEqual(
        logged,
        steps.map(([label], i) => `Step ${i + 1}/${steps.length}: ${label}`),
      );
    });
  }

  it("packageManager on a Node.js without Corepack: a warning, no Corepack step", () => {
    const p = plan({ CC_NODE_VERSION: "14.17.0" }, { packageJson: pkg({ packageManager: "pnpm@6.0.0" }) });
    assert.equal(p.buildSteps.length, 1);
    assert.ok(
      p.warnings.some((w) =>
        /^packageManager pnpm@6\.0\.0 is not applied: Corepack comes with Node\.js \^14\.19\.0 \|\| >=16\.9\.0, and this build uses 14\.17\.0\.$/.test(
          w,
        ),
      ),
      p.warnings.join("\n"),
    );
  });

  it("Corepack from Node.js 14.19 and 16.9", () => {
    for (const [node, has] of [
      ["14.21.3", true],
      ["16.8.0", false],
      ["16.20.2", true],
    ] as const) {
      const p = plan(
        { CC_NODE_VERSION: node, CC_NODE_BUILD_TOOL: "custom", CC_CUSTOM_BUILD_TOOL: "pnpm i" },
        { packageJson: pkg({ packageManager: "pnpm@8.0.0" }) },
      );
      assert.equal(p.buildSteps[0]?.label.startsWith("Enabling Corepack"), has, node);
    }
  });
});

describe("planNodeBuild: build environment", () => {
  it("the app's variables with $APP_HOME expanded, INSTANCE_TYPE=build, YARN_GLOBAL_FOLDER passed through", () => {
    const p = plan(
      { YARN_GLOBAL_FOLDER: "$APP_HOME/.yarncache/", CC_NODE_BUILD_TOOL: "yarn2", APP_ID: "stale" },
      { packageJson: pkg({ packageManager: "yarn@4.1.0" }) },
    );
    assert.equal(p.buildEnv.YARN_GLOBAL_FOLDER, "/app/.yarncache/");
    assert.equal(p.buildEnv.INSTANCE_TYPE, "build");
    assert.equal(p.buildEnv.NODE_ENV, "production");
    assert.equal(p.buildEnv.APP_ID, undefined, "read-only names are the platform's");
    assert.ok(p.logLines.includes("Yarn global folder: /app/.yarncache/ (kept with the application)."));
  });

  it("yarn2 without YARN_GLOBAL_FOLDER: a tip in the log", () => {
    const p = plan({ CC_NODE_BUILD_TOOL: "yarn2" });
    assert.ok(
      p.logLines.some((l) =>
        l.startsWith("Tip: with Yarn 3 or 4, set YARN_GLOBAL_FOLDER=$APP_HOME/.yarncache/"),
      ),
    );
  });

  it("another app home", () => {
    const r = planNodeBuild({
      ...input({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${APP_HOME} form of a variable value
        YARN_GLOBAL_FOLDER: "${APP_HOME}/.y",
      }),
      appHome: "/srv/app",
    });
    assert.ok(r.ok);
    assert.equal(r.plan.buildEnv.YARN_GLOBAL_FOLDER, "/srv/app/.y");
  });

  it("NODE_ENV unset stays unset", () => {
    const r = planNodeBuild({ ...input(), vars: {} });
    assert.ok(r.ok);
    assert.equal("NODE_ENV" in r.plan.buildEnv, false);
  });
});

describe("planNodeBuild: start command", () => {
  const main = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ name: "a", version: "1", main: "server.js", ...extra });
  const cases: [string, Record<string, string>, Files, string[]][] = [
    ["scripts.start `node server.js`, no prestart/poststart: run directly", {}, {}, ["node", "server.js"]],
    [
      "scripts.start with prestart: npm start (it runs prestart and poststart)",
      {},
      { packageJson: pkg({ scripts: { start: "node server.js", prestart: "node m.js" } }) },
      ["npm", "start"],
    ],
    [
      "scripts.start with poststart: npm start",
      {},
      { packageJson: pkg({ scripts: { start: "node server.js", poststart: "echo up" } }) },
      ["npm", "start"],
    ],
    [
      "scripts.start that a shell must read (&&, $VAR, quotes): npm start",
      {},
      { packageJson: pkg({ scripts: { start: "node a.js && node b.js" } }) },
      ["npm", "start"],
    ],
    [
      "scripts.start with a variable: npm start",
      {},
      { packageJson: pkg({ scripts: { start: "node server.js --port $PORT" } }) },
      ["npm", "start"],
    ],
    [
      "scripts.start not a node command: npm start",
      {},
      { packageJson: pkg({ scripts: { start: "next start" } }) },
      ["npm", "start"],
    ],
    [
      "plain node command with flags and arguments: run directly",
      {},
      { packageJson: pkg({ scripts: { start: "node --enable-source-maps dist/main.js --port=8080" } }) },
      ["node", "--enable-source-maps", "dist/main.js", "--port=8080"],
    ],
    ["main only", {}, { packageJson: main() }, ["node", "server.js"]],
    [
      "main with prestart: prestart, then node <main>",
      {},
      { packageJson: main({ scripts: { prestart: "node migrate.js" } }) },
      ["/bin/sh", "-c", 'npm run prestart && exec node "$1"', "pier-start", "server.js"],
    ],
    [
      "main with spaces and quotes is an argument, never shell text",
      {},
      { packageJson: main({ main: "my app's.js" }) },
      ["node", "my app's.js"],
    ],
    [
      "scripts.start wins over main",
      {},
      { packageJson: main({ scripts: { start: "node other.js" } }) },
      ["node", "other.js"],
    ],
    ["yarn: yarn start", {}, { lockFiles: { yarnLock: true } }, ["yarn", "start"]],
    ["yarn2: yarn run start", { CC_NODE_BUILD_TOOL: "yarn2" }, {}, ["yarn", "run", "start"]],
    [
      "yarn2 with prestart: run explicitly (Yarn 2+ runs no pre/post scripts)",
      { CC_NODE_BUILD_TOOL: "yarn2" },
      { packageJson: pkg({ scripts: { start: "node s.js", prestart: "node m.js" } }) },
      ["/bin/sh", "-c", "yarn run prestart && exec yarn run start"],
    ],
    [
      "yarn2 with main only: yarn node (Plug'n'Play)",
      { CC_NODE_BUILD_TOOL: "yarn2" },
      { packageJson: main() },
      ["yarn", "node", "server.js"],
    ],
    ["bun: bun run start", { CC_NODE_BUILD_TOOL: "bun" }, {}, ["bun", "run", "start"]],
    ["bun with main only", { CC_NODE_BUILD_TOOL: "bun" }, { packageJson: main() }, ["bun", "server.js"]],
    [
      "bun with main and prestart",
      { CC_NODE_BUILD_TOOL: "bun" },
      { packageJson: main({ scripts: { prestart: "echo" } }) },
      ["/bin/sh", "-c", 'bun run prestart && exec bun "$1"', "pier-start", "server.js"],
    ],
    [
      "yarn v1 with main and prestart",
      { CC_NODE_BUILD_TOOL: "yarn" },
      { packageJson: main({ scripts: { prestart: "echo" } }) },
      ["/bin/sh", "-c", 'yarn run prestart && exec node "$1"', "pier-start", "server.js"],
    ],
    [
      "yarn2 with main and prestart",
      { CC_NODE_BUILD_TOOL: "yarn2" },
      { packageJson: main({ scripts: { prestart: "echo" } }) },
      ["/bin/sh", "-c", 'yarn run prestart && exec yarn node "$1"', "pier-start", "server.js"],
    ],
    [
      "custom: the start script (plain node command: directly)",
      { CC_NODE_BUILD_TOOL: "custom", CC_CUSTOM_BUILD_TOOL: "pnpm i" },
      {},
      ["node", "server.js"],
    ],
    [
      "CC_RUN_COMMAND replaces it",
      { CC_RUN_COMMAND: "node dist/main.js --port 8080" },
      {},
      ["/bin/sh", "-c", "node dist/main.js --port 8080"],
    ],
    [
      "CC_RUN_COMMAND with yarn",
      { CC_RUN_COMMAND: "yarn serve" },
      { lockFiles: { yarnLock: true } },
      ["/bin/sh", "-c", "yarn serve"],
    ],
    [
      "CC_RUN_COMMAND with main only",
      { CC_RUN_COMMAND: "node x.js" },
      { packageJson: main() },
      ["/bin/sh", "-c", "node x.js"],
    ],
    [
      "CC_PRE_RUN_HOOK runs in its own shell before the start command",
      { CC_PRE_RUN_HOOK: "node migrate.js" },
      {},
      [
        "/bin/sh",
        "-c",
        '/bin/sh -ec "$1" && shift && exec "$@"',
        "pier-pre-run",
        "node migrate.js",
        "node",
        "server.js",
      ],
    ],
    [
      "CC_PRE_RUN_HOOK before CC_RUN_COMMAND",
      { CC_PRE_RUN_HOOK: "./warm.sh # comment", CC_RUN_COMMAND: "node a.js" },
      {},
      [
        "/bin/sh",
        "-c",
        '/bin/sh -ec "$1" && shift && exec "$@"',
        "pier-pre-run",
        "./warm.sh # comment",
        "/bin/sh",
        "-c",
        "node a.js",
      ],
    ],
  ];
  for (const [name, vars, files, start] of cases) {
    it(name, () => assert.deepEqual(plan(vars, files).start, start));
  }

  it("a start script run directly gets the variables npm would set; npm start gets none from Pier", () => {
    const direct = plan({}, {});
    assert.deepEqual(direct.runEnv, {
      npm_lifecycle_event: "start",
      npm_lifecycle_script: "node server.js",
      npm_package_name: "app",
      npm_package_version: "1.0.0",
      npm_package_json: "/app/package.json",
    });
    assert.ok(direct.logLines.some((l) => l.includes("run directly")));
    const viaNpm = plan({}, { packageJson: pkg({ scripts: { start: "node s.js", prestart: "echo" } }) });
    assert.deepEqual(viaNpm.runEnv, {});
    assert.deepEqual(plan({ CC_RUN_COMMAND: "node x.js" }, {}).runEnv, {});
  });

  it("poststart with main only warns that it is not run", () => {
    const p = plan({}, { packageJson: main({ scripts: { poststart: "echo bye" } }) });
    assert.ok(p.warnings.some((w) => w.startsWith("scripts.poststart is not run")));
  });

  it("the log names CC_RUN_COMMAND, never its text", () => {
    const p = plan({ CC_RUN_COMMAND: "node a.js --key=hunter22" });
    assert.ok(p.logLines.includes("Start command: CC_RUN_COMMAND (through /bin/sh -c)."));
    assert.ok(!p.logLines.join("\n").includes("hunter22"));
  });
});

describe("readWorkers", () => {
  const cases: [
    string,
    Record<string, string>,
    { command: string; restart: string; delaySeconds: number }[],
  ][] = [
    ["none", {}, []],
    [
      "one, with the defaults",
      { CC_WORKER_COMMAND: "node worker.js" },
      [{ command: "node worker.js", restart: "on-failure", delaySeconds: 1 }],
    ],
    [
      "numbered, in order, after the plain one",
      {
        CC_WORKER_COMMAND_10: "c",
        CC_WORKER_COMMAND_2: "b",
        CC_WORKER_COMMAND: "a",
        CC_WORKER_COMMAND_0: "a0",
      },
      [
        { command: "a", restart: "on-failure", delaySeconds: 1 },
        { command: "a0", restart: "on-failure", delaySeconds: 1 },
        { command: "b", restart: "on-failure", delaySeconds: 1 },
        { command: "c", restart: "on-failure", delaySeconds: 1 },
      ],
    ],
    [
      "restart always after 5 s",
      { CC_WORKER_COMMAND: "w", CC_WORKER_RESTART: "always", CC_WORKER_RESTART_DELAY: "5" },
      [{ command: "w", restart: "always", delaySeconds: 5 }],
    ],
    [
      "restart no, delay 0",
      { CC_WORKER_COMMAND: "w", CC_WORKER_RESTART: "no", CC_WORKER_RESTART_DELAY: "0" },
      [{ command: "w", restart: "no", delaySeconds: 0 }],
    ],
    ["empty commands are skipped", { CC_WORKER_COMMAND: " ", CC_WORKER_COMMAND_1: "" }, []],
  ];
  for (const [name, vars, workers] of cases) {
    it(name, () => assert.deepEqual(readWorkers(vars), { workers, errors: [] }));
  }

  const bad: [string, Record<string, string>, RegExp][] = [
    [
      "an unknown policy",
      { CC_WORKER_RESTART: "sometimes" },
      /^CC_WORKER_RESTART="sometimes" is not a restart policy: use always, on-failure, no\.$/,
    ],
    [
      "a delay that is not an integer",
      { CC_WORKER_RESTART_DELAY: "1.5" },
      /^CC_WORKER_RESTART_DELAY="1\.5" is not a number of seconds/,
    ],
    ["a negative delay", { CC_WORKER_RESTART_DELAY: "-1" }, /CC_WORKER_RESTART_DELAY/],
    [
      "leading zeros",
      { CC_WORKER_COMMAND_01: "w" },
      /^CC_WORKER_COMMAND_01: write the number without leading zeros \(CC_WORKER_COMMAND_1\)\.$/,
    ],
  ];
  for (const [name, vars, want] of bad) {
    it(`error: ${name}`, () => {
      const r = readWorkers(vars);
      assert.equal(r.errors.length, 1);
      assert.match(r.errors[0] ?? "", want);
    });
  }

  it("in the plan, and a bad value fails it", () => {
    assert.deepEqual(plan({ CC_WORKER_COMMAND: "node w.js" }).workers, [
      { command: "node w.js", restart: "on-failure", delaySeconds: 1 },
    ]);
    assert.match(errors({ CC_WORKER_RESTART: "x" })[0] ?? "", /CC_WORKER_RESTART/);
  });
});

describe("planNodeBuild: task", () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ["unset", {}, false],
    ["true", { CC_TASK: "true" }, true],
    ["empty counts as unset", { CC_TASK: "" }, false],
    ["false", { CC_TASK: "false" }, false],
  ];
  for (const [name, vars, task] of cases) it(name, () => assert.equal(plan(vars).task, task));
  for (const value of ["yes", "TRUE", " true", "1"]) {
    it(`not exactly true or false: ${JSON.stringify(value)}`, () =>
      assert.deepEqual(errors({ CC_TASK: value }), [
        `CC_TASK=${JSON.stringify(value)} is not a boolean: use true or false (lower case).`,
      ]));
  }
  it("a task's log says it runs once, and no listening rule", () => {
    const p = plan({ CC_TASK: "true" });
    assert.ok(
      p.logLines.includes(
        "CC_TASK=true: the application runs once to completion (no HTTP, no health check).",
      ),
    );
    assert.ok(!p.logLines.some((l) => l.includes("0.0.0.0:8080")));
  });
});

describe("planNodeBuild: private registry (.npmrc)", () => {
  const cases: [string, Record<string, string>, string | null][] = [
    ["no token: no .npmrc", {}, null],
    ["NPM_TOKEN: the public registry", { NPM_TOKEN: TOKEN }, `//registry.npmjs.org/:_authToken=${TOKEN}\n`],
    [
      "CC_NPM_REGISTRY: its host",
      { NPM_TOKEN: TOKEN, CC_NPM_REGISTRY: "npm.example.com" },
      `//npm.example.com/:_authToken=${TOKEN}\n`,
    ],
    [
      "a host with a port",
      { NPM_TOKEN: TOKEN, CC_NPM_REGISTRY: "npm.example.com:4873" },
      `//npm.example.com:4873/:_authToken=${TOKEN}\n`,
    ],
    [
      "a URL is reduced to its host",
      { NPM_TOKEN: TOKEN, CC_NPM_REGISTRY: "https://npm.example.com/" },
      `//npm.example.com/:_authToken=${TOKEN}\n`,
    ],
    [
      "a host with a path",
      { NPM_TOKEN: TOKEN, CC_NPM_REGISTRY: "gitlab.example.com/api/v4/packages/npm" },
      `//gitlab.example.com/api/v4/packages/npm/:_authToken=${TOKEN}\n`,
    ],
  ];
  for (const [name, vars, npmrc] of cases) {
    it(name, () => {
      const p = plan(vars);
      assert.equal(p.npmrc, npmrc);
      const shown = [
        ...p.logLines,
        ...p.warnings,
        ...p.buildSteps.map((s) => `${s.label} ${s.command}`),
        ...p.start,
      ].join("\n");
      assert.ok(!shown.includes(TOKEN), "the token is never shown");
      if (npmrc) assert.ok(p.logLines.some((l) => /^Writing \.npmrc with the NPM_TOKEN of /.test(l)));
    });
  }

  it("yarn2 does not read .npmrc: YARN_NPM_AUTH_TOKEN", () => {
    const p = plan({ NPM_TOKEN: TOKEN, CC_NODE_BUILD_TOOL: "yarn2" });
    assert.equal(p.buildEnv.YARN_NPM_AUTH_TOKEN, TOKEN);
    assert.ok(!p.logLines.join("\n").includes(TOKEN));
  });

  it("CC_NPM_REGISTRY without NPM_TOKEN warns", () => {
    const p = plan({ CC_NPM_REGISTRY: "npm.example.com" });
    assert.equal(p.npmrc, null);
    assert.deepEqual(p.warnings, [
      "CC_NPM_REGISTRY is set but NPM_TOKEN is not: no .npmrc is written (set NPM_TOKEN).",
    ]);
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    [
      "a token with a newline (would add .npmrc lines)",
      { NPM_TOKEN: `${TOKEN}\nregistry=http://evil` },
      /^NPM_TOKEN must be a single token/,
    ],
    [
      "a registry that is not a host",
      { NPM_TOKEN: TOKEN, CC_NPM_REGISTRY: "npm example com" },
      /^CC_NPM_REGISTRY="npm example com" is not a registry host/,
    ],
  ];
  for (const [name, vars, want] of bad) {
    it(`error: ${name}, never showing the token`, () => {
      const errs = errors(vars);
      assert.equal(errs.length, 1);
      assert.match(errs[0] ?? "", want);
      assert.ok(!errs[0]?.includes(TOKEN));
    });
  }
});

describe("planNodeBuild: every problem at once", () => {
  it("CC_NODE_VERSION is checked without a package.json", () => {
    assert.deepEqual(
      errors({ CC_NODE_VERSION: "abc" }, { packageJson: null }).map((e) => e.split(" ")[0]),
      ["No", 'CC_NODE_VERSION="abc"'],
    );
  });

  it("package.json, variables and version are all reported", () => {
    const errs = errors(
      {
        CC_NODE_BUILD_TOOL: "npm-ci",
        CC_NODE_DEV_DEPENDENCIES: "maybe",
        CC_WORKER_RESTART: "sometimes",
        CC_TASK: "yes",
        CC_NPM_REGISTRY: "not a host",
      },
      { packageJson: JSON.stringify({ version: "1", main: "a.js", engines: { node: ">=30" } }) },
    );
    assert.deepEqual(
      errs.map((e) => e.split(/[ :]/)[0]),
      [
        "package.json",
        "engines.node",
        "CC_NODE_BUILD_TOOL=npm-ci",
        'CC_NODE_DEV_DEPENDENCIES="maybe"',
        'CC_WORKER_RESTART="sometimes"',
        'CC_TASK="yes"',
        'CC_NPM_REGISTRY="not',
      ],
    );
  });
});

describe("helpers", () => {
  it("parsePackageManager", () => {
    assert.deepEqual(parsePackageManager("pnpm@9.1.0"), {
      raw: "pnpm@9.1.0",
      name: "pnpm",
      version: "9.1.0",
      major: 9,
    });
    assert.deepEqual(parsePackageManager("yarn@4.1.0+sha224.abc"), {
      raw: "yarn@4.1.0+sha224.abc",
      name: "yarn",
      version: "4.1.0",
      major: 4,
    });
    assert.equal(parsePackageManager("yarn"), null);
    assert.equal(parsePackageManager("yarn@"), null);
    assert.equal(parsePackageManager("yarn@4 ; rm -rf /")?.major ?? null, null);
  });
  it("ignoresNodeModules", () => {
    assert.equal(ignoresNodeModules("/node_modules/\r\n"), true);
    assert.equal(ignoresNodeModules(null), false);
  });
  it("registryHost", () => {
    assert.deepEqual(registryHost("http://r.example.com//"), { host: "r.example.com" });
    assert.ok("error" in registryHost("-r.example.com"));
  });
  it("parsePackageJson keeps the fields it read", () => {
    const r = parsePackageJson(pkg({ engines: { node: "22" }, packageManager: "pnpm@9.1.0" }));
    assert.ok(r.ok);
    assert.equal(r.pkg.engines?.node, "22");
    assert.equal(r.pkg.scripts?.start, "node server.js");
  });
});
