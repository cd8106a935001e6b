// PIER_ENGINE=swarm end to end on the lab's three nodes (ADR 0030): `pier server` on the manager builds a
// Node.js app pushed with git on the manager's dockerd, pushes its release image by digest to the lab's
// registry, runs its instance as a swarm service on the app's overlay, and the health gate passes it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, Pier } from "../e2e/harness.js";
import { copyImages, docker, type LabInfo, lab, labUp, swarmSettings } from "./lab.js";

interface InstanceJson {
  number: number;
  state: string;
  address: string | null;
}

describe("PIER_ENGINE=swarm: git push deploys onto the swarm", { timeout: 900_000 }, () => {
  let info: LabInfo;
  let pier: Pier;

  before(async () => {
    await lab("down");
    info = await labUp(3);
    // What scripts/setup.sh builds where Pier runs: the manager builds with them.
    await copyImages(info, "node1", ["pier/base:bookworm", "pier/node:22"]);
    pier = new Pier({ ...swarmSettings(info), PIER_ISOLATION: "off" });
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier?.destroy();
    await lab("down");
  });

  test("a Node.js app is built on the manager, published by digest, run as a service and gated", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    const set = await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    const repo = await pier.repo("web", NODE_DOCKER_APP, app.id);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Response from GET \/health is 200/);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);

    // The instance is a service of the manager, its image the release's digest in the lab's registry.
    const images = await docker(info, "node1", [
      "service",
      "ls",
      "--filter",
      `label=pier.app=${app.id}`,
      "--format",
      "{{.Image}}",
    ]);
    assert.match(
      images,
      new RegExp(`^${info.registry.address.replace(/\./g, "\\.")}/\\S+@sha256:[0-9a-f]{64}$`),
    );
    const status = await pier.cliJson<{ instances: InstanceJson[] }>([
      "status",
      "--app",
      "web",
      "--format",
      "json",
    ]);
    assert.deepEqual(
      status.instances.map((i) => `${i.number} ${i.state}`),
      ["1 running"],
    );
    // Its one task runs on a node of the swarm.
    const service = await docker(info, "node1", [
      "service",
      "ls",
      "-q",
      "--filter",
      `label=pier.app=${app.id}`,
    ]);
    const nodes = await docker(info, "node1", [
      "service",
      "ps",
      "--filter",
      "desired-state=running",
      "--format",
      "{{.Node}}",
      service,
    ]);
    assert.match(nodes, /^node[123]$/);
  });
});
