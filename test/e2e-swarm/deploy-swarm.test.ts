// PIER_ENGINE=swarm end to end on the lab's three nodes (ADR 0030): `pier server` on the manager builds a
// Node.js app pushed with git on the manager's dockerd, pushes its release image by digest to the lab's
// registry, runs its instance as a swarm service on the app's overlay; the health gate and the edge reach it
// from the edge's sandbox on the manager, which joined the overlay.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { docker, type LabInfo, swarmPier, swarmPierDown } from "./lab.js";

describe("PIER_ENGINE=swarm: git push deploys onto the swarm", { timeout: 900_000 }, () => {
  let info: LabInfo;
  let pier: Pier;

  before(async () => {
    ({ info, pier } = await swarmPier({ images: ["pier/base:bookworm", "pier/node:22"] }));
  });
  after(() => swarmPierDown(pier));

  let app: { id: string };
  let push: { code: number; stderr: string };

  test("a Node.js app is built on the manager, published to the registry by digest and run on the swarm", async () => {
    app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    const set = await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    push = await pier.push(await pier.repo("web", NODE_DOCKER_APP, app.id));
    assert.match(push.stderr, /remote: Built pier-app\/app-[0-9a-f]+:dep-[0-9a-f]+\./);
    // Its address is the task's on the app's overlay (Pier's subnet pool), its output came from its node.
    assert.match(push.stderr, /remote: Instance 0 started \(pier-web-\S+, 10\.210\.\d+\.\d+:8080\)/);
    // The release went to the registry by digest, and a worker pulls it from there.
    const published = await docker(info, "node1", [
      "image",
      "ls",
      "--digests",
      "--format",
      "{{.Repository}}@{{.Digest}}",
      `${info.registry.address}/pier-app/${app.id}`,
    ]);
    assert.match(published, /^\S+@sha256:[0-9a-f]{64}$/);
    await docker(info, "node2", ["pull", "-q", published]);
  });

  test("the health gate reaches the new instance and the edge serves it", async () => {
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Response from GET \/health is 200/);
    assert.match(push.stderr, /remote: .*Deployment succeeded/);
    const services = await docker(info, "node1", [
      "service",
      "ls",
      "--filter",
      `label=pier.app=${app.id}`,
      "--format",
      "{{.Image}}",
    ]);
    assert.match(services, /@sha256:[0-9a-f]{64}$/);
    const r = await pier.get("web", "/health");
    assert.equal(r.status, 200);
    // The instance's output, from whichever node its task runs on.
    const lines = await pier.cliJson<{ line: string }[]>(["logs", "--since", "1h", "--app", "web"]);
    assert.ok(
      lines.some((l) => l.line.includes("listening on 8080")),
      JSON.stringify(lines).slice(0, 500),
    );
  });

  test("the swarm runs the deployment's instance only if it passed its gate", async () => {
    const services = await docker(info, "node1", [
      "service",
      "ls",
      "-q",
      "--filter",
      `label=pier.app=${app.id}`,
    ]);
    assert.equal(services.split("\n").filter(Boolean).length, push.code === 0 ? 1 : 0, push.stderr);
  });
});
