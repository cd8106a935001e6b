import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { planVendor, type VendorPlan } from "../../../src/core/plan-php-vendor.js";
import {
  releaseVolume,
  unnamedVolumes,
  VOLUME_LABEL,
  volumeLabel,
} from "../../../src/core/release-volumes.js";

type Input = Parameters<typeof planVendor>[0];
const composer: Input["composer"] = {
  install: "composer install",
  dumpAutoload: null,
  devDependencies: false,
};
const dumping: Input["composer"] = {
  ...composer,
  dumpAutoload: "composer dump-autoload --no-interaction --no-dev",
};

describe("planVendor: where a release's vendor/ lives", () => {
  const base: Input = {
    composer,
    vendor: "missing",
    depsKey: "k1",
    withoutCache: false,
    previous: { depsKey: "k1", volume: "pier-vendor-app-dep1" },
    volumes: ["pier-vendor-app-dep1"],
    newVolume: "pier-vendor-app-dep2",
    instancesShareVolumes: true,
  };
  const cases: [string, Partial<Input>, VendorPlan][] = [
    ["unchanged key, volume there: the same volume", {}, { kind: "shared", volume: "pier-vendor-app-dep1" }],
    [
      "unchanged key, the autoloader lists the project's classes: a copy, then the dump",
      { composer: dumping },
      { kind: "copy", volume: "pier-vendor-app-dep2", from: "pier-vendor-app-dep1" },
    ],
    ["a changed lock: a new volume", { depsKey: "k2" }, { kind: "install", volume: "pier-vendor-app-dep2" }],
    [
      "no lock (no key): a new volume",
      { depsKey: null },
      { kind: "install", volume: "pier-vendor-app-dep2" },
    ],
    [
      "without cache: a new volume",
      { withoutCache: true },
      { kind: "install", volume: "pier-vendor-app-dep2" },
    ],
    ["no current release", { previous: null }, { kind: "install", volume: "pier-vendor-app-dep2" }],
    [
      "the current release's image holds its vendor/ (made before release volumes)",
      { previous: { depsKey: "k1", volume: null } },
      { kind: "install", volume: "pier-vendor-app-dep2" },
    ],
    ["its volume is gone", { volumes: [] }, { kind: "install", volume: "pier-vendor-app-dep2" }],
    ["vendor/ committed: in the image", { vendor: "dir" }, { kind: "image" }],
    ["no composer.json: nothing to keep", { composer: null }, { kind: "image" }],
    [
      "a swarm (instances on any node): composer installs into the image, the volume not reused",
      { instancesShareVolumes: false },
      { kind: "image" },
    ],
    [
      "a swarm, a changed lock: into the image",
      { instancesShareVolumes: false, depsKey: "k2", composer: dumping },
      { kind: "image" },
    ],
    [
      "a swarm, no current release: into the image",
      { instancesShareVolumes: false, previous: null },
      { kind: "image" },
    ],
  ];
  for (const [name, over, want] of cases) {
    it(name, () => {
      assert.deepEqual(planVendor({ ...base, ...over }), want);
    });
  }
});

describe("release volume labels", () => {
  it("round-trips and refuses a malformed label", () => {
    assert.deepEqual(releaseVolume({ [VOLUME_LABEL]: volumeLabel("v1", "/app/vendor") }), {
      name: "v1",
      target: "/app/vendor",
    });
    assert.equal(releaseVolume({}), null);
    assert.equal(releaseVolume({ [VOLUME_LABEL]: "v1" }), null);
    assert.equal(releaseVolume({ [VOLUME_LABEL]: "v1:relative" }), null);
    assert.equal(releaseVolume({ [VOLUME_LABEL]: ":/app/vendor" }), null);
  });

  it("unnamedVolumes: those no image names and not the running deployment's", () => {
    const vol = (name: string, dep: string) => ({ name, deploymentId: dep });
    const volumes = [vol("a", "d1"), vol("b", "d2"), vol("c", "d3"), vol("d", "d4")];
    const images: Record<string, string>[] = [
      { [VOLUME_LABEL]: "b:/app/vendor" },
      {},
      { [VOLUME_LABEL]: "a:/app/vendor" },
    ];
    assert.deepEqual(unnamedVolumes(volumes, images, "d4"), ["c"]);
    assert.deepEqual(unnamedVolumes(volumes, images, null), ["c", "d"]);
    assert.deepEqual(unnamedVolumes(volumes, [], null), ["a", "b", "c", "d"]);
  });
});
