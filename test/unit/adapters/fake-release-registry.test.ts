// The ReleaseRegistry fake passes the suite the Docker adapter passes on the lab.

import { releaseRegistryConformance } from "../../conformance/release-registry.js";
import { FakeReleaseRegistry } from "../../support/fake-release-registry.js";

releaseRegistryConformance("the in-memory fake", async () => {
  const registry = new FakeReleaseRegistry();
  registry.addLocal("pier-app/registry-test:d1", "busybox");
  registry.addLocal("pier-app/registry-test:d3", "busybox");
  registry.addLocal("pier-app/registry-test:d2", "busybox, imported again");
  return {
    registry,
    wrongPassword: registry.refusing(),
    password: "the-password",
    image: "pier-app/registry-test:d1",
    twin: "pier-app/registry-test:d3",
    other: "pier-app/registry-test:d2",
    pullElsewhere: async (ref) => {
      if (!registry.pullable(ref)) throw new Error(`manifest unknown: ${ref}`);
    },
    cleanUp: async () => {},
  };
});
