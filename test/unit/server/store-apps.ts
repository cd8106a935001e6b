import type { AppStore } from "../../../src/core/ports.js";

/** A Node.js app named `name` (id `app-<name>`), created in any store (SQLite or in memory) as the API would. */
export const storeApp = (store: AppStore, name: string) =>
  store.createApp({
    id: `app-${name}`,
    name,
    type: "node",
    flavor: "nano",
    buildFlavor: "M",
    instances: 1,
    task: null,
  });
