import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PierError } from "../core/errors.js";
import type { Store } from "../core/ports.js";
import { BOOTSTRAP_NAME, hashToken } from "./access.js";
import type { Config } from "./config.js";

/**
 * The bootstrap admin token: kept hashed in the store, in clear only in <data>/cli.json (0600) for the local
 * CLI. It is PIER_ADMIN_TOKEN when set, else the one cli.json holds, else a new one. Exactly one bootstrap
 * token is valid: setting a new PIER_ADMIN_TOKEN (or deleting cli.json) revokes the previous one.
 */
export async function adminToken(config: Config, store: Store): Promise<string> {
  const file = join(config.dataDir, "cli.json");
  let token = config.adminToken;
  if (!token && existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as { token?: string };
      if (saved.token && (await store.findApiTokenByHash(hashToken(saved.token)))?.bootstrap)
        token = saved.token;
    } catch {
      // A damaged cli.json: a new token replaces it.
    }
  }
  token ??= randomBytes(32).toString("base64url");
  const known = await store.findApiTokenByHash(hashToken(token));
  if (known && !known.bootstrap) {
    throw new PierError(
      "CONFIG_INVALID",
      `PIER_ADMIN_TOKEN is the value of the API token '${known.name}'.`,
      "Choose another value (at least 24 characters), or revoke that token first.",
    );
  }
  if (!known) {
    await store.addApiToken({
      id: `tok-${randomBytes(6).toString("hex")}`,
      name: BOOTSTRAP_NAME,
      hash: hashToken(token),
      appId: null,
      readOnly: false,
      bootstrap: true,
    });
  }
  await store.pruneBootstrapTokens(hashToken(token));
  const url = `http://${config.api.host === "0.0.0.0" ? "127.0.0.1" : config.api.host}:${config.api.port}`;
  await writeFile(file, `${JSON.stringify({ url, token }, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}
