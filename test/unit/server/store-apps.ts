import type { SqliteStore } from "../../../src/adapters/store/sqlite.js";

/** A Node.js app named `name` (id `app-<name>`), created in the store as the API would. */
export const storeApp = (store: SqliteStore, name: string) =>
  store.createApp({
    id: `app-${name}`,
    name,
    type: "node",
    flavor: "nano",
    buildFlavor: "M",
    instances: 1,
    task: null,
  });
