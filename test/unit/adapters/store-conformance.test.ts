// The Store conformance suite (test/conformance/store.ts) on its two implementations: the SQLite store on a
// temporary folder, and the in-memory store the unit tests use (test/support/memory-store.ts).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { storeConformance } from "../../conformance/store.js";
import { MemoryStore } from "../../support/memory-store.js";

storeConformance("SQLite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-store-conformance-"));
  const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromKey(randomBytes(32)));
  return {
    store,
    addons: store.addons(),
    domains: store.domains(),
    close: () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

storeConformance("in memory", async () => {
  const store = new MemoryStore();
  return { store, addons: store.addons(), domains: store.domains(), close: () => store.close() };
});
