// The Nodes fake keeps the port's contract (test/conformance/nodes.ts), as the Swarm adapter does on the lab.
import { nodesConformance } from "../../conformance/nodes.js";
import { FakeNodes } from "../../support/fake-nodes.js";

nodesConformance("the fake", async () => ({
  nodes: new FakeNodes(),
  worker: "node2",
  cleanUp: async () => undefined,
}));
