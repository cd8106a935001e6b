import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { type AddonKindDefinition, ContainerAddons, newSecret } from "./container.js";

/**
 * kv: a Redis-protocol server (valkey 8.1 from Debian trixie; ADR 0015) on port 6378, plain tcp, the add-on
 * token as its password (contract 2.6 and 5.4). Data: an append-only file fsynced every second. Backups
 * are RDB snapshots; a restore is staged, checked (valkey-check-rdb), then loaded by a restart.
 */
export const KV: AddonKindDefinition = {
  kind: "kv",
  image: "pier/addon-kv:8",
  port: ADDON_PORTS.kv,
  credentials: () => ({ user: "", password: newSecret(), database: "" }),
  env: (s) => ({
    PIER_ADDON_PASSWORD: s.credentials.password,
    PIER_ADDON_MEMORY_MB: String(Math.floor(s.memoryBytes / 2 ** 20)),
  }),
  restore: { argv: (file) => ["pier-addon", "restore-stage", file], restart: true },
};

export const kvProvider = (servers: AddonServers) => new ContainerAddons(KV, servers);
