// The one fake ACME server (CertificateIssuer, src/adapters/acme.ts): it answers the HTTP-01 challenge
// through the edge it is given and issues the fixture's certificate (shop.example.test), or refuses, or is
// down, as a test sets it; it counts its calls and how many ran at once.
import { AcmeUnavailable, type CertificateIssuer } from "../../src/adapters/acme.js";
import type { CertificatePair } from "../../src/core/domains.js";
import { PierError } from "../../src/core/errors.js";
import type { TlsEdge } from "../../src/core/ports.js";
import { LEAF, LEAF_KEY } from "../unit/core/tls-fixtures.js";

export class FakeIssuer implements CertificateIssuer {
  readonly directory = "https://acme.test/dir";
  calls: string[] = [];
  /** The ACME server refuses the domain, with this reason. */
  refuse: string | null = null;
  /** The server itself fails (no answer). */
  down = false;
  active = 0;
  maxActive = 0;

  async obtain(
    name: string,
    edge: Pick<TlsEdge, "setChallenge" | "removeChallenge">,
  ): Promise<CertificatePair> {
    this.calls.push(name);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    await new Promise((r) => setImmediate(r));
    this.active--;
    if (this.down) throw new AcmeUnavailable(`The ACME server ${this.directory} is unavailable: no answer`);
    await edge.setChallenge("tok", "tok.thumb");
    await edge.removeChallenge("tok");
    if (this.refuse)
      throw new PierError(
        "ACME_ERROR",
        `The ACME server ${this.directory} gave no certificate for ${name}: ${this.refuse}`,
      );
    return { certPem: LEAF, keyPem: LEAF_KEY };
  }
}
