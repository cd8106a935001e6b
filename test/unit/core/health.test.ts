import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  HEALTH_CLOSING_LINE,
  type HealthResult,
  healthReport,
  listeningAddresses,
  loopbackOnly,
  notListeningLines,
} from "../../../src/core/health.js";

const CLOSING =
  "Update the configuration (CC_HEALTH_CHECK_PATH, CC_HEALTH_CHECK_PATH_<n>) or the application, then redeploy.";

describe("healthReport", () => {
  const cases: [string, HealthResult[], boolean, string[]][] = [
    ["one path, 200", [{ path: "/", status: 200 }], true, ["Response from GET / is 200"]],
    [
      "every path 200",
      [
        { path: "/", status: 200 },
        { path: "/health", status: 200 },
      ],
      true,
      ["Response from GET / is 200", "Response from GET /health is 200"],
    ],
    [
      "one path 500",
      [{ path: "/", status: 500 }],
      false,
      ["Response from GET / is 500", "Health check failed:", "- GET / returned 500.", CLOSING],
    ],
    [
      "the failing paths only, in order, after every response",
      [
        { path: "/a", status: 404 },
        { path: "/b", status: 200 },
        { path: "/c", status: 503 },
      ],
      false,
      [
        "Response from GET /a is 404",
        "Response from GET /b is 200",
        "Response from GET /c is 503",
        "Health check failed:",
        "- GET /a returned 404.",
        "- GET /c returned 503.",
        CLOSING,
      ],
    ],
    [
      "a redirect fails",
      [{ path: "/", status: 301 }],
      false,
      ["Response from GET / is 301", "Health check failed:", "- GET / returned 301.", CLOSING],
    ],
    [
      "204 fails: only 200 passes",
      [{ path: "/", status: 204 }],
      false,
      ["Response from GET / is 204", "Health check failed:", "- GET / returned 204.", CLOSING],
    ],
    [
      "a network error",
      [{ path: "/", status: "ECONNREFUSED" }],
      false,
      [
        "Response from GET / is ECONNREFUSED",
        "Health check failed:",
        "- GET / returned ECONNREFUSED.",
        CLOSING,
      ],
    ],
    [
      "the string 200 is not a status",
      [{ path: "/", status: "200" }],
      false,
      ["Response from GET / is 200", "Health check failed:", "- GET / returned 200.", CLOSING],
    ],
    ["nothing checked fails", [], false, ["Health check failed: no path was checked.", CLOSING]],
  ];
  for (const [label, results, ok, lines] of cases) {
    it(label, () => assert.deepEqual(healthReport(results), { ok, lines }));
  }
  it("exports the closing line", () => assert.equal(HEALTH_CLOSING_LINE, CLOSING));
});

describe("notListeningLines", () => {
  const cases: [string, number, number, "node" | "docker" | "phpserver", RegExp[]][] = [
    [
      "node",
      8080,
      60,
      "node",
      [
        /^The application did not listen on 0\.0\.0\.0:8080 within 60 s\.$/,
        /0\.0\.0\.0:8080/,
        /process\.env\.PORT/,
      ],
    ],
    [
      "docker, another port",
      3000,
      30,
      "docker",
      [/0\.0\.0\.0:3000 within 30 s/, /CC_DOCKER_EXPOSED_HTTP_PORT/],
    ],
    ["phpserver", 8080, 60, "phpserver", [/within 60 s/, /--listen 0\.0\.0\.0:8080/]],
    ["fractional seconds", 8080, 2.5, "node", [/within 2\.5 s\./]],
  ];
  for (const [label, port, seconds, runtime, res] of cases) {
    it(label, () => {
      const lines = notListeningLines(port, seconds, runtime);
      const text = lines.join("\n");
      assert.match(lines[0] ?? "", res[0] as RegExp);
      for (const re of res.slice(1)) assert.match(text, re);
    });
  }
  it("gives two sentences for each runtime", () => {
    for (const rt of ["node", "docker", "phpserver"] as const)
      assert.equal(notListeningLines(8080, 1, rt).length, 2);
  });
});

const PROC = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   3: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1`;

it("listeningAddresses reads LISTEN rows of /proc/net/tcp{,6}", () => {
  assert.deepEqual(listeningAddresses(PROC, 8080), ["127.0.0.1"]);
  assert.deepEqual(listeningAddresses(PROC, 3000), ["0.0.0.0"]);
  assert.deepEqual(listeningAddresses(PROC, 8081), ["::"]);
  assert.deepEqual(listeningAddresses(PROC, 9999), []);
  assert.equal(loopbackOnly(["127.0.0.1"]), true);
  assert.equal(loopbackOnly(["127.0.0.1", "0.0.0.0"]), false);
  assert.equal(loopbackOnly([]), false);
});
