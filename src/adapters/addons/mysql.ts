import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { ContainerAddons } from "./container.js";
import { sqlDatabaseKind } from "./sql-database.js";

/**
 * mysql: MariaDB 11.8 from Debian trixie (ADR 0015), one database and one user (privileges on that database
 * only) with a generated password; root only on the container's own socket. Backups are gzip-compressed
 * `mariadb-dump --single-transaction` dumps; a restore loads the dump into a new database and swaps its
 * tables in with one RENAME TABLE only once it loaded whole.
 */
export const MYSQL = sqlDatabaseKind("mysql", "pier/addon-mysql:11", ADDON_PORTS.mysql);

export const mysqlProvider = (servers: AddonServers) => new ContainerAddons(MYSQL, servers);
