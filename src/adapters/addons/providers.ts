import type { AddonKind } from "../../core/addons.js";
import type { AddonProvider, AddonServers } from "../../core/ports.js";
import { type AddonKindDefinition, ContainerAddons } from "./container.js";
import { FS } from "./fs.js";
import { KV } from "./kv.js";
import { MYSQL } from "./mysql.js";
import { POSTGRESQL } from "./postgresql.js";

/** Every kind of add-on Pier serves (a kind missing here does not compile): a new kind is one file and one line. */
export const ADDON_DEFINITIONS: Record<AddonKind, AddonKindDefinition> = {
  kv: KV,
  postgresql: POSTGRESQL,
  mysql: MYSQL,
  fs: FS,
};

/** A provider of each kind over the engine's add-on servers. */
export function addonProviders(servers: AddonServers): Record<AddonKind, AddonProvider> {
  const providers = {} as Record<AddonKind, AddonProvider>;
  for (const [kind, def] of Object.entries(ADDON_DEFINITIONS) as [AddonKind, AddonKindDefinition][])
    providers[kind] = new ContainerAddons(def, servers);
  return providers;
}
