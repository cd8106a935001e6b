// The Docker adapter keeps the engine ports' contract (test/conformance/engine.ts): the suite the unit
// tests' fake passes, here on the real dockerd. Everything it makes carries a scope of its own and is
// removed by that label at the end, whatever the suite left.
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { DockerEngine } from "../../src/adapters/engine/docker.js";
import { LABEL } from "../../src/core/labels.js";
import { engineConformance } from "../conformance/engine.js";

const SOCKET = "/var/run/docker.sock";
const BASE = "pier/base:bookworm";

engineConformance("the Docker adapter", async () => {
  const scope = `conformance-${randomBytes(4).toString("hex")}`;
  const engine = new DockerEngine({ socketPath: SOCKET, scope, sandboxImage: BASE });
  const docker = new Docker({ socketPath: SOCKET });
  const filters = { label: [`${LABEL.scope}=${scope}`] };
  // Add-on servers carry a scope label of their own (ADR 0015).
  const addonFilters = { label: [`${LABEL.addonScope}=${scope}`] };
  const cleanUp = async () => {
    for (const c of await docker.listContainers({ all: true, filters: addonFilters }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    for (const v of (await docker.listVolumes({ filters: addonFilters })).Volumes ?? [])
      await docker
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined);
    for (const c of await docker.listContainers({ all: true, filters }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    for (const n of await docker.listNetworks({ filters }))
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined);
    const { Volumes } = await docker.listVolumes({ filters });
    for (const v of Volumes ?? [])
      await docker
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined);
    for (const i of await docker.listImages({ filters: { reference: [`pier-app/${scope}`] } }))
      await docker
        .getImage(i.Id)
        .remove({ force: true })
        .catch(() => undefined);
  };
  return { engine, image: BASE, prefix: scope, cleanUp };
});
