// The Edge conformance suite (test/conformance/edge.ts) on Pier's real HAProxy edge: its own HAProxy per
// test, on free loopback ports, with an HTTPS side (HaproxyTls). The unit run holds the same suite on the
// fake edge (test/unit/server/edge-conformance.test.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HaproxyEdge } from "../../src/adapters/edge/haproxy.js";
import { HaproxyTls } from "../../src/adapters/edge/haproxy-tls.js";
import { edgePem } from "../../src/core/domains.js";
import { edgeConformance } from "../conformance/edge.js";
import { LEAF, LEAF_KEY } from "../unit/core/tls-fixtures.js";
import { freePort, httpGet } from "./harness.js";

edgeConformance(
  "HAProxy",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "pier-edge-conformance-"));
    const port = await freePort();
    const httpsPort = await freePort();
    const edge = new HaproxyEdge({
      dir: join(dir, "edge"),
      listenHost: "127.0.0.1",
      listenPort: port,
      https: { host: "127.0.0.1", port: httpsPort },
    });
    return {
      edge,
      tls: new HaproxyTls(edge),
      get: (host, path) => httpGet(port, host, path),
      httpsPort,
      close: async () => {
        await edge.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { name: "shop.example.test", pem: edgePem({ certPem: LEAF, keyPem: LEAF_KEY }) },
);
