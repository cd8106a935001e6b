// SSH keys as users give them: public keys to register (authorized_keys lines) and an app's private key
// for its builds' git dependencies (contract section 5.2). Messages never quote a private key.
import { createHash } from "node:crypto";
import ssh2 from "ssh2";
import { PierError } from "../core/errors.js";

/** "SHA256:<base64 without padding>", as `ssh-keygen -l` prints it. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

const SSH_ALGOS = new Set([
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
]);

/** Parses one authorized_keys-style line: `<algo> <base64 blob> [comment]`. */
export function parsePublicKey(line: string): {
  algo: string;
  blob: string;
  comment: string;
  fingerprint: string;
} {
  const parts = line.trim().split(/\s+/);
  const [algo, b64, ...rest] = parts;
  if (!algo || !b64 || !SSH_ALGOS.has(algo)) {
    throw new PierError(
      "INVALID_INPUT",
      "publicKey: not an OpenSSH public key line (like `ssh-ed25519 AAAA... you@host`).",
      "Pass the .pub file, not the private key.",
    );
  }
  const blob = Buffer.from(b64, "base64");
  const nameLen = blob.length >= 4 ? blob.readUInt32BE(0) : 0;
  if (blob.length < 4 + nameLen || blob.subarray(4, 4 + nameLen).toString() !== algo) {
    throw new PierError(
      "INVALID_INPUT",
      "publicKey: the key data does not match its algorithm; the line is damaged.",
    );
  }
  const fingerprint = fingerprintOf(blob);
  return { algo, blob: blob.toString("base64"), comment: rest.join(" "), fingerprint };
}

/** What Pier shows of an app's private SSH key: never the key itself. */
export interface SshPrivateKeyInfo {
  type: string;
  fingerprint: string;
  /** The public half as an authorized_keys line, to register where the build fetches from. */
  publicKey: string;
}

/**
 * Checks an app's private SSH key (contract section 5.2): an unencrypted OpenSSH or PEM private key.
 * Messages never quote the key.
 */
export function parsePrivateKey(text: string): SshPrivateKeyInfo {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    throw new PierError(
      "INVALID_INPUT",
      "privateKey: not a private key (expected a file starting with -----BEGIN OPENSSH PRIVATE KEY-----).",
      /ssh-|ecdsa-/.test(text.trim().slice(0, 20))
        ? "This is a public key: pass the file without .pub."
        : undefined,
    );
  }
  const parsed = ssh2.utils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error) {
    const encrypted = key instanceof Error && /passphrase|encrypted/i.test(key.message);
    throw new PierError(
      "INVALID_INPUT",
      encrypted
        ? "privateKey: the key is protected by a passphrase; builds cannot type it."
        : "privateKey: the key cannot be read (damaged or of an unsupported type).",
      encrypted ? "Remove the passphrase from a copy: ssh-keygen -p -N '' -f COPY" : undefined,
    );
  }
  if (!key.isPrivateKey())
    throw new PierError("INVALID_INPUT", "privateKey: this is a public key, not a private key.");
  const blob = key.getPublicSSH();
  return {
    type: key.type,
    fingerprint: fingerprintOf(blob),
    publicKey: `${key.type} ${blob.toString("base64")}`,
  };
}
