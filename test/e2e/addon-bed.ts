// What the add-on e2e files run providers on (addon-providers, addon-mysql): the Docker adapter in a scope
// of their own, a store, and networks of Pier's pool. Pier's isolation rules (ADR 0019) are not what those
// files test (test/e2e/isolation-window.test.ts does), so none are added.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerEngine } from "../../src/adapters/engine/docker.js";
import { SecretBox } from "../../src/adapters/secret-box.js";
import { SqliteStore } from "../../src/adapters/store/sqlite.js";
import { type Cidr, DEFAULT_SUBNET_POOL, parseCidr } from "../../src/core/subnets.js";
import { Networks } from "../../src/server/networks.js";

export function addonTestBed(name: string) {
  const scope = `test-${randomBytes(4).toString("hex")}`;
  const work = mkdtempSync(join(tmpdir(), `pier-${name}-`));
  const store = new SqliteStore(join(work, "pier.db"), SecretBox.fromFile(join(work, "secret.key")));
  const engine = new DockerEngine({
    socketPath: "/var/run/docker.sock",
    scope,
    sandboxImage: "pier/base:bookworm",
  });
  const networks = new Networks({
    engine,
    store,
    pool: parseCidr(DEFAULT_SUBNET_POOL) as Cidr,
    prefix: 26,
    isolation: { add: async () => undefined, remove: async () => undefined },
  });
  return {
    scope,
    work,
    engine,
    /** A network of the pool for the test (`pier-test-<scope>-<tag>`), removed by cleanUp. */
    async network(tag: string): Promise<string> {
      const network = `pier-test-${scope}-${tag}`;
      await networks.ensure(network, `test-${tag}`, null, { "pier.test": scope });
      return network;
    },
    async cleanUp(): Promise<void> {
      await engine.removeNetworks({ "pier.test": scope }).then((gone) => store.releaseSubnets(gone));
      store.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
