import { ADDON_DEFINITIONS } from "../../src/adapters/addons/providers.js";
import type { FakeEngine } from "./fake-engine.js";

/** The fake engine with every add-on kind's image, as scripts/setup.sh leaves the real one. */
export function withAddonImages(engine: FakeEngine): FakeEngine {
  for (const def of Object.values(ADDON_DEFINITIONS)) engine.addImage(def.image);
  return engine;
}
