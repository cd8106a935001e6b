// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are Dockerfiles, whose ARG substitutions look like template placeholders
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  dockerfileImageProblems,
  dockerfileImages,
  expandWord,
  imageRuleProblem,
} from "../../../src/core/build-bases.js";

const OTHER = "pier-app/app-0123456789ab:dep-1";

describe("imageRuleProblem", () => {
  const cases: [string, RegExp | null][] = [
    ["pier/base:bookworm", null],
    ["pier/node:22", null],
    ["pier/node:22.16.0-npm10.9.2", null],
    ["pier/php:8.4", null],
    ["pier/php-os:8.4", null],
    ["node:22-slim", null],
    ["docker.io/library/debian:bookworm", null],
    ["ghcr.io/acme/tool:1", null],
    ["registry.example/pier-app/x:1", null],
    ["cafe:1.0", null],
    [OTHER, /pier-app\/\* images are apps' releases, private to each app/],
    ["pier-app/app-0123456789ab", /pier-app\/\*/],
    ["PIER-APP/app-0123456789ab:dep-1", /pier-app\/\*/],
    ["docker.io/pier-app/app-0123456789ab:dep-1", /pier-app\/\*/],
    ["index.docker.io/pier-app/app-0123456789ab:dep-1", /pier-app\/\*/],
    [`pier-app/app-0123456789ab@sha256:${"a".repeat(64)}`, /pier-app\/\*/],
    ["pier/addon-postgresql:17", /pier\/addon-postgresql is one of Pier's own images, not a base for builds/],
    [
      "pier/addon-kv:8",
      /not a base for builds \(those are pier\/base, pier\/node, pier\/php, pier\/php-os\)/,
    ],
    ["docker.io/pier/secret:1", /pier\/secret is one of Pier's own images/],
    [`sha256:${"b".repeat(64)}`, /named by its id/],
    ["b".repeat(64), /named by its id/],
    ["3f2a9c", /named by its id/],
    ["1", /named by its id/],
  ];
  for (const [ref, want] of cases) {
    test(`${ref.slice(0, 50)} -> ${want ?? "allowed"}`, () => {
      const got = imageRuleProblem(ref);
      if (want === null) assert.equal(got, null);
      else assert.match(got ?? "", want);
    });
  }
});

describe("expandWord", () => {
  const vars = new Map([
    ["A", "pier-app"],
    ["E", ""],
  ]);
  const cases: [string, string | null][] = [
    ["$A/x", "pier-app/x"],
    ["${A}/x", "pier-app/x"],
    ['"${A}"/x', "pier-app/x"],
    ["'${A}'/x", "${A}/x"],
    ["\\$A", "$A"],
    ["${B:-pier-app}/x", "pier-app/x"],
    ["${E:-pier-app}/x", "pier-app/x"],
    ["${E-pier-app}/x", "/x"],
    ["${A:+pier-app}/x", "pier-app/x"],
    ["${B:+y}x", "x"],
    ["$B", ""],
    ["${A#pier}", null],
    ["${A/p/q}", null],
  ];
  for (const [word, want] of cases) {
    test(`${word} -> ${want}`, () => assert.equal(expandWord(word, vars), want));
  }
});

/** A Dockerfile and the images it names once substituted (build args: `args`), or the refusal expected. */
const files: [string, string, Record<string, string>, RegExp | null][] = [
  ["a public base", "FROM pier/node:22\nCMD x", {}, null],
  [
    "another app's release",
    `FROM ${OTHER}\nCMD x`,
    {},
    /Dockerfile line 1: FROM pier-app\/app-0123456789ab:dep-1 is refused: pier-app\/\*/,
  ],
  ["FROM with --platform", `FROM --platform=linux/amd64 ${OTHER} AS b\nCMD x`, {}, /line 1: FROM pier-app/],
  ["a later stage", `FROM pier/node:22 AS a\nRUN x\nFROM ${OTHER}\nCMD x`, {}, /line 3: FROM/],
  [
    "COPY --from an image",
    `FROM pier/node:22\nCOPY --from=${OTHER} /app /app\nCMD x`,
    {},
    /line 2: COPY --from pier-app/,
  ],
  [
    "COPY --from a stage",
    "FROM pier/node:22 AS build\nFROM pier/base:bookworm\nCOPY --from=build /a /a\nCOPY --from=0 /b /b\nCMD x",
    {},
    null,
  ],
  [
    "COPY --chown then --from",
    `FROM pier/node:22\nCOPY --chown=1:1 --from=${OTHER} /app /app\nCMD x`,
    {},
    /COPY --from/,
  ],
  [
    "RUN --mount from",
    `FROM pier/node:22\nRUN --mount=type=bind,from=${OTHER},target=/o cat /o/x\nCMD x`,
    {},
    /line 2: RUN --mount from pier-app/,
  ],
  [
    "global ARG default",
    `ARG BASE=${OTHER}\nFROM $BASE\nCMD x`,
    {},
    /line 2: FROM \$BASE \(= pier-app\/app-0123456789ab:dep-1\) is refused/,
  ],
  [
    "ARG built of ARGs",
    "ARG P=pier-app\nARG I=${P}/app-0123456789ab:dep-1\nFROM ${I}\nCMD x",
    {},
    /FROM \$\{I\} \(= pier-app/,
  ],
  [
    "a build arg (an app variable) overrides the default",
    "ARG BASE=pier/node:22\nFROM $BASE\nCMD x",
    { BASE: OTHER },
    /FROM \$BASE \(= pier-app/,
  ],
  ["a build arg to a public base", `ARG BASE=${OTHER}\nFROM $BASE\nCMD x`, { BASE: "pier/node:22" }, null],
  [
    "stage ARG in COPY --from",
    `FROM pier/node:22\nARG SRC=${OTHER}\nCOPY --from=$SRC /a /a\nCMD x`,
    {},
    /line 3: COPY --from \$SRC/,
  ],
  [
    "stage ARG inheriting the global",
    `ARG SRC=${OTHER}\nFROM pier/node:22\nARG SRC\nCOPY --from=\${SRC} /a /a\nCMD x`,
    {},
    /COPY --from/,
  ],
  ["default operator", "FROM ${NOPE:-pier-app/app-0123456789ab:dep-1}\nCMD x", {}, /is refused: pier-app/],
  ["quoted", `FROM "${OTHER}"\nCMD x`, {}, /is refused/],
  ["continuation", `FROM \\\n  ${OTHER}\nCMD x`, {}, /FROM pier-app/],
  ["lower-case instruction", `from ${OTHER}\ncmd x`, {}, /FROM pier-app/],
  [
    "a BuildKit frontend",
    `# syntax=${OTHER}\nFROM pier/node:22\nCMD x`,
    {},
    /Dockerfile's # syntax directive: # syntax pier-app/,
  ],
  [
    "an unreadable substitution",
    "ARG B=pier/node:22\nFROM ${B/node/x}\nCMD x",
    {},
    /line 2: FROM \$\{B\/node\/x\}: Pier cannot tell which image/,
  ],
  [
    "an add-on image",
    "FROM pier/addon-postgresql:17\nCMD x",
    {},
    /pier\/addon-postgresql is one of Pier's own images/,
  ],
  ["scratch", "FROM scratch\nCOPY a /a\nCMD x", {}, null],
  ["an image id", `FROM sha256:${"c".repeat(64)}\nCMD x`, {}, /named by its id/],
];

describe("dockerfileImageProblems", () => {
  for (const [why, text, args, want] of files) {
    test(`${why} -> ${want ?? "allowed"}`, () => {
      const got = dockerfileImageProblems("Dockerfile", text, args);
      if (want === null) assert.deepEqual(got, []);
      else assert.match(got.join("\n"), want);
    });
  }
  test("lists every image, stages left out", () => {
    const { images } = dockerfileImages(
      "FROM pier/node:22 AS build\nFROM build AS two\nFROM pier/base:bookworm\nCOPY --from=two /a /a\nCOPY --from=node:22 /b /b\nCMD x",
      {},
    );
    assert.deepEqual(
      images.map((i) => [i.ref, i.line, i.where]),
      [
        ["pier/node:22", 1, "FROM"],
        ["pier/base:bookworm", 3, "FROM"],
        ["node:22", 5, "COPY --from"],
      ],
    );
  });
});
