// On the swarm lab's three nodes: the Swarm adapter tells a manager from a worker, pier server with
// PIER_ENGINE=swarm refuses an engine that is no manager, `pier nodes` over a server on the manager (with
// isolation on: every node guarded, a drained one not; a restart pushes no guard image), and the adapter
// keeps the Nodes port's contract (test/conformance/nodes.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { SwarmNodes } from "../../src/adapters/engine/swarm-nodes.js";
import { nodesConformance } from "../conformance/nodes.js";
import { Pier } from "../e2e/harness.js";
import { copyImages, docker, type LabInfo, lab, labSocket, labUp, swarmSettings, until } from "./lab.js";

const socket = labSocket;

let info: LabInfo | null = null;
const up = async () => {
  if (!info) {
    await lab("down");
    info = await labUp(3);
    // The edge's sandbox on the manager runs Pier's base image (scripts/setup.sh builds it where Pier runs),
    // the node guard the guard's.
    await copyImages(info, "node1", ["pier/base:bookworm", "pier/guard:1"]);
  }
  return info;
};

test("a manager is one, a worker is not", async () => {
  const i = await up();
  assert.equal(await new SwarmNodes({ socketPath: socket(i, "node1") }).managerProblem(), null);
  assert.equal(
    await new SwarmNodes({ socketPath: socket(i, "node2") }).managerProblem(),
    "the engine is a swarm worker, not a manager",
  );
  // A worker's engine refuses the nodes' calls: Pier says it is no manager.
  await assert.rejects(
    new SwarmNodes({ socketPath: socket(i, "node2") }).listNodes(),
    /NO_SWARM|not a manager/,
  );
});

test("pier server with PIER_ENGINE=swarm does not start on an engine that is no swarm manager, and says why", async () => {
  const i = await up();
  const cases: [string, RegExp][] = [
    [
      socket(i, "node2"),
      /PIER_ENGINE=swarm: the engine is a swarm worker, not a manager \(PIER_DOCKER_SOCKET .*node2/,
    ],
    [
      "/var/run/docker.sock",
      /PIER_ENGINE=swarm: the engine is not part of a swarm \(its swarm state is 'inactive'\)/,
    ],
  ];
  for (const [dockerSocket, message] of cases) {
    const pier = new Pier({ ...swarmSettings(i), PIER_DOCKER_SOCKET: dockerSocket, PIER_ISOLATION: "off" });
    try {
      await assert.rejects(pier.start(), (e: Error) => {
        assert.match(e.message, message);
        assert.match(e.message, /hint: Make this machine's engine a swarm manager/);
        return true;
      });
    } finally {
      await pier.destroy();
    }
  }
});

interface Listed {
  name: string;
  role: string;
  state: string;
  guarded: string;
  guardProblem: string | null;
}

test("pier nodes over pier server on the swarm's manager: list, guarded, join-command, drain, activate, bad input", async () => {
  const i = await up();
  const pier = new Pier({ ...swarmSettings(i), PIER_ISOLATION: "on" });
  try {
    await pier.start();
    const listed = await until("every node guarded", 120, async () => {
      const l = await pier.cliJson<Listed[]>(["nodes"]);
      return l.every((n) => n.guarded === "yes") ? l : undefined;
    });
    assert.deepEqual(listed.map((n) => `${n.name} ${n.role} ${n.state} ${n.guardProblem}`).sort(), [
      "node1 manager ready null",
      "node2 worker ready null",
      "node3 worker ready null",
    ]);
    const table = await pier.cli(["nodes"]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME +ADDRESS +ROLE +AVAILABILITY +STATE +GUARDED +INSTANCES +LABELS/);
    const addr = (n: string) => (i.nodes.find((x) => x.name === n)?.address ?? "?").replaceAll(".", "\\.");
    assert.match(
      table.stdout,
      new RegExp(`node1 +${addr("node1")} +manager \\(leader\\) +active +ready +yes +0`),
    );
    // Every node guarded: the only line on stderr is the lab's one manager's note.
    assert.match(table.stderr, /^node1 is the swarm's only manager: if its dockerd restarts, .*\n$/);
    assert.equal(table.stderr.split("\n").length, 2, table.stderr);
    // ...which pier server said once at its start too, in its log.
    assert.match(pier.output, /"msg":"node1 is the swarm's only manager: if its dockerd restarts/);
    // A restart of pier server finds the guard running its image: nothing pushed again.
    const since = (await docker(i, "node1", ["info", "--format", "{{.SystemTime}}"])).trim();
    await pier.restartServer();
    const pushes = await docker(i, "node1", [
      "events",
      "--since",
      since,
      "--until",
      (await docker(i, "node1", ["info", "--format", "{{.SystemTime}}"])).trim(),
      "--filter",
      "type=image",
      "--filter",
      "event=push",
      "--format",
      "{{.Actor.ID}}",
    ]);
    assert.equal(pushes, "", "no image pushed at the restart");
    const join = await pier.cli(["nodes", "join-command"]);
    assert.equal(join.code, 0, join.stderr);
    assert.match(join.stdout, new RegExp(`^docker swarm join --token SWMTKN-\\S+ ${addr("node1")}:2377\n$`));
    const drained = await pier.cli(["nodes", "drain", "node2"]);
    const node2 = i.nodes.find((x) => x.name === "node2")?.address;
    assert.equal(drained.stdout, `Drained node2 (${node2}): worker, drain, ready.\n`);
    // A drained node runs no task, the guard's neither: not guarded, and said so.
    const afterDrain = await until("node2's guard task stopped", 60, async () => {
      const l = await pier.cli(["nodes"]);
      return /^node2 +\S+ +worker +drain +ready +no +0/m.test(l.stdout) ? l : undefined;
    });
    assert.match(
      afterDrain.stderr,
      /^node2 is not guarded: no guard task runs there: a drained node runs none$/m,
    );
    assert.equal((await pier.cli(["nodes", "drain", "node3"])).code, 0);
    // node1 is the manager pier server runs on (and the last active node): its edge must keep joining
    // new apps' overlays, which a drained node cannot.
    const last = await pier.cli(["nodes", "drain", "node1"]);
    assert.notEqual(last.code, 0);
    assert.match(last.stderr, /node1 is the manager Pier runs on: the edge and builds run there/);
    const unknown = await pier.cli(["nodes", "drain", "node9"]);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /There is no node named 'node9' in the swarm/);
    for (const n of ["node2", "node3"]) {
      const a = await pier.cli(["nodes", "activate", n]);
      assert.match(a.stdout, new RegExp(`^Activated ${n} .*active, ready\\.$`, "m"));
    }
  } finally {
    await pier.destroy();
  }
});

nodesConformance("Docker Swarm on the lab", async () => {
  const i = await up();
  return {
    nodes: new SwarmNodes({ socketPath: socket(i, "node1") }),
    worker: "node2",
    cleanUp: async () => {
      await lab("down");
    },
  };
});
