import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { analyzeDockerfile, splitWords } from "../../../src/core/dockerfile.js";

const lines = (...l: string[]) => l.join("\n");
const names = (text: string) => analyzeDockerfile(text).instructions.map((i) => i.name);

describe("analyzeDockerfile: instructions", () => {
  const cases: [string, string, { name: string; args: string; line: number }[]][] = [
    [
      "one per line, with their line numbers",
      lines("FROM node:22", "RUN npm ci", 'CMD ["node", "index.js"]'),
      [
        { name: "FROM", args: "node:22", line: 1 },
        { name: "RUN", args: "npm ci", line: 2 },
        { name: "CMD", args: '["node", "index.js"]', line: 3 },
      ],
    ],
    [
      "case-insensitive names, upper-cased",
      lines("from alpine", "Run echo hi", "cmd sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "echo hi", line: 2 },
        { name: "CMD", args: "sh", line: 3 },
      ],
    ],
    [
      "comments and blank lines skipped",
      lines("# a comment", "", "FROM alpine", "   # indented", "", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 3 },
        { name: "CMD", args: "sh", line: 6 },
      ],
    ],
    [
      "backslash continuations joined, numbered by their first line",
      lines("FROM alpine", "RUN apk add \\", "    curl \\", "    git", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "apk add     curl     git", line: 2 },
        { name: "CMD", args: "sh", line: 5 },
      ],
    ],
    [
      "a continuation with trailing spaces after the backslash",
      lines("FROM alpine", "RUN a \\  ", "b"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "a b", line: 2 },
      ],
    ],
    [
      "comment and blank lines inside a continuation skipped",
      lines("FROM alpine", "RUN a \\", "# CMD not me", "", "  b", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "a   b", line: 2 },
        { name: "CMD", args: "sh", line: 6 },
      ],
    ],
    [
      "CRLF line ends",
      "FROM alpine\r\nRUN a \\\r\n b\r\nCMD sh\r\n",
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "a  b", line: 2 },
        { name: "CMD", args: "sh", line: 4 },
      ],
    ],
    [
      "the backtick escape directive",
      lines("# escape=`", "FROM windows", "RUN dir C:\\ `", "  /b", "CMD x"),
      [
        { name: "FROM", args: "windows", line: 2 },
        { name: "RUN", args: "dir C:\\   /b", line: 3 },
        { name: "CMD", args: "x", line: 5 },
      ],
    ],
    [
      "with the backtick escape, a trailing backslash is literal",
      lines("#escape = `", "FROM w", "RUN copy a\\", "CMD x"),
      [
        { name: "FROM", args: "w", line: 2 },
        { name: "RUN", args: "copy a\\", line: 3 },
        { name: "CMD", args: "x", line: 4 },
      ],
    ],
    [
      "an escape directive after a syntax directive",
      lines("# syntax=docker/dockerfile:1", "# escape=`", "FROM w", "RUN a `", "b"),
      [
        { name: "FROM", args: "w", line: 3 },
        { name: "RUN", args: "a b", line: 4 },
      ],
    ],
    [
      "an escape directive after a blank line is a comment",
      lines("", "# escape=`", "FROM w", "RUN a `", "CMD x"),
      [
        { name: "FROM", args: "w", line: 3 },
        { name: "RUN", args: "a `", line: 4 },
        { name: "CMD", args: "x", line: 5 },
      ],
    ],
    [
      "an escape directive after an ordinary comment is a comment",
      lines("# hello", "# escape=`", "FROM w", "RUN a `", "CMD x"),
      [
        { name: "FROM", args: "w", line: 3 },
        { name: "RUN", args: "a `", line: 4 },
        { name: "CMD", args: "x", line: 5 },
      ],
    ],
    [
      "a heredoc body is not read as instructions",
      lines("FROM alpine", "RUN <<EOF", "CMD not-an-instruction", "echo hi", "EOF", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "<<EOF", line: 2 },
        { name: "CMD", args: "sh", line: 6 },
      ],
    ],
    [
      "a quoted heredoc delimiter and a command after it",
      lines("FROM alpine", "RUN <<'END' bash", "ENTRYPOINT x", "END", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "<<'END' bash", line: 2 },
        { name: "CMD", args: "sh", line: 5 },
      ],
    ],
    [
      "a <<- heredoc ends at a tab-indented delimiter",
      lines("FROM alpine", "RUN cat <<-EOF > /f", "\tCMD x", "\tEOF", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: "cat <<-EOF > /f", line: 2 },
        { name: "CMD", args: "sh", line: 5 },
      ],
    ],
    [
      "two heredocs on one COPY",
      lines("FROM alpine", "COPY <<A <<B /dst/", "CMD a", "A", "CMD b", "B", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "COPY", args: "<<A <<B /dst/", line: 2 },
        { name: "CMD", args: "sh", line: 7 },
      ],
    ],
    [
      "<< inside quotes is not a heredoc",
      lines("FROM alpine", 'RUN echo "a <<EOF b"', "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "RUN", args: 'echo "a <<EOF b"', line: 2 },
        { name: "CMD", args: "sh", line: 3 },
      ],
    ],
    [
      "heredocs only in RUN, COPY and ADD",
      lines("FROM alpine", "LABEL x=<<EOF", "CMD sh"),
      [
        { name: "FROM", args: "alpine", line: 1 },
        { name: "LABEL", args: "x=<<EOF", line: 2 },
        { name: "CMD", args: "sh", line: 3 },
      ],
    ],
    ["a byte order mark", "\uFEFFFROM alpine", [{ name: "FROM", args: "alpine", line: 1 }]],
    ["empty text", "", []],
  ];
  for (const [label, text, want] of cases) {
    it(label, () => assert.deepEqual(analyzeDockerfile(text).instructions, want));
  }
  it("an unterminated heredoc swallows the rest", () =>
    assert.deepEqual(names(lines("FROM a", "RUN <<EOF", "CMD x")), ["FROM", "RUN"]));
  it("a continuation at the end of the file", () =>
    assert.deepEqual(names(lines("FROM a", "RUN x \\")), ["FROM", "RUN"]));
});

describe("analyzeDockerfile: CMD and ENTRYPOINT", () => {
  const cases: [string, string, boolean, boolean][] = [
    ["CMD", lines("FROM a", "CMD x"), true, false],
    ["ENTRYPOINT", lines("FROM a", 'ENTRYPOINT ["x"]'), false, true],
    ["both", lines("FROM a", "ENTRYPOINT x", "CMD y"), true, true],
    ["neither", lines("FROM a", "RUN x"), false, false],
    ["lower case", lines("from a", "cmd x"), true, false],
    ["no FROM", "CMD x", false, false],
    [
      "a CMD in an earlier, unrelated stage does not count",
      lines("FROM a AS build", "CMD x", "FROM b", "RUN y"),
      false,
      false,
    ],
    ["a CMD in the final stage", lines("FROM a AS build", "RUN x", "FROM b", "CMD y"), true, false],
    [
      "a CMD inherited from the stage the final one is built FROM",
      lines("FROM a AS base", "CMD x", "FROM base", "RUN y"),
      true,
      false,
    ],
    ["stage names are case-insensitive", lines("FROM a AS Base", "CMD x", "FROM base"), true, false],
    ["a chain of stages", lines("FROM a AS one", "ENTRYPOINT x", "FROM one AS two", "FROM two"), false, true],
    [
      "an ENTRYPOINT resets an inherited CMD",
      lines("FROM a AS base", "CMD x", "FROM base", "ENTRYPOINT y"),
      false,
      true,
    ],
    ["a stage's own CMD survives its ENTRYPOINT", lines("FROM a", "CMD x", "ENTRYPOINT y"), true, true],
    [
      "the final stage's own CMD counts, whatever its name",
      lines("FROM a", "FROM x AS base", "CMD y"),
      true,
      false,
    ],
    [
      "a stage can only build from an earlier one",
      lines("FROM base", "FROM a AS base", "CMD x", "FROM b"),
      false,
      false,
    ],
    ["ONBUILD CMD does not count", lines("FROM a", "ONBUILD CMD x"), false, false],
    ["a CMD in a heredoc body does not count", lines("FROM a", "RUN <<EOF", "CMD x", "EOF"), false, false],
    ["a CMD in a comment does not count", lines("FROM a", "# CMD x"), false, false],
  ];
  for (const [label, text, hasCmd, hasEntrypoint] of cases) {
    it(label, () => {
      const r = analyzeDockerfile(text);
      assert.deepEqual({ hasCmd: r.hasCmd, hasEntrypoint: r.hasEntrypoint }, { hasCmd, hasEntrypoint });
    });
  }
});

describe("analyzeDockerfile: stages", () => {
  const cases: [string, string, { from: string; alias?: string }[]][] = [
    ["one", "FROM node:22", [{ from: "node:22" }]],
    ["an alias", "FROM node:22 AS build", [{ from: "node:22", alias: "build" }]],
    ["a lower-case as", "FROM node as build", [{ from: "node", alias: "build" }]],
    [
      "a --platform flag",
      "FROM --platform=$BUILDPLATFORM golang:1.22 AS b",
      [{ from: "golang:1.22", alias: "b" }],
    ],
    ["a digest", "FROM alpine@sha256:abc", [{ from: "alpine@sha256:abc" }]],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${...} is the input under test
    ["a variable", "ARG V=3\nFROM alpine:${V}", [{ from: "alpine:${V}" }]],
    [
      "several",
      lines("FROM a AS one", "RUN x", "FROM one AS two", "FROM scratch"),
      [{ from: "a", alias: "one" }, { from: "one", alias: "two" }, { from: "scratch" }],
    ],
    ["none", "ARG X", []],
  ];
  for (const [label, text, stages] of cases) {
    it(label, () => assert.deepEqual(analyzeDockerfile(text).stages, stages));
  }
});

describe("analyzeDockerfile: ARG", () => {
  const cases: [string, string, string[]][] = [
    ["a name", "ARG A", ["A"]],
    ["a default", "ARG NODE_ENV=production", ["NODE_ENV"]],
    ["several on one line", "ARG A B=2 C", ["A", "B", "C"]],
    ["a quoted default with spaces", 'ARG A="x y" B', ["A", "B"]],
    ["an empty default", "ARG A=", ["A"]],
    [
      "global and per stage, first declaration order, once",
      lines("ARG V", "FROM a:$V", "ARG V", "ARG W", "FROM b", "ARG X"),
      ["V", "W", "X"],
    ],
    ["lower-case instruction", "arg token", ["token"]],
    ["continued", lines("ARG A \\", "  B"), ["A", "B"]],
    ["none", "FROM a", []],
  ];
  for (const [label, text, argNames] of cases) {
    it(label, () => assert.deepEqual(analyzeDockerfile(text).argNames, argNames));
  }
});

describe("analyzeDockerfile: EXPOSE", () => {
  const cases: [string, string, number[]][] = [
    ["one port", lines("FROM a", "EXPOSE 3000"), [3000]],
    ["several, /tcp, no repeats", lines("FROM a", "EXPOSE 80 443/tcp 80", "EXPOSE 8080"), [80, 443, 8080]],
    ["udp ignored", lines("FROM a", "EXPOSE 53/udp 5000"), [5000]],
    ["a range", lines("FROM a", "EXPOSE 8000-8002"), [8000, 8001, 8002]],
    ["a variable ignored", lines("FROM a", "EXPOSE $PORT"), []],
    ["an earlier unrelated stage ignored", lines("FROM a AS b", "EXPOSE 1", "FROM c", "EXPOSE 2"), [2]],
    [
      "inherited from the base stage, final stage first",
      lines("FROM a AS b", "EXPOSE 1", "FROM b", "EXPOSE 2"),
      [2, 1],
    ],
    ["none", "FROM a", []],
  ];
  for (const [label, text, exposed] of cases) {
    it(label, () => assert.deepEqual(analyzeDockerfile(text).exposed, exposed));
  }
});

describe("analyzeDockerfile: heredocs", () => {
  const cases: [string, string, boolean][] = [
    ["RUN <<EOF", lines("FROM a", "RUN <<EOF", "x", "EOF"), true],
    ["COPY <<EOF", lines("FROM a", "COPY <<EOF /f", "x", "EOF"), true],
    ["none", lines("FROM a", "RUN echo '<<EOF'"), false],
    ["a shell here-string is not one", lines("FROM a", "RUN cat <<<word"), false],
  ];
  for (const [label, text, uses] of cases) {
    it(label, () => assert.equal(analyzeDockerfile(text).usesHeredoc, uses));
  }
});

describe("splitWords", () => {
  const cases: [string, string[]][] = [
    ["a b  c", ["a", "b", "c"]],
    ['A="x y" B', ['A="x y"', "B"]],
    ["'a b' c", ["'a b'", "c"]],
    ["a\\ b c", ["a\\ b", "c"]],
    ["  ", []],
    ['""', ['""']],
  ];
  for (const [input, words] of cases) {
    it(JSON.stringify(input), () => assert.deepEqual(splitWords(input), words));
  }
});
