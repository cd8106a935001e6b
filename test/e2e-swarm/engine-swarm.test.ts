// The Swarm instance driver (src/adapters/engine/swarm.ts, ADR 0030) on the lab's three nodes: the instance
// ports' cases of the engine suite (test/conformance/engine.ts), then what only a swarm has: instances spread
// over nodes and answering HTTP at their overlay addresses from another node, a killed node's instance
// running again elsewhere with inspect and listRoutable following it, exec where no node engine is reachable.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { SwarmEngine } from "../../src/adapters/engine/swarm.js";
import { spreadNode } from "../../src/adapters/engine/swarm-placement.js";
import { LABEL } from "../../src/core/labels.js";
import type { InstanceInfo, InstanceSpec, RouteTarget } from "../../src/core/ports.js";
import { instancePortsConformance } from "../conformance/engine.js";
import {
  docker,
  httpdInstance,
  importBusybox,
  LAB_BUSYBOX,
  type LabInfo,
  lab,
  labSwarmEngine,
  labUp,
  until,
} from "./lab.js";

const IMAGE = LAB_BUSYBOX;
let info: LabInfo | null = null;
/** One lab for the whole file: started by the first suite, taken down at the end. */
async function up(): Promise<LabInfo> {
  if (!info) {
    await lab("down");
    info = await labUp(3);
    await importBusybox(info, "node1", IMAGE);
  }
  return info;
}

function swarmEngine(i: LabInfo, scope: string, reachNodes = true): SwarmEngine {
  return labSwarmEngine(i, scope, { reachNodes });
}

after(async () => {
  await lab("down");
});

instancePortsConformance("Docker Swarm on the lab", async () => {
  const i = await up();
  const scope = `swarm-${randomBytes(3).toString("hex")}`;
  // The lab goes down at the end of the file: nothing of the suite outlives it.
  return { engine: swarmEngine(i, scope), image: IMAGE, prefix: scope, cleanUp: async () => undefined };
});

describe("the Swarm driver across nodes", { timeout: 600_000 }, () => {
  let i: LabInfo;
  let engine: SwarmEngine;
  const prefix = `spread-${randomBytes(3).toString("hex")}`;
  const labels = { [LABEL.app]: prefix };
  const network = `${prefix}-net`;
  const spec = (n: number): InstanceSpec =>
    httpdInstance(`${prefix}-${n}`, prefix, { [LABEL.instance]: String(n) });
  /** What a target answers, asked from a container on the app's overlay on node1 (where the edge runs). */
  const answer = async (t: RouteTarget): Promise<string> =>
    docker(i, "node1", [
      "run",
      "--rm",
      "--network",
      network,
      IMAGE,
      "sh",
      "-c",
      `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${t.host} ${t.port} | tail -n 1`,
    ]);

  /** The image as the driver published it (registry and digest): what a node can pull for a service of ours. */
  const published = async (): Promise<string> => {
    const [first] = await engine.listInstances(labels);
    return docker(i, "node1", [
      "service",
      "inspect",
      "-f",
      "{{.Spec.TaskTemplate.ContainerSpec.Image}}",
      first!.id,
    ]);
  };

  /** The node whose engine runs the container that answered at `t` (the page names the container). */
  const answeredFrom = async (t: RouteTarget): Promise<string | undefined> => {
    const container = await answer(t);
    if (!/^[0-9a-f]{12}$/.test(container)) return undefined;
    for (const n of i.nodes) {
      const ids = await docker(i, n.name, ["ps", "-q"]).catch(() => "");
      if (ids.split("\n").includes(container)) return n.name;
    }
    return undefined;
  };

  before(async () => {
    i = await up();
    engine = swarmEngine(i, prefix);
    await engine.ensureNetwork(network, labels, { ipv4: "10.231.0.0/24", ipv6: null });
  });

  test("three instances of an app land one on each node, and each answers at its overlay address from another node", async () => {
    const runs: InstanceInfo[] = [];
    for (const n of [1, 2, 3]) runs.push(await engine.runInstance(spec(n)));
    const listed = await engine.listInstances(labels);
    assert.equal(listed.length, 3);
    const nodes = new Set(listed.map((x) => x.node));
    assert.equal(nodes.size, 3, `spread over ${[...nodes].join(", ")}`);
    // Pinned only for their start: the swarm may move them now, and lifting the pin replaced no task.
    for (const x of listed) {
      const placed = await docker(i, "node1", [
        "service",
        "inspect",
        "-f",
        "{{json .Spec.TaskTemplate.Placement.Constraints}}",
        x.id,
      ]);
      assert.equal(placed, "null", `${x.name}'s constraints`);
      const tasks = await docker(i, "node1", ["service", "ps", "-q", x.id]);
      assert.equal(tasks.split("\n").filter(Boolean).length, 1, `${x.name} kept its one task`);
    }
    for (const x of await engine.listRoutable(labels)) {
      assert.equal(x.running, true);
      assert.match(x.http?.host ?? "", /^10\.231\.0\.\d+$/, "an address of the app's overlay");
      const node = listed.find((l) => l.id === x.id)?.node;
      assert.equal(await until(`${x.id} answers`, 30, () => answeredFrom(x.http as RouteTarget)), node);
    }
  });

  test("the node Pier chose has no room: the pin is lifted and the swarm places the instance elsewhere", async () => {
    // Another app, none of its instances anywhere: Pier's choice is the first node in the app's own order.
    const appId = `${prefix}-full`;
    const ids = await docker(i, "node1", ["node", "ls", "-q"]);
    const nodes = new Map(
      ids.split("\n").map((id) => [id, { name: id, ready: true, active: true }] as const),
    );
    // Pier counts its own instances' reservations only: the filler below is not one of them.
    const chosen = spreadNode(nodes, [], { appId, deploymentId: undefined, memoryBytes: 8 * 2 ** 30 });
    assert.ok(chosen);
    // A task that reserves all but 4 GiB of that node's memory (a reservation only: it sleeps).
    const total = Number(
      await docker(i, "node1", ["node", "inspect", "-f", "{{.Description.Resources.MemoryBytes}}", chosen]),
    );
    const image = await published();
    const filler = `${prefix}-filler`;
    await docker(i, "node1", [
      "service",
      "create",
      "--detach",
      "--with-registry-auth",
      "--name",
      filler,
      "--constraint",
      `node.id==${chosen}`,
      "--reserve-memory",
      String(total - 4 * 2 ** 30),
      image,
      "sleep",
      "3600",
    ]);
    try {
      await until("the filler running", 60, async () =>
        (await docker(i, "node1", ["service", "ps", "-q", "--filter", "desired-state=running", filler])) &&
        /Running/.test(await docker(i, "node1", ["service", "ps", "--format", "{{.CurrentState}}", filler]))
          ? true
          : undefined,
      );
      const big = {
        ...spec(9),
        name: `${appId}-1`,
        labels: { [LABEL.app]: appId },
        memoryBytes: 8 * 2 ** 30,
      };
      const run = await engine.runInstance(big);
      assert.equal(run.running, true);
      const chosenName = await docker(i, "node1", [
        "node",
        "inspect",
        "-f",
        "{{.Description.Hostname}}",
        chosen,
      ]);
      assert.ok(run.node && run.node !== chosenName, `placed on ${run.node}, not on the full ${chosenName}`);
      const placed = await docker(i, "node1", [
        "service",
        "inspect",
        "-f",
        "{{json .Spec.TaskTemplate.Placement.Constraints}}",
        run.id,
      ]);
      assert.equal(placed, "null");
      await engine.removeInstance(run.id, 1000);
    } finally {
      await docker(i, "node1", ["service", "rm", filler]).catch(() => "");
    }
  });

  test("a pin left by a pier server that ended mid-start is lifted when the driver follows the swarm again", async () => {
    const image = await published();
    const node = (await docker(i, "node1", ["node", "ls", "-q"])).split("\n")[0]!;
    const left = `${prefix}-left`;
    const own = [
      `${LABEL.managed}=true`,
      `${LABEL.scope}=${prefix}`,
      `${LABEL.role}=instance`,
      `${LABEL.app}=${prefix}-left`,
    ];
    await docker(i, "node1", [
      "service",
      "create",
      "--detach",
      "--with-registry-auth",
      "--name",
      left,
      ...own.flatMap((l) => ["--label", l]),
      "--constraint",
      `node.id==${node}`,
      image,
      "sleep",
      "3600",
    ]);
    const constraints = () =>
      docker(i, "node1", [
        "service",
        "inspect",
        "-f",
        "{{json .Spec.TaskTemplate.Placement.Constraints}}",
        left,
      ]);
    try {
      assert.equal(await constraints(), JSON.stringify([`node.id==${node}`]));
      const following = new AbortController();
      const done = engine.events(() => undefined, following.signal).catch(() => undefined);
      await until("the left pin lifted", 30, async () =>
        (await constraints()) === "null" ? true : undefined,
      );
      following.abort();
      await done;
    } finally {
      await docker(i, "node1", ["service", "rm", left]).catch(() => "");
    }
  });

  test("a killed node's instance runs again on another node, and inspect and listRoutable follow it", async () => {
    const listed = await engine.listInstances(labels);
    const victim = listed.find((x) => x.node && x.node !== "node1");
    assert.ok(victim?.node, `an instance on a worker: ${listed.map((x) => x.node).join(", ")}`);
    const lost = victim.node;
    await lab("kill", lost);
    const moved = await until(`${victim.name} running off ${lost}`, 90, async () => {
      const x = await engine.inspectInstance(victim.id);
      return x?.running && x.node && x.node !== lost ? x : undefined;
    });
    assert.notDeepEqual(moved.http, victim.http, "a new task, a new address");
    const routed = (await engine.listRoutable(labels)).find((r) => r.id === victim.id);
    assert.deepEqual(routed?.http, moved.http);
    assert.equal(routed?.node, moved.node);
    assert.equal(
      await until("the moved instance answers", 30, () => answeredFrom(moved.http as RouteTarget)),
      moved.node,
    );
    await lab("start", lost);
  });

  test("a command in an instance needs its node's engine: without one, Pier says so", async () => {
    const [x] = await engine.listInstances(labels);
    assert.ok(x);
    const blind = swarmEngine(i, prefix, false);
    await assert.rejects(
      blind.execInInstance(x.id, ["true"], () => undefined),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "ENGINE_ERROR");
        assert.match(e.message, /the engine of its node is not reachable from Pier/);
        return true;
      },
    );
    for (const y of await engine.listInstances(labels)) await engine.removeInstance(y.id, 0);
    assert.deepEqual(await engine.removeNetworks(labels), [network]);
  });
});
