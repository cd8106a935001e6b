import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { type AddonKindDefinition, ContainerAddons, newSecret } from "./container.js";

/** A MariaDB identifier from an add-on name (a DNS label): `my-db` -> `my_db`, at most 48 characters. */
const ident = (name: string) => name.replace(/-/g, "_").slice(0, 48);

/**
 * mysql: MariaDB 11.8 from Debian trixie (ADR 0015), one database and one user (privileges on that database
 * only) with a generated password; root only on the container's own socket. Backups are gzip-compressed
 * `mariadb-dump --single-transaction` dumps; a restore loads the dump into a new database and swaps its
 * tables in with one RENAME TABLE only once it loaded whole.
 */
export const MYSQL: AddonKindDefinition = {
  kind: "mysql",
  image: "pier/addon-mysql:11",
  port: ADDON_PORTS.mysql,
  credentials: (name) => ({ user: `u_${ident(name)}`, password: newSecret(), database: ident(name) }),
  env: (s) => ({
    PIER_ADDON_USER: s.credentials.user,
    PIER_ADDON_PASSWORD: s.credentials.password,
    PIER_ADDON_DB: s.credentials.database,
    PIER_ADDON_MEMORY_MB: String(Math.floor(s.memoryBytes / 2 ** 20)),
  }),
  restore: { argv: (file) => ["pier-addon", "restore", file], restart: false },
};

export const mysqlProvider = (servers: AddonServers) => new ContainerAddons(MYSQL, servers);
