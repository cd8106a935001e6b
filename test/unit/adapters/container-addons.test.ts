// What the add-on provider does when the engine's server or command fails (ContainerAddons over the fake
// engine): a server that exits before it answers is named with its exit code, and a backup that fails
// leaves no file behind, not even a partial one.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { KV, kvProvider } from "../../../src/adapters/addons/kv.js";
import type { AddonSpec } from "../../../src/core/ports.js";
import { FakeEngine } from "../../support/fake-engine.js";

const dir = mkdtempSync(join(tmpdir(), "pier-container-addons-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function setup() {
  const engine = new FakeEngine();
  engine.addImage(KV.image);
  await engine.ensureNetwork("adn-net", {}, { ipv4: null, ipv6: null });
  const kv = kvProvider(engine);
  const spec: AddonSpec = {
    id: "adn-one",
    name: "cache",
    flavor: "nano",
    memoryBytes: 64 * 2 ** 20,
    credentials: kv.credentials("cache"),
    network: "adn-net",
  };
  return { engine, kv, spec };
}

describe("ContainerAddons when the engine fails", () => {
  it("a server that exits before it answers: provision rejects naming the kind and the exit code", async () => {
    const { engine, kv, spec } = await setup();
    engine.addonServers.exitAtStart.set(KV.image, 3);
    await assert.rejects(kv.provision(spec), /The kv add-on's server exited with code 3/);
    assert.equal((await kv.status(spec.id)).state, "stopped");
  });

  it("a backup whose command fails leaves neither the file nor a partial one", async () => {
    const { engine, kv, spec } = await setup();
    await kv.provision(spec);
    engine.before.execInAddonServer = (_id, argv) => {
      if (argv[1] === "backup") throw new Error("the engine lost the exec");
    };
    const file = join(dir, "one.backup");
    await assert.rejects(kv.backup(spec.id, file), /the engine lost the exec/);
    assert.equal(existsSync(file), false);
    assert.deepEqual(readdirSync(dir), []);
  });

  it("an image the engine does not have: the add-on is not made and the image is named", async () => {
    const { engine, kv, spec } = await setup();
    engine.images.delete(KV.image);
    await assert.rejects(kv.provision(spec), /pier\/addon-kv:8/);
    assert.equal((await kv.status(spec.id)).state, "missing");
  });
});
