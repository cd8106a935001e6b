// The AddonProvider suite (test/conformance/addon-provider.ts) in the unit run: the real providers of every
// kind over the one fake engine, whose add-on servers play the images' entrypoint and protocol
// (test/support/fake-addon-servers.ts). The same providers pass it on the real engine
// (test/e2e/addon-providers.test.ts).
import { addonProviders } from "../../../src/adapters/addons/providers.js";
import { LABEL } from "../../../src/core/labels.js";
import { type AddonClient, addonProviderConformance } from "../../conformance/addon-provider.js";
import { withAddonImages } from "../../support/addon-images.js";
import { FakeEngine } from "../../support/fake-engine.js";

const engine = new FakeEngine();
withAddonImages(engine);
const played = engine.addonServers;

/** An fs bucket is reached by its mount (an instance's files: its data's keys), not over a network. */
const bucket = (host: string) => {
  const keys = played.bucket(host.replace(/^pier-addon-/, ""));
  return keys && played.servers.has(host.replace(/^pier-addon-/, "")) ? keys : null;
};
const missing = { code: 1, stdout: "", stderr: "cat: /bucket/value: No such file or directory" };

const clients: AddonClient = {
  write: async (kind, network, host, c, value) => {
    const keys = kind === "fs" ? bucket(host) : null;
    if (keys) keys.set("value", value);
    if (kind === "fs") return keys ? { code: 0, stdout: "", stderr: "" } : missing;
    return played.client(network, host, c.password, (k) => {
      k.set("k", value);
      return "OK";
    });
  },
  read: async (kind, network, host, c) => {
    if (kind === "fs") {
      const v = bucket(host)?.get("value");
      return v === undefined ? missing : { code: 0, stdout: v, stderr: "" };
    }
    return played.client(network, host, c.password, (keys) => keys.get("k") ?? "");
  },
  holding: (_kind, _network, _host, _c, work) => work(),
};

addonProviderConformance("the fake engine", {
  providers: Object.values(addonProviders(engine)),
  servers: engine,
  client: clients,
  async network(tag) {
    await engine.ensureNetwork(tag, { [LABEL.network]: tag }, { ipv4: null, ipv6: null });
    return tag;
  },
  lose: async (id) => played.lose(id),
  dataLeft: async (id) => (played.data.has(id) ? [id] : []),
  cleanUp: async () => undefined,
});
