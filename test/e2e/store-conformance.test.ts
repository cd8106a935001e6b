// The Store conformance suite (test/conformance/store.ts) on the real SQLite store, in the end-to-end run
// too: the adapter `pier server` uses, on a database file of its own (the unit run also holds it, beside the
// in-memory store's).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SecretBox } from "../../src/adapters/secret-box.js";
import { SqliteStore } from "../../src/adapters/store/sqlite.js";
import { storeConformance } from "../conformance/store.js";

storeConformance("SQLite (end-to-end run)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-e2e-store-"));
  const store = new SqliteStore(join(dir, "pier.db"), SecretBox.fromFile(join(dir, "secret.key")));
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
