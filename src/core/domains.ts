import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { PierError } from "./errors.js";
import { hostnameProblem } from "./names.js";

/**
 * Custom domains and their certificates (ADR 0018): which names an app may take, when a certificate is
 * renewed, how long to wait after a failure, and what a user's own certificate must be. Pure (node:crypto
 * parses certificates, it does no I/O).
 */

/** Where a domain's certificate comes from: the ACME server, or the user (`pier domain cert set`). */
export type CertSource = "acme" | "user";

/**
 * pending: no certificate yet (being obtained); issued: a certificate serves; failed: none could be
 * obtained (see lastError; HTTP keeps serving the domain).
 */
export type DomainState = "pending" | "issued" | "failed";

export interface Domain {
  name: string;
  appId: string;
  source: CertSource;
  state: DomainState;
  /** The certificate serving now, if any. */
  issuer: string | null;
  serial: string | null;
  notBefore: string | null;
  notAfter: string | null;
  /** The last failure to obtain or renew (the current certificate keeps serving). */
  lastError: string | null;
  /** Failures in a row; the next attempt waits retryDelay(failures). */
  failures: number;
  /** When the next automatic attempt (issue or renewal) is due; null: none (a user's certificate). */
  nextAttemptAt: string | null;
  createdAt: string;
}

/** A certificate and its private key, PEM (the chain after the leaf). */
export interface CertificatePair {
  certPem: string;
  keyPem: string;
}

export interface CertificateFacts {
  issuer: string;
  serial: string;
  notBefore: string;
  notAfter: string;
  names: string[];
}

/** An IPv4 address in any form resolvers accept (`1.2.3.4`, `10.1`, `0x7f.1`), or an IPv6 one (`::1`, `[::1]`). */
const IPV4_LIKE = /^(0x[0-9a-f]+|\d+)(\.(0x[0-9a-f]+|\d+)){0,3}\.?$/i;
const IPV6_LIKE = /^\[?[0-9a-f:.]*:[0-9a-f:.]*(%[^\]]*)?\]?$/i;

/** True when `name` is an IP address rather than a DNS name. */
export const isIpAddress = (name: string) => IPV4_LIKE.test(name) || IPV6_LIKE.test(name);

/** Why `name` cannot be a custom domain on this server (PIER_DOMAIN `pierDomain`), or null. */
export function domainNameProblem(name: string, pierDomain: string): string | null {
  if (isIpAddress(name))
    return `domain '${name}' is an IP address, not a DNS name: certificate authorities (ACME) issue certificates for names only, and the edge routes by host name. Point a DNS name at this server's address and add that name`;
  const bad = hostnameProblem(name);
  if (bad) return bad.replace(/^hostname/, "domain");
  if (!name.includes(".")) return `domain '${name}' must have at least two labels (like www.example.com)`;
  if (name === pierDomain || name.endsWith(`.${pierDomain}`))
    return `domain '${name}' is under PIER_DOMAIN (${pierDomain}): apps answer there by their name already`;
  return null;
}

/**
 * A domain's record once a certificate from `source` serves: its facts, no error, and its next attempt
 * (an ACME certificate's renewal time; none for the user's own).
 */
export function servingPatch(source: CertSource, facts: CertificateFacts) {
  return {
    source,
    state: "issued" as const,
    issuer: facts.issuer,
    serial: facts.serial,
    notBefore: facts.notBefore,
    notAfter: facts.notAfter,
    lastError: null,
    failures: 0,
    nextAttemptAt:
      source === "acme"
        ? renewalTime(new Date(facts.notBefore), new Date(facts.notAfter)).toISOString()
        : null,
  };
}

const DAY = 86_400_000;

/**
 * When a certificate valid from `notBefore` to `notAfter` is renewed: 30 days before it expires, or a third
 * of its lifetime before, for a certificate that lives less than 90 days.
 */
export function renewalTime(notBefore: Date, notAfter: Date): Date {
  const life = notAfter.getTime() - notBefore.getTime();
  const ahead = Math.min(30 * DAY, life / 3);
  return new Date(notAfter.getTime() - ahead);
}

/**
 * The wait before the next attempt after `failures` failures in a row: 5 min, doubling, at most 6 h (Let's
 * Encrypt allows 5 failed validations per name, account and hour).
 */
export function retryDelay(failures: number, baseMs = 300_000): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), 6 * 3600_000);
}

/** The PEM blocks of a file, in order. */
export function pemBlocks(text: string, label: string): string[] {
  const re = new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`, "g");
  return text.match(re) ?? [];
}

/** Whether `name` is covered by a certificate name (`*.example.com` covers one label). */
export function nameMatches(pattern: string, name: string): boolean {
  const p = pattern.toLowerCase();
  const n = name.toLowerCase();
  if (p === n) return true;
  if (!p.startsWith("*.")) return false;
  const rest = n.indexOf(".");
  return rest > 0 && n.slice(rest + 1) === p.slice(2);
}

function namesOf(cert: X509Certificate): string[] {
  const alt = cert.subjectAltName
    ?.split(", ")
    .filter((s) => s.startsWith("DNS:"))
    .map((s) => s.slice(4));
  if (alt && alt.length > 0) return alt;
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(cert.subject)?.[1];
  return cn ? [cn] : [];
}

const fail = (message: string, hint?: string) => new PierError("CERTIFICATE_INVALID", message, hint);

/** Issuer, serial, validity and names of the leaf (first) certificate of a PEM chain. */
export function certificateFacts(certPem: string): CertificateFacts {
  const first = pemBlocks(certPem, "CERTIFICATE")[0];
  if (!first) throw fail("The certificate file holds no PEM certificate (-----BEGIN CERTIFICATE-----).");
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(first);
  } catch (e) {
    throw fail(`The certificate cannot be read: ${(e as Error).message}.`);
  }
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(cert.issuer)?.[1];
  return {
    issuer: cn ?? cert.issuer.replaceAll("\n", ", "),
    serial: cert.serialNumber.toLowerCase(),
    notBefore: new Date(cert.validFrom).toISOString(),
    notAfter: new Date(cert.validTo).toISOString(),
    names: namesOf(cert),
  };
}

/**
 * Checks a user's certificate for `name`: the chain reads, each certificate is signed by the next, the key
 * is the leaf's, the leaf names `name`, and it has not expired. Returns the leaf's facts.
 */
export function checkCertificate(pair: CertificatePair, name: string, now = new Date()): CertificateFacts {
  const blocks = pemBlocks(pair.certPem, "CERTIFICATE");
  if (blocks.length === 0)
    throw fail("The certificate file holds no PEM certificate (-----BEGIN CERTIFICATE-----).");
  let chain: X509Certificate[];
  try {
    chain = blocks.map((b) => new X509Certificate(b));
  } catch (e) {
    throw fail(`The certificate cannot be read: ${(e as Error).message}.`);
  }
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!chain[i]!.checkIssued(chain[i + 1]!) || !chain[i]!.verify(chain[i + 1]!.publicKey))
      throw fail(
        `Certificate ${i + 1} of the chain is not signed by certificate ${i + 2}.`,
        "Put the leaf first, then each issuer in order.",
      );
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch (e) {
    throw fail(`The private key cannot be read: ${(e as Error).message}.`, "Give an unencrypted PEM key.");
  }
  const pub = (k: ReturnType<typeof createPublicKey>) => k.export({ type: "spki", format: "der" });
  if (!pub(createPublicKey(key)).equals(pub(chain[0]!.publicKey)))
    throw fail(
      "The private key does not match the certificate.",
      "Give the key the certificate was made for.",
    );
  if (key.asymmetricKeyType === "rsa" && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
    throw fail(
      `The key is RSA of ${key.asymmetricKeyDetails?.modulusLength ?? "?"} bits: the edge (OpenSSL) refuses RSA keys under 2048 bits.`,
      "Make a certificate with an RSA key of 2048 bits or more, or an EC key (P-256).",
    );
  const facts = certificateFacts(pair.certPem);
  if (!facts.names.some((n) => nameMatches(n, name)))
    throw fail(`The certificate is for ${facts.names.join(", ") || "no name"}, not for ${name}.`);
  if (new Date(facts.notAfter) <= now) throw fail(`The certificate expired on ${facts.notAfter}.`);
  return facts;
}

/**
 * The PEM the edge loads for a domain: the chain, then the key, each re-encoded from what it parses to.
 * Nothing of the input but the certificates and the key reaches the edge: no text around or between the
 * PEM blocks, no empty line or lone CR (HAProxy's runtime API ends a payload at an empty line, so such a
 * line in a user's file, or an ACME server's answer, would cut the payload short).
 */
export function edgePem(pair: CertificatePair): string {
  const certs = pemBlocks(pair.certPem, "CERTIFICATE").map((b) => {
    try {
      return new X509Certificate(b).toString().trim();
    } catch (e) {
      throw fail(`The certificate cannot be read: ${(e as Error).message}.`);
    }
  });
  if (certs.length === 0)
    throw fail("The certificate file holds no PEM certificate (-----BEGIN CERTIFICATE-----).");
  let key: string;
  try {
    key = String(createPrivateKey(pair.keyPem).export({ type: "pkcs8", format: "pem" })).trim();
  } catch (e) {
    throw fail(`The private key cannot be read: ${(e as Error).message}.`, "Give an unencrypted PEM key.");
  }
  return `${[...certs, key].join("\n")}\n`;
}
