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

/**
 * The ACME server itself failed (no answer, 5xx, or 429 rate limited), not the domain: the caller stops
 * asking for any domain for a while instead of trying each in turn.
 */
export class AcmeUnavailable extends PierError {
  /** @param why what went wrong, without the domain (`no answer`, `503 ...`): said of domains asked for during the pause. */
  constructor(
    message: string,
    hint?: string,
    readonly why = "no answer",
  ) {
    super("ACME_ERROR", message, hint);
  }
}

/**
 * The status of the last answer acme-client's axios got (0: none). acme-client turns a 5xx or 429 answer
 * into a plain Error holding only the problem's detail, so the status is taken as it passes. Orders run one
 * at a time (DomainService), so the last answer is the one that failed.
 */
let lastStatus = 0;
let watching = false;
function watchStatuses(): void {
  if (watching) return;
  watching = true;
  acme.axios.interceptors.response.use(
    (r) => {
      lastStatus = r.status;
      return r;
    },
    (e: { response?: { status?: number } }) => {
      lastStatus = e.response?.status ?? 0;
      throw e;
    },
  );
}

/** Whether acme-client's error is the server's or the network's (no answer, 5xx or 429). */
function serverFailed(e: unknown): boolean {
  // acme-client 5.4's retry interceptor meets a request that got no answer (refused, reset, timed out) with
  // `validateStatus(undefined)`, a TypeError: that is the shape "no answer" takes.
  if (e instanceof TypeError) return true;
  const err = e as { isAxiosError?: boolean; response?: { status?: number } };
  const status = err.isAxiosError === true ? (err.response?.status ?? 0) : lastStatus;
  return status === 0 || status >= 500 || status === 429;
}

/**
 * The problem an ACME server or the network reported, in one line: its detail or the error's message
 * only (an axios error also carries the request: headers, the signed JWS body; none of that goes out).
 */
function reason(e: unknown): string {
  if (e instanceof TypeError) return "no answer (connection refused, reset or timed out)";
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
      /**
       * acme-client's own retries of a request the server failed (no answer, 5xx, 429): 2, 5 s then 10 s
       * apart (its default, 5 up to 25 s apart, held the one-at-a-time order queue 75 s per domain); longer
       * outages are the caller's backoff (AcmeUnavailable).
       */
      retries?: { attempts: number; delaySeconds: number };
    },
  ) {
    // acme-client's own axios instance (nothing global to the process), like the agent below.
    watchStatuses();
    // acmeSettings is acme-client's addition to axios's defaults (src/axios.js), not in its types.
    const settings = (acme.axios.defaults as { acmeSettings?: Record<string, number> }).acmeSettings;
    if (settings) {
      settings.retryMaxAttempts = opts.retries?.attempts ?? 2;
      settings.retryDefaultDelay = opts.retries?.delaySeconds ?? 5;
    }
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
    lastStatus = -1;
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
      if (serverFailed(e))
        throw new AcmeUnavailable(
          `The ACME server ${this.opts.directory} is unavailable, no certificate for ${name}: ${reason(e)}`,
          "Pier tries again by itself, waiting longer after each failure (PIER_ACME_DIRECTORY).",
          reason(e),
        );
      throw new PierError(
        "ACME_ERROR",
        `The ACME server ${this.opts.directory} gave no certificate for ${name}: ${reason(e)}`,
        `Check that ${name} resolves to this host and that its port 80 reaches Pier's HTTP edge.`,
      );
    }
  }
}
