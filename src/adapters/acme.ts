import { readFileSync } from "node:fs";
import { Agent } from "node:https";
import { rootCertificates } from "node:tls";
import * as acme from "acme-client";
import type { CertificatePair } from "../core/domains.js";
import { PierError } from "../core/errors.js";
import type { DomainStore, TlsEdge } from "../core/ports.js";

/** Obtains certificates from an ACME server (RFC 8555). */
export interface CertificateIssuer {
  /** The directory URL, for messages. */
  readonly directory: string;
  /** A certificate for `name`, its HTTP-01 challenge answered through `edge`. */
  obtain(name: string, edge: Pick<TlsEdge, "setChallenge" | "removeChallenge">): Promise<CertificatePair>;
}

/** The problem an ACME server or the network reported, in one line. */
function reason(e: unknown): string {
  const err = e as { message?: string; response?: { data?: { detail?: string } } };
  return (err.response?.data?.detail ?? err.message ?? String(e)).replace(/\s+/g, " ").trim();
}

/**
 * acme-client (a well-kept implementation of RFC 8555) against one directory, with one account per
 * directory whose key is kept sealed in the store. HTTP-01 only: the edge answers it on the HTTP port.
 * PIER_ACME_CA adds a CA to those trusted for the ACME server (a test server's, a private CA), for
 * acme-client's requests only.
 */
export class AcmeIssuer implements CertificateIssuer {
  constructor(
    private readonly opts: {
      directory: string;
      email: string | null;
      caFile: string | null;
      store: Pick<DomainStore, "acmeAccountKey" | "saveAcmeAccountKey">;
    },
  ) {
    if (opts.caFile) {
      acme.axios.defaults.httpsAgent = new Agent({
        ca: [...rootCertificates, readFileSync(opts.caFile, "utf8")],
      });
    }
  }

  get directory(): string {
    return this.opts.directory;
  }

  private async accountKey(): Promise<string> {
    const known = await this.opts.store.acmeAccountKey(this.opts.directory);
    if (known) return known;
    const key = (await acme.crypto.createPrivateEcdsaKey()).toString();
    await this.opts.store.saveAcmeAccountKey(this.opts.directory, key);
    return key;
  }

  async obtain(
    name: string,
    edge: Pick<TlsEdge, "setChallenge" | "removeChallenge">,
  ): Promise<CertificatePair> {
    try {
      const client = new acme.Client({
        directoryUrl: this.opts.directory,
        accountKey: await this.accountKey(),
        backoffAttempts: 6,
        backoffMin: 1000,
        backoffMax: 10_000,
      });
      const [key, csr] = await acme.crypto.createCsr(
        { commonName: name, altNames: [name] },
        await acme.crypto.createPrivateEcdsaKey(),
      );
      const certPem = await client.auto({
        csr,
        email: this.opts.email ?? undefined,
        termsOfServiceAgreed: true,
        challengePriority: ["http-01"],
        // The server checks the answer itself; a check from this host often cannot reach its own public
        // address (no hairpin NAT), and would fail where the ACME server succeeds.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type !== "http-01") throw new Error(`challenge ${challenge.type} is not supported`);
          await edge.setChallenge(challenge.token, keyAuthorization);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          if (challenge.type === "http-01") await edge.removeChallenge(challenge.token);
        },
      });
      return { certPem, keyPem: key.toString() };
    } catch (e) {
      throw new PierError(
        "ACME_ERROR",
        `The ACME server ${this.opts.directory} gave no certificate for ${name}: ${reason(e)}`,
        `Check that ${name} resolves to this host and that its port 80 reaches Pier's HTTP edge.`,
      );
    }
  }
}
