// The unit tests' one engine (test/support/fake-engine.ts) keeps the engine ports' contract: the same
// suite the Docker adapter passes end to end (test/e2e/engine-conformance.test.ts).
import { engineConformance } from "../../conformance/engine.js";
import { FakeEngine } from "../../support/fake-engine.js";

engineConformance("the in-memory fake", async () => {
  const engine = new FakeEngine();
  const image = "pier/base:bookworm";
  engine.addImage(image);
  return { engine, image, prefix: "conformance", cleanUp: async () => undefined };
});
