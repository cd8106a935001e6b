// The ReleaseRegistry port's conformance suite (ADR 0030): the Docker adapter passes it on the swarm lab
// (test/e2e-swarm/registry.test.ts), the fake (test/support/fake-release-registry.ts) in the unit tests.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { ReleaseRegistry } from "../../src/core/ports.js";

export interface RegistryBed {
  registry: ReleaseRegistry;
  /** The same registry with a wrong password. */
  wrongPassword: ReleaseRegistry;
  /** The password `registry` uses: no error may show it. */
  password: string;
  /** A local image (`repo:tag`) of the engine the registry pushes from. */
  image: string;
  /** Another tag of `image`'s repository, the same content (an identical rebuild: the same digest). */
  twin: string;
  /** Another tag of `image`'s repository, other content (another digest). */
  other: string;
  /** Pulls a reference on another node of the engine (what a task's start does there). */
  pullElsewhere(ref: string): Promise<void>;
  /** Where the registry uses token auth (distribution's `auth: token:`): its token service, to break. */
  tokenService?: TokenServiceBed;
  cleanUp(): Promise<void>;
}

export interface TokenServiceBed {
  /** The token service stops answering, until started again. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** The registry as `registry` is, new (no token kept from earlier calls). */
  fresh(): ReleaseRegistry;
  /** The registry as an account the token service grants pull and push, not delete. */
  withoutDelete(): ReleaseRegistry;
}

/** An ENGINE_ERROR naming the registry, matching `why`, never showing `password`. */
function registryError(address: string, password: string, why: RegExp) {
  return (e: Error & { code?: string; hint?: string }) => {
    assert.equal(e.code, "ENGINE_ERROR", e.message);
    assert.match(e.message, new RegExp(`registry ${address.replaceAll(".", "\\.")}`));
    assert.match(e.message, why);
    assert.ok(!`${e.message} ${e.hint}`.includes(password));
    return true;
  };
}

export function releaseRegistryConformance(name: string, make: () => Promise<RegistryBed>): void {
  describe(`ReleaseRegistry conformance: ${name}`, { timeout: 180_000 }, () => {
    let bed: RegistryBed;
    before(async () => {
      bed = await make();
    });
    after(async () => {
      await bed.cleanUp();
    });

    test("a release image is published by digest, pulled elsewhere by it, and publishing it again changes nothing", async () => {
      const repo = bed.image.slice(0, bed.image.lastIndexOf(":"));
      const ref = await bed.registry.publish(bed.image);
      assert.match(
        ref,
        new RegExp(`^${bed.registry.address.replaceAll(".", "\\.")}/${repo}@sha256:[0-9a-f]{64}$`),
      );
      await bed.pullElsewhere(ref);
      assert.equal(await bed.registry.publish(bed.image), ref);
    });

    test("an image that is not there: NOT_FOUND naming it", async () => {
      await assert.rejects(
        bed.registry.publish("pier-app/no-such-app:nope"),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "NOT_FOUND");
          assert.match(e.message, /pier-app\/no-such-app:nope/);
          return true;
        },
      );
    });

    test("forgotten images no longer pull; one a kept image resolves to (an identical rebuild) still does", async () => {
      const repo = bed.image.slice(0, bed.image.lastIndexOf(":"));
      const ref = await bed.registry.publish(bed.image);
      assert.equal(await bed.registry.publish(bed.twin), ref, "an identical image: one digest");
      const other = await bed.registry.publish(bed.other);
      assert.notEqual(other, ref);
      // Only the twin is kept: the image's own tag is forgotten, but not the manifest the twin resolves to.
      // What it forgot: the other image's reference, as publish gave it (what a node pulled).
      assert.deepEqual(await bed.registry.forget(repo, [bed.twin]), [other]);
      await assert.rejects(bed.pullElsewhere(other));
      await bed.pullElsewhere(ref);
      // Again, or a repository never published: nothing to do.
      assert.deepEqual(await bed.registry.forget(repo, [bed.twin]), []);
      assert.deepEqual(await bed.registry.forget(`${repo}-never-published`, []), []);
      // A forgotten image published again pulls again.
      assert.equal(await bed.registry.publish(bed.other), other);
      await bed.pullElsewhere(other);
    });

    test("a registry that refuses a forget: ENGINE_ERROR naming the registry, never the password", async () => {
      const repo = bed.image.slice(0, bed.image.lastIndexOf(":"));
      await assert.rejects(
        bed.wrongPassword.forget(repo, []),
        (e: Error & { code?: string; hint?: string }) => {
          assert.equal(e.code, "ENGINE_ERROR");
          assert.match(e.message, new RegExp(`registry ${bed.registry.address.replaceAll(".", "\\.")}`));
          assert.match(e.message, /unauthorized|401/i);
          assert.ok(!`${e.message} ${e.hint}`.includes(bed.password));
          return true;
        },
      );
      await bed.pullElsewhere(await bed.registry.publish(bed.image));
    });

    test("a registry that refuses the password: ENGINE_ERROR naming the registry, never the password", async () => {
      await assert.rejects(
        bed.wrongPassword.publish(bed.image),
        (e: Error & { code?: string; hint?: string }) => {
          assert.equal(e.code, "ENGINE_ERROR");
          assert.match(
            e.message,
            new RegExp(
              `pushed to the registry ${bed.registry.address.replaceAll(".", "\\.")}: .*unauthorized`,
              "i",
            ),
          );
          assert.ok(!`${e.message} ${e.hint}`.includes(bed.password));
          return true;
        },
      );
    });

    // (A push meanwhile fails too, with the engine's message, after its retries: ~50 s, not worth CI's time.)
    test("a token service that is down: a forget's and a push's ENGINE_ERROR name the registry and its token service; back, all works again", async (t) => {
      const ts = bed.tokenService;
      if (!ts) return t.skip("this registry uses no token service");
      const repo = bed.image.slice(0, bed.image.lastIndexOf(":"));
      await ts.stop();
      try {
        const why = /token service .*did not answer/;
        await assert.rejects(
          ts.fresh().forget(`${repo}-never-published`, []),
          registryError(bed.registry.address, bed.password, why),
        );
        // A push: the engine cannot get its token either (it tries for a while, then gives up).
        await assert.rejects(
          ts.fresh().publish(bed.other),
          registryError(bed.registry.address, bed.password, /could not be pushed.*token service/),
        );
      } finally {
        await ts.start();
      }
      assert.deepEqual(await ts.fresh().forget(`${repo}-never-published`, []), []);
      await bed.pullElsewhere(await ts.fresh().publish(bed.image));
    });

    test("an account the token service grants no delete: publishes, but its forget is refused saying so, and nothing goes", async (t) => {
      const ts = bed.tokenService;
      if (!ts) return t.skip("this registry uses no token service");
      const repo = bed.image.slice(0, bed.image.lastIndexOf(":"));
      const limited = ts.withoutDelete();
      const ref = await limited.publish(bed.image);
      const other = await limited.publish(bed.other);
      await assert.rejects(
        limited.forget(repo, [bed.image]),
        registryError(bed.registry.address, bed.password, /could not delete .*delete.*insufficient_scope/),
      );
      await bed.pullElsewhere(other);
      await bed.pullElsewhere(ref);
    });
  });
}
