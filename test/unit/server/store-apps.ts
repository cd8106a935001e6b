import type { AppStore } from "../../../src/core/ports.js";
import { newApp } from "../../conformance/store.js";

/** A Node.js app named `name` (id `app-<name>`), created in any store (SQLite or in memory) as the API would. */
export const storeApp = (store: AppStore, name: string) => store.createApp(newApp(name));
