import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { ContainerAddons } from "./container.js";
import { sqlDatabaseKind } from "./sql-database.js";

/**
 * postgresql: PostgreSQL 17 from Debian trixie (ADR 0015), one database and one user (not a superuser)
 * with a generated password, scram-sha-256 on the network. Backups are `pg_dump -Fc`; a restore goes into
 * a new database in one transaction and replaces the add-on's database only once it succeeded.
 */
export const POSTGRESQL = sqlDatabaseKind("postgresql", "pier/addon-postgresql:17", ADDON_PORTS.postgresql);

export const postgresqlProvider = (servers: AddonServers) => new ContainerAddons(POSTGRESQL, servers);
