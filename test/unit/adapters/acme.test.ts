// AcmeIssuer against a local HTTP server playing a broken ACME server: what a failure becomes. A server
// that does not answer or answers 5xx is AcmeUnavailable (the caller pauses every domain); a problem
// document is the domain's ACME_ERROR with its detail. Neither message carries the request (acme-client's
// errors are axios errors: headers, the signed JWS body with the account's key id).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AcmeIssuer, AcmeUnavailable } from "../../../src/adapters/acme.js";
import { PierError } from "../../../src/core/errors.js";

describe("AcmeIssuer's failures", () => {
  let server: Server;
  let base = "";
  let accountStatus = 400;
  let saved: string | null = null;
  before(async () => {
    server = createServer((req, res) => {
      const url = req.url ?? "";
      if (url === "/dir") {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            newNonce: `${base}/nonce`,
            newAccount: `${base}/acct`,
            newOrder: `${base}/order`,
          }),
        );
      } else if (url === "/nonce") {
        res.setHeader("replay-nonce", `n${Date.now()}`);
        res.end();
      } else if (url === "/acct") {
        req.resume();
        res.statusCode = accountStatus;
        res.setHeader("replay-nonce", `n${Date.now()}`);
        res.setHeader("content-type", "application/problem+json");
        res.end(
          JSON.stringify({
            type: "urn:ietf:params:acme:error:malformed",
            detail: "this account is not welcome",
          }),
        );
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const issuer = (directory: string) =>
    new AcmeIssuer({
      directory,
      email: "ops@example.test",
      caFile: null,
      retries: { attempts: 1, delaySeconds: 0.01 },
      store: {
        acmeAccountKey: async () => saved,
        saveAcmeAccountKey: async (_d, key) => {
          saved = key;
        },
      },
    });
  const edge = { setChallenge: async () => undefined, removeChallenge: async () => undefined };
  const failure = async (p: Promise<unknown>): Promise<PierError> => {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof PierError, String(e));
      return e;
    }
    assert.fail("resolved");
  };
  const noRequest = (e: PierError) => {
    const text = `${e.message} ${e.hint ?? ""}`;
    for (const leak of ["PRIVATE KEY", "protected", "signature", "payload", "kid", "User-Agent", "headers"])
      assert.ok(!text.includes(leak), `no ${leak} in: ${text}`);
  };

  it("no answer at all (nothing listens): unavailable, said plainly", async () => {
    const e = await failure(issuer("http://127.0.0.1:1/dir").obtain("www.example.test", edge));
    assert.ok(e instanceof AcmeUnavailable);
    assert.equal(e.code, "ACME_ERROR");
    assert.match(
      e.message,
      /is unavailable, no certificate for www\.example\.test: no answer \(connection refused/,
    );
    noRequest(e);
  });

  it("a 5xx to a signed request: unavailable, without the request in the message", async () => {
    accountStatus = 503;
    const e = await failure(issuer(`${base}/dir`).obtain("www.example.test", edge));
    assert.ok(e instanceof AcmeUnavailable, e.message);
    noRequest(e);
  });

  it("a problem document: the domain's ACME_ERROR with the server's detail, not the JWS", async () => {
    accountStatus = 400;
    const e = await failure(issuer(`${base}/dir`).obtain("www.example.test", edge));
    assert.ok(!(e instanceof AcmeUnavailable));
    assert.match(e.message, /gave no certificate for www\.example\.test: .*this account is not welcome/);
    noRequest(e);
    assert.match(saved ?? "", /PRIVATE KEY/, "the account key went to the store (sealed there)");
  });
});
