import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  certificateFacts,
  checkCertificate,
  domainNameProblem,
  edgePem,
  nameMatches,
  renewalTime,
  retryDelay,
} from "../../../src/core/domains.js";
import { PierError } from "../../../src/core/errors.js";
import { CA, LEAF, LEAF_KEY, OTHER_CA, OTHER_KEY, SMALL_RSA, SMALL_RSA_KEY } from "./tls-fixtures.js";

describe("domainNameProblem", () => {
  const cases: [string, RegExp | null][] = [
    ["www.example.com", null],
    ["a-b.c-d.example", null],
    ["xn--bcher-kva.example", null],
    ["example", /at least two labels/],
    ["bad_name.example.com", /not a valid DNS name \(label 'bad_name'\)/],
    ["-a.example.com", /not a valid DNS name/],
    ["a..example.com", /not a valid DNS name/],
    ["WWW.example.com", /not a valid DNS name/],
    [`${"a".repeat(64)}.example.com`, /not a valid DNS name/],
    [`${"a.".repeat(127)}com`, /1-253 characters/],
    ["*.example.com", /not a valid DNS name/],
    ["localhost", /at least two labels/],
    ["app.pier.example", /under PIER_DOMAIN \(pier\.example\)/],
    ["pier.example", /under PIER_DOMAIN/],
    ["notpier.example", null],
    ["1.2.3.4", /is an IP address, not a DNS name: certificate authorities \(ACME\)/],
    ["203.0.113.7", /is an IP address/],
    ["127.0.0.1", /is an IP address/],
    ["10.1", /is an IP address/],
    ["0x7f.0.0.1", /is an IP address/],
    ["1.2.3.4.", /is an IP address/],
    ["::1", /is an IP address/],
    ["2001:db8::1", /is an IP address/],
    ["[2001:db8::1]", /is an IP address/],
    ["::ffff:192.0.2.1", /is an IP address/],
    ["fe80::1%eth0", /is an IP address/],
    ["1.2.3.example", null],
    ["123.example.com", null],
    ["a1b2.c3d4.example", null],
    ["ab.cd", null],
  ];
  for (const [name, want] of cases) {
    test(`${name.slice(0, 40)} -> ${want ?? "ok"}`, () => {
      const got = domainNameProblem(name, "pier.example");
      if (want === null) assert.equal(got, null);
      else assert.match(got ?? "", want);
    });
  }
  test("messages speak of the domain", () => {
    assert.match(domainNameProblem("a_b.c", "x.y") ?? "", /^domain 'a_b\.c'/);
  });
});

describe("renewalTime", () => {
  const d = (iso: string) => new Date(iso);
  const cases: [string, string, string, string][] = [
    ["90-day (Let's Encrypt)", "2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026-03-02T00:00:00.000Z"],
    ["1-year", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026-12-02T00:00:00.000Z"],
    [
      "6-day (short-lived): a third before",
      "2026-01-01T00:00:00Z",
      "2026-01-07T00:00:00Z",
      "2026-01-05T00:00:00.000Z",
    ],
    [
      "60-day: a third (20 days) before",
      "2026-01-01T00:00:00Z",
      "2026-03-02T00:00:00Z",
      "2026-02-10T00:00:00.000Z",
    ],
    ["90 minutes", "2026-01-01T00:00:00Z", "2026-01-01T01:30:00Z", "2026-01-01T01:00:00.000Z"],
  ];
  for (const [what, from, to, want] of cases) {
    test(what, () => assert.equal(renewalTime(d(from), d(to)).toISOString(), want));
  }
});

describe("retryDelay", () => {
  const cases: [number, number][] = [
    [1, 5 * 60_000],
    [2, 10 * 60_000],
    [3, 20 * 60_000],
    [5, 80 * 60_000],
    [7, 320 * 60_000],
    [8, 6 * 3600_000],
    [50, 6 * 3600_000],
    [0, 5 * 60_000],
  ];
  for (const [failures, want] of cases) {
    test(`${failures} failures -> ${want / 60_000} min`, () => assert.equal(retryDelay(failures), want));
  }
  test("a base of 1 s doubles too", () => assert.equal(retryDelay(3, 1000), 4000));
});

describe("nameMatches", () => {
  const cases: [string, string, boolean][] = [
    ["www.example.com", "www.example.com", true],
    ["WWW.example.com", "www.EXAMPLE.com", true],
    ["*.example.com", "www.example.com", true],
    ["*.example.com", "example.com", false],
    ["*.example.com", "a.b.example.com", false],
    ["www.example.com", "api.example.com", false],
    ["*.example.com", ".example.com", false],
  ];
  for (const [pattern, name, want] of cases) {
    test(`${pattern} ~ ${name}: ${want}`, () => assert.equal(nameMatches(pattern, name), want));
  }
});

describe("checkCertificate", () => {
  const code = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof PierError);
      assert.equal(e.status, 422);
      return e.message;
    }
    return "";
  };
  test("a leaf with its chain and key, for a name it holds: the leaf's facts", () => {
    const f = checkCertificate({ certPem: `${LEAF}\n${CA}\n`, keyPem: LEAF_KEY }, "shop.example.test");
    assert.equal(f.issuer, "Fixture CA");
    assert.deepEqual(f.names, ["shop.example.test", "*.apps.example.test"]);
    assert.match(f.serial, /^[0-9a-f]+$/);
    assert.ok(Date.parse(f.notAfter) > Date.parse("2100-01-01"));
  });
  test("a wildcard name covers one label", () => {
    assert.doesNotThrow(() => checkCertificate({ certPem: LEAF, keyPem: LEAF_KEY }, "x.apps.example.test"));
    assert.match(
      code(() => checkCertificate({ certPem: LEAF, keyPem: LEAF_KEY }, "a.b.apps.example.test")),
      /not for/,
    );
  });
  const bad: [string, () => unknown, RegExp][] = [
    [
      "a key that does not match",
      () => checkCertificate({ certPem: LEAF, keyPem: OTHER_KEY }, "shop.example.test"),
      /private key does not match/,
    ],
    [
      "another name",
      () => checkCertificate({ certPem: LEAF, keyPem: LEAF_KEY }, "api.example.test"),
      /is for shop\.example\.test, \*\.apps\.example\.test, not for api\.example\.test/,
    ],
    [
      "a chain out of order",
      () => checkCertificate({ certPem: `${LEAF}\n${OTHER_CA}`, keyPem: LEAF_KEY }, "shop.example.test"),
      /not signed by certificate 2/,
    ],
    [
      "no certificate",
      () => checkCertificate({ certPem: "hello", keyPem: LEAF_KEY }, "shop.example.test"),
      /no PEM certificate/,
    ],
    [
      "a key that is not one",
      () => checkCertificate({ certPem: LEAF, keyPem: "nope" }, "shop.example.test"),
      /private key cannot be read/,
    ],
    [
      "an RSA key of 1024 bits (HAProxy would refuse it, and keep it in its files)",
      () => checkCertificate({ certPem: SMALL_RSA, keyPem: SMALL_RSA_KEY }, "small.example.test"),
      /RSA of 1024 bits: the edge \(OpenSSL\) refuses RSA keys under 2048 bits/,
    ],
    [
      "expired (checked at 2200)",
      () =>
        checkCertificate({ certPem: LEAF, keyPem: LEAF_KEY }, "shop.example.test", new Date("2200-01-01")),
      /expired on 21/,
    ],
  ];
  for (const [what, f, want] of bad) test(`refused: ${what}`, () => assert.match(code(f), want));

  test("certificateFacts reads the leaf; edgePem puts the key after the chain", () => {
    assert.equal(certificateFacts(`${LEAF}\n${CA}`).issuer, "Fixture CA");
    const pem = edgePem({ certPem: `${LEAF}\n${CA}\n\n`, keyPem: `${LEAF_KEY}\n` });
    assert.ok(pem.startsWith("-----BEGIN CERTIFICATE-----"));
    assert.ok(pem.trimEnd().endsWith("-----END PRIVATE KEY-----"));
    assert.ok(!pem.includes("\n\n"));
  });

  // HAProxy's runtime API ends a payload (`set ssl cert <<`) at an empty line, and a line of a lone CR is
  // one. Text a user (or an ACME server) puts around or inside the PEM must never reach it.
  const PEM_ONLY = /^(-----BEGIN [A-Z ]+-----\n([A-Za-z0-9+/=]{1,64}\n)+-----END [A-Z ]+-----\n)+$/;
  const hostile: [string, { certPem: string; keyPem: string }][] = [
    [
      "a lone CR line then a command in the key",
      { certPem: LEAF, keyPem: `x\n\r\r\nshow info\n\r\r\n${LEAF_KEY}` },
    ],
    [
      "text around and between the certificates",
      { certPem: `hi\r\n\r\n${LEAF}\n;del ssl cert x\n\n${CA}\n#`, keyPem: LEAF_KEY },
    ],
    ["CRLF line ends", { certPem: LEAF.replaceAll("\n", "\r\n"), keyPem: LEAF_KEY.replaceAll("\n", "\r\n") }],
  ];
  for (const [what, pair] of hostile)
    test(`edgePem keeps only the PEM of the certificates and the key: ${what}`, () => {
      const pem = edgePem(pair);
      assert.match(pem, PEM_ONLY);
      assert.ok(!/show|del|#|;/.test(pem));
      // The same certificates and key: the checks still pass on what the edge gets.
      assert.equal(checkCertificate({ certPem: pem, keyPem: pem }, "shop.example.test").issuer, "Fixture CA");
    });
  test("edgePem refuses a certificate block it cannot parse (a payload hidden inside the block)", () => {
    const inside = LEAF.replace("\n-----END", "\n\r\r\nshow info\n-----END");
    assert.throws(() => edgePem({ certPem: inside, keyPem: LEAF_KEY }), /certificate cannot be read/);
  });
});
