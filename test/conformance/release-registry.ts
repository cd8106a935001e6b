// The ReleaseRegistry port's conformance suite (ADR 0030): the Docker adapter passes it on the swarm lab
// (test/e2e-swarm/registry.test.ts). No fake yet: nothing in the server uses the port until the Swarm
// instance driver lands.
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
  /** Pulls a reference on another node of the engine (what a task's start does there). */
  pullElsewhere(ref: string): Promise<void>;
  cleanUp(): Promise<void>;
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
  });
}
