/**
 * Node.js versions (contract sections 2.3 and 9): which versions exist, which line is LTS or end-of-life,
 * which one a build uses (engines.node, then CC_NODE_VERSION, then the newest LTS) and which npm goes with
 * it. The data (registry versions, the release schedule of node-releases) is passed in: this module is pure.
 */

import semver from "semver";

export interface NodeVersion {
  version: string;
  major: number;
  /** The line's codename (e.g. "Jod") once the line has entered LTS; kept after its end of life. */
  lts: string | null;
  /** The line's end-of-life date has passed. */
  eol: boolean;
}

/** One line of node-releases' release-schedule.json, keyed `v22` (or `v0.12` for 0.x lines). */
export interface ScheduleEntry {
  start: string;
  lts?: string;
  end: string;
  codename?: string;
}

function scheduleKey(v: semver.SemVer): string {
  return v.major === 0 ? `v0.${v.minor}` : `v${v.major}`;
}

/**
 * Marks each available version with its line's LTS codename and end of life, as of `today` (YYYY-MM-DD,
 * compared as text like the schedule's dates). Newest first; prereleases (a `-` in the version) and
 * strings that are not versions are left out, duplicates kept once. A line the schedule does not know yet
 * is neither LTS nor end-of-life.
 */
export function markVersions(
  available: readonly string[],
  schedule: Record<string, ScheduleEntry>,
  today: string,
): NodeVersion[] {
  const seen = new Set<string>();
  const parsed: semver.SemVer[] = [];
  for (const raw of available) {
    if (raw.includes("-")) continue;
    const v = semver.parse(raw);
    if (!v || seen.has(v.version)) continue;
    seen.add(v.version);
    parsed.push(v);
  }
  parsed.sort((a, b) => semver.rcompare(a, b));
  return parsed.map((v) => {
    const line = schedule[scheduleKey(v)];
    const isLts = line?.lts !== undefined && line.lts <= today;
    return {
      version: v.version,
      major: v.major,
      lts: isLts ? line?.codename || scheduleKey(v) : null,
      eol: line !== undefined && line.end <= today,
    };
  });
}

export type VersionChoice = { ok: true; version: NodeVersion; reason: string } | { ok: false; error: string };

const CC_NODE_VERSION_RE = /^v?(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?)?$/;

const SHAPES =
  "use <major>, <major>.<minor> or <major>.<minor>.<patch> (e.g. 22, 22.16 or 22.16.0), optionally with a leading v";

function majorsOf(available: readonly NodeVersion[]): string {
  const majors = [...new Set(available.map((v) => v.major))].sort((a, b) => b - a);
  return majors.length === 0 ? "none" : majors.join(", ");
}

/** `available` sorted newest first (as {@link markVersions} returns it), whatever order it was given in. */
function newestFirst(available: readonly NodeVersion[]): NodeVersion[] {
  return available
    .filter((v) => semver.valid(v.version) !== null)
    .sort((a, b) => semver.rcompare(a.version, b.version));
}

/** CC_NODE_VERSION read as an exact version or the newest of a major / minor line. */
function fromCcNodeVersion(
  raw: string,
  available: readonly NodeVersion[],
): { ok: true; version: NodeVersion; detail: string } | { ok: false; error: string } {
  const value = raw.trim();
  const m = CC_NODE_VERSION_RE.exec(value);
  if (!m)
    return {
      ok: false,
      error: `CC_NODE_VERSION=${JSON.stringify(raw)} is not a Node.js version: ${SHAPES}.`,
    };
  const [major, minor, patch] = [m[1], m[2], m[3]].map((s) => (s === undefined ? undefined : Number(s)));
  const wanted = [major, minor, patch].filter((n) => n !== undefined).join(".");
  const match = available.find((v) => {
    const p = semver.parse(v.version);
    return (
      p !== null &&
      p.major === major &&
      (minor === undefined || p.minor === minor) &&
      (patch === undefined || p.patch === patch)
    );
  });
  if (match) {
    const detail = patch !== undefined ? "" : ` (the newest ${wanted}.x)`;
    return { ok: true, version: match, detail };
  }
  const sameMajor = available.filter((v) => v.major === major);
  const shown = patch !== undefined ? wanted : `${wanted}.x`;
  const error =
    sameMajor.length === 0
      ? `CC_NODE_VERSION=${value}: no Node.js ${wanted} is available; available majors: ${majorsOf(available)}.`
      : `CC_NODE_VERSION=${value}: no Node.js ${shown} is available; the newest ${major}.x is ${sameMajor[0]?.version}.`;
  return { ok: false, error };
}

/**
 * The Node.js version of a build. engines.node (any semver range) wins over CC_NODE_VERSION (`<major>`,
 * `<major>.<minor>`, `<major>.<minor>.<patch>`, optionally with a leading `v`); with neither, the newest LTS
 * version that is not end-of-life. The newest version satisfying the constraint is picked, end-of-life or
 * not (the caller warns). An empty value counts as unset. The reason names the input that decided; an
 * error names the input at fault.
 */
export function chooseNodeVersion(input: {
  ccNodeVersion: string | undefined;
  enginesNode: string | undefined;
  available: readonly NodeVersion[];
}): VersionChoice {
  const available = newestFirst(input.available);
  const cc = input.ccNodeVersion?.trim() ? input.ccNodeVersion : undefined;
  const engines = input.enginesNode?.trim() ? input.enginesNode.trim() : undefined;

  if (engines !== undefined) {
    const quoted = `engines.node ${JSON.stringify(engines)} in package.json`;
    if (semver.validRange(engines) === null) {
      return {
        ok: false,
        error: `${quoted} is not a valid version range: use e.g. "22.x", ">=20 <23" or "^22.16.0".`,
      };
    }
    const match = available.find((v) => semver.satisfies(v.version, engines));
    if (!match) {
      return {
        ok: false,
        error: `${quoted}: no available Node.js version satisfies this range; available majors: ${majorsOf(available)}.`,
      };
    }
    const over = cc === undefined ? "" : ` (it takes priority over CC_NODE_VERSION=${cc.trim()})`;
    return { ok: true, version: match, reason: `${quoted}${over}: ${match.version}` };
  }

  if (cc !== undefined) {
    const r = fromCcNodeVersion(cc, available);
    if (!r.ok) return r;
    return {
      ok: true,
      version: r.version,
      reason: `CC_NODE_VERSION=${cc.trim()}${r.detail}: ${r.version.version}`,
    };
  }

  const lts = available.find((v) => v.lts !== null && !v.eol);
  if (!lts) {
    return {
      ok: false,
      error: `No LTS version of Node.js that is not end-of-life is available: set CC_NODE_VERSION (available majors: ${majorsOf(available)}).`,
    };
  }
  return {
    ok: true,
    version: lts,
    reason: `neither engines.node in package.json nor CC_NODE_VERSION is set, so the newest LTS (${lts.lts}): ${lts.version}`,
  };
}

/**
 * The npm major bundled with each Node.js line, as Pier installs it (one table, simpler than history:
 * Node.js 15 and 16.0 shipped npm 7, which Pier does not use).
 *
 * | Node.js | npm |
 * |---|---|
 * | >= 24 | 11 |
 * | 18 .. 23 | 10 |
 * | 16, 17 | 8 |
 * | <= 15 | 6 |
 */
export function bundledNpmMajor(nodeMajor: number): number {
  if (nodeMajor >= 24) return 11;
  if (nodeMajor >= 18) return 10;
  if (nodeMajor >= 16) return 8;
  return 6;
}

/**
 * The npm Pier installs with a Node.js version: the newest release (no prerelease) of the npm major
 * bundled with that line ({@link bundledNpmMajor}) whose engines.node accepts the Node.js version (a
 * release without engines.node accepts any). null when there is none.
 */
export function chooseNpmVersion(
  nodeVersion: string,
  npmVersions: readonly string[],
  npmEngines: Record<string, string | undefined>,
): string | null {
  const node = semver.parse(nodeVersion);
  if (!node) return null;
  const major = bundledNpmMajor(node.major);
  const fits = npmVersions.filter((v) => {
    if (v.includes("-")) return false;
    const p = semver.parse(v);
    if (!p || p.major !== major) return false;
    const engines = npmEngines[v];
    return engines === undefined || engines.trim() === "" || semver.satisfies(node, engines);
  });
  return fits.sort((a, b) => semver.rcompare(a, b))[0] ?? null;
}

/**
 * Lines for `pier runtimes node`: one per major (its newest release), newest first, with
 * "LTS (<codename>)" and "end-of-life" marks.
 */
export function formatVersionList(versions: NodeVersion[]): string[] {
  const seen = new Set<number>();
  const newest = newestFirst(versions).filter((v) => !seen.has(v.major) && seen.add(v.major));
  const width = Math.max(0, ...newest.map((v) => v.version.length));
  return newest.map((v) => {
    const marks = [v.lts ? `LTS (${v.lts})` : null, v.eol ? "end-of-life" : null].filter(Boolean);
    return `${v.version.padEnd(width)}  ${marks.join(", ")}`.trimEnd();
  });
}
