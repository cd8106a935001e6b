// The release registry's Docker adapter on the swarm lab (ADR 0030): the manager pushes a release image to
// the lab's registry (TLS from the lab's CA, htpasswd) and a worker pulls it by digest; what is forgotten
// no longer pulls.
import { readFileSync } from "node:fs";
import Docker from "dockerode";
import { DockerRegistryPush } from "../../src/adapters/engine/registry-push.js";
import { releaseRegistryConformance } from "../conformance/release-registry.js";
import { docker, importBusybox, lab, labUp } from "./lab.js";

releaseRegistryConformance("Docker, to the lab's registry", async () => {
  await lab("down");
  const info = await labUp(2);
  const image = await importBusybox(info, "node1", "pier-app/registry-test:d1");
  const twin = "pier-app/registry-test:d3";
  await docker(info, "node1", ["tag", image, twin]);
  // Imported again: another image (its creation time differs), so another digest.
  const other = await importBusybox(info, "node1", "pier-app/registry-test:d2");
  const manager = new Docker({ socketPath: info.dockerHost.replace(/^unix:\/\//, "") });
  const password = readFileSync(info.registry.passwordFile, "utf8").trim();
  const at = (pw: string) =>
    new DockerRegistryPush({
      docker: manager,
      address: info.registry.address,
      username: info.registry.user,
      password: pw,
      caPem: readFileSync(info.registry.caFile, "utf8"),
    });
  return {
    registry: at(password),
    wrongPassword: at("not-the-password"),
    password,
    image,
    twin,
    other,
    pullElsewhere: async (ref) => {
      await docker(info, "node2", ["pull", ref]);
    },
    cleanUp: async () => {
      await lab("down");
    },
  };
});
