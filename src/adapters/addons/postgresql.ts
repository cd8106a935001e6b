import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { type AddonKindDefinition, ContainerAddons, newSecret } from "./container.js";

/** A PostgreSQL identifier from an add-on name (a DNS label): `my-db` -> `my_db`, at most 48 characters. */
const ident = (name: string) => name.replace(/-/g, "_").slice(0, 48);

/**
 * postgresql: PostgreSQL 17 from Debian trixie (ADR 0015), one database and one user (not a superuser)
 * with a generated password, scram-sha-256 on the network. Backups are `pg_dump -Fc`; a restore goes into
 * a new database in one transaction and replaces the add-on's database only once it succeeded.
 */
export const POSTGRESQL: AddonKindDefinition = {
  kind: "postgresql",
  image: "pier/addon-postgresql:17",
  port: ADDON_PORTS.postgresql,
  credentials: (name) => ({ user: `u_${ident(name)}`, password: newSecret(), database: ident(name) }),
  env: (s) => ({
    PIER_ADDON_USER: s.credentials.user,
    PIER_ADDON_PASSWORD: s.credentials.password,
    PIER_ADDON_DB: s.credentials.database,
    PIER_ADDON_MEMORY_MB: String(Math.floor(s.memoryBytes / 2 ** 20)),
  }),
  restore: { argv: (file) => ["pier-addon", "restore", file], restart: false },
};

export const postgresqlProvider = (servers: AddonServers) => new ContainerAddons(POSTGRESQL, servers);
