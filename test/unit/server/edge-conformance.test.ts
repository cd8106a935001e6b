// The Edge conformance suite (test/conformance/edge.ts) on the fake edge the unit tests use; the HAProxy
// edge passes the same suite in test/e2e/edge-conformance.test.ts.
import { edgePem } from "../../../src/core/domains.js";
import { edgeConformance } from "../../conformance/edge.js";
import { FakeEdge, FakeTls } from "../../support/fake-edge.js";
import { LEAF, LEAF_KEY } from "../core/tls-fixtures.js";

edgeConformance(
  "fake",
  async () => {
    const tls = new FakeTls();
    const edge = new FakeEdge({ tls, httpsPort: 8443 });
    return {
      edge,
      tls,
      get: (host, path) => edge.get(host, path),
      httpsPort: 8443,
      close: () => edge.stop(),
    };
  },
  { name: "shop.example.test", pem: edgePem({ certPem: LEAF, keyPem: LEAF_KEY }) },
);
