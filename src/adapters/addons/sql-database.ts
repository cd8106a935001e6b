import type { AddonKind } from "../../core/addons.js";
import { type AddonKindDefinition, newSecret } from "./container.js";

/** A database identifier from an add-on name (a DNS label): `my-db` -> `my_db`, at most 48 characters. */
const ident = (name: string) => name.replace(/-/g, "_").slice(0, 48);

/**
 * A SQL database kind (postgresql, mysql): one database named for the add-on and one user `u_<name>` that
 * owns it, with a generated password; its entrypoint reads them and the flavor's memory from the
 * environment, and restores live (`pier-addon restore FILE`, all or nothing, no restart).
 */
export const sqlDatabaseKind = (kind: AddonKind, image: string, port: number): AddonKindDefinition => ({
  kind,
  image,
  port,
  credentials: (name) => ({ user: `u_${ident(name)}`, password: newSecret(), database: ident(name) }),
  env: (s) => ({
    PIER_ADDON_USER: s.credentials.user,
    PIER_ADDON_PASSWORD: s.credentials.password,
    PIER_ADDON_DB: s.credentials.database,
    PIER_ADDON_MEMORY_MB: String(Math.floor(s.memoryBytes / 2 ** 20)),
  }),
  restore: { argv: (file) => ["pier-addon", "restore", file], restart: false },
});
