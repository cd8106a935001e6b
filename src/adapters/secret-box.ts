import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { PierError } from "../core/errors.js";

const PREFIX = "pier1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Authenticated encryption (AES-256-GCM) of secrets at rest: app variables, release snapshots of them,
 * private SSH keys. The key lives in its own file (mode 0600) beside the database, so a copied
 * database alone reveals no secret. Sealed text: `pier1:` + base64(iv | tag | ciphertext).
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new PierError("CONFIG_INVALID", "A secret key must be 32 bytes.");
    return new SecretBox(key);
  }

  /** Reads the key file, creating it (32 random bytes, base64, mode 0600) when it does not exist. */
  static fromFile(file: string): SecretBox {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      text = `${randomBytes(32).toString("base64")}\n`;
      try {
        writeFileSync(file, text, { mode: 0o600, flag: "wx" });
      } catch (w) {
        // Another process created it first: use theirs.
        if ((w as NodeJS.ErrnoException).code !== "EEXIST") throw w;
        text = readFileSync(file, "utf8");
      }
    }
    const key = Buffer.from(text.trim(), "base64");
    if (key.length !== 32)
      throw new PierError(
        "CONFIG_INVALID",
        `The secret key file ${file} does not hold a base64 32-byte key.`,
        "Restore it from your backup: without it, stored secrets cannot be read.",
      );
    return new SecretBox(key);
  }

  static isSealed(text: string): boolean {
    return text.startsWith(PREFIX);
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  open(sealed: string): string {
    if (!SecretBox.isSealed(sealed))
      throw new PierError("SECRET_UNREADABLE", "A stored secret is not in the sealed format.");
    const raw = Buffer.from(sealed.slice(PREFIX.length), "base64");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
        "utf8",
      );
    } catch {
      throw new PierError(
        "SECRET_UNREADABLE",
        "A stored secret cannot be decrypted with this data directory's secret.key.",
        "The key file was replaced or belongs to another data directory: restore the original secret.key.",
      );
    }
  }
}
