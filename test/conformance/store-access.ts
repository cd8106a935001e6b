/** The Store's contract for SSH keys with their grants, and API tokens (part of test/conformance/store.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { codeOf, newApp, type StoreFactory, withStore } from "./store.js";

const key = (i: number) => ({
  id: `key-${i}`,
  name: `k${i}`,
  fingerprint: `SHA256:fp${i}`,
  algo: "ssh-ed25519",
  blob: `blob${i}`,
});
let n = 0;
const token = (name: string, o: { appId?: string | null; bootstrap?: boolean; hash?: string } = {}) => ({
  id: `tok-${name}-${++n}`,
  name,
  hash: o.hash ?? `hash-${name}`,
  appId: o.appId ?? null,
  readOnly: false,
  bootstrap: o.bootstrap ?? false,
});

export function accessConformance(factory: StoreFactory): void {
  describe("SSH keys and tokens", () => {
    it(
      "an admin key: found by id, fingerprint, name or blob; listed; deleted",
      withStore(factory, async ({ store }) => {
        const k = await store.addSshKey({ ...key(1), readOnly: true });
        assert.deepEqual(
          { ...k, createdAt: "" },
          { ...key(1), readOnly: true, global: true, apps: [], createdAt: "" },
        );
        for (const ref of ["key-1", "SHA256:fp1", "k1"])
          assert.deepEqual(await store.findSshKey(ref), k, ref);
        assert.deepEqual(await store.findSshKeyByBlob("ssh-ed25519", "blob1"), k);
        assert.equal(await store.findSshKeyByBlob("ssh-rsa", "blob1"), null);
        await store.addSshKey({ ...key(2), readOnly: false });
        assert.deepEqual(
          (await store.listSshKeys()).map((x) => x.id),
          ["key-1", "key-2"],
        );
        await store.deleteSshKey("key-1");
        assert.equal(await store.findSshKey("key-1"), null);
        assert.equal(
          await codeOf(store.addSshKey({ ...key(2), id: "key-x", readOnly: false })),
          "SSH_KEY_EXISTS",
        );
      }),
    );

    it(
      "grants: one key on several apps, each push or fetch; a second grant changes it; removal",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.createApp(newApp("lib"));
        const first = await store.grantSshKey(key(1), "app-web", false);
        assert.equal(first.created, true);
        assert.deepEqual(first.key.apps, [{ id: "app-web", name: "web", readOnly: false }]);
        assert.equal(first.key.global, false);
        await store.grantSshKey({ ...key(1), id: "key-ignored" }, "app-lib", true);
        const again = await store.grantSshKey(key(1), "app-web", true);
        assert.equal(again.created, false);
        const all = await store.listSshKeys();
        assert.equal(all.length, 1, "one key, two grants");
        assert.deepEqual(all[0]?.apps, [
          { id: "app-lib", name: "lib", readOnly: true },
          { id: "app-web", name: "web", readOnly: true },
        ]);
        assert.deepEqual((await store.listSshKeys("app-lib"))[0]?.apps, [
          { id: "app-lib", name: "lib", readOnly: true },
        ]);
        assert.equal(await store.revokeSshKeyGrant("key-1", "app-lib"), true);
        assert.equal(await store.revokeSshKeyGrant("key-1", "app-lib"), false);
        assert.ok(await store.findSshKey("key-1"), "still granted on web");
        await store.grantSshKey(key(4), "app-web", false);
        await store.grantSshKey(key(4), "app-lib", false);
        await store.deleteApp("app-web");
        assert.equal(await store.findSshKey("key-1"), null, "a key whose only app is gone goes too");
        assert.deepEqual((await store.findSshKey("key-4"))?.apps, [
          { id: "app-lib", name: "lib", readOnly: false },
        ]);
        assert.equal(await store.revokeSshKeyGrant("key-4", "app-lib"), true);
        assert.equal(await store.findSshKey("key-4"), null, "a key left with no grant is removed");
      }),
    );

    it(
      "an admin key cannot be granted on an app (CONFLICT), nor a granted key added as admin (SSH_KEY_EXISTS)",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.addSshKey({ ...key(2), readOnly: false });
        assert.equal(await codeOf(store.grantSshKey(key(2), "app-web", false)), "CONFLICT");
        await store.grantSshKey(key(3), "app-web", false);
        assert.equal(await codeOf(store.addSshKey({ ...key(3), readOnly: false })), "SSH_KEY_EXISTS");
        assert.equal((await store.findSshKey("key-3"))?.global, false, "the granted key as it was");
      }),
    );

    it(
      "tokens: unique names, scoped to an app and gone with it, revoked by name, one bootstrap kept",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.addApiToken(token("admin", { bootstrap: true, hash: "boot-1" }));
        await store.addApiToken(token("admin", { bootstrap: true, hash: "boot-2" }));
        const ci = await store.addApiToken(token("ci", { appId: "app-web" }));
        assert.deepEqual(ci.app, { id: "app-web", name: "web" });
        assert.equal(await codeOf(store.addApiToken(token("ci"))), "CONFLICT");
        await store.addApiToken(token("ops"));
        assert.deepEqual(
          (await store.listApiTokens()).map((t) => [t.name, t.bootstrap]),
          [
            ["admin", true],
            ["admin", true],
            ["ci", false],
            ["ops", false],
          ],
          "bootstrap tokens first",
        );
        assert.equal(await store.pruneBootstrapTokens("boot-2"), 1);
        assert.equal(await store.findApiTokenByHash("boot-1"), null);
        assert.ok(await store.findApiTokenByHash("boot-2"));
        assert.equal(
          await store.deleteApiToken("admin"),
          false,
          "the bootstrap token is not revoked by name",
        );
        assert.equal(await store.deleteApiToken("ops"), true);
        assert.equal(await store.deleteApiToken("ops"), false);
        assert.equal(await store.findApiTokenByHash("hash-ops"), null);
        await store.deleteApp("app-web");
        assert.equal(await store.findApiTokenByHash("hash-ci"), null, "an app's tokens go with it");
        assert.deepEqual(
          (await store.listApiTokens()).map((t) => t.name),
          ["admin"],
        );
      }),
    );
  });
}
