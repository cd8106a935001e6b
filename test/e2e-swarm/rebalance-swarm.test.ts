// The rebalancer's regular look on the swarm (issue 18, ADR 0030 fourteenth part): an app's instance the
// swarm placed again on a node that already runs another of its instances (as it does for a failed task,
// Pier's pin being lifted once a task started) is spread again by the look every PIER_REBALANCE_EVERY,
// with no node coming back, and the same look does not move it again and again.
//
// The swarm is made to place the instance there by hand: a constraint added to its service (the swarm
// replaces its task on that node), then taken off again (a placement-only change: the task stays).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { docker, type LabInfo, swarmPier, swarmPierDown, swarmSettings, until } from "./lab.js";

interface StatusInstance {
  number: number;
  state: string;
  node?: string;
}

const EVERY_S = 20;

describe("the rebalancer's regular look on the swarm", { timeout: 900_000 }, () => {
  let info: LabInfo;
  let pier: Pier;
  let appId = "";

  const instances = async () =>
    (await pier.cliJson<{ instances: StatusInstance[] }>(["status", "--app", "web"])).instances;
  const deployments = () => pier.cliJson<{ cause: string; state: string }[]>(["deployments", "--app", "web"]);
  /** The app's instance services the swarm runs, each with the node of its running task. */
  const services = async () => {
    const names = (
      await docker(info, "node1", ["service", "ls", "-q", "--filter", `label=pier.app=${appId}`])
    )
      .split("\n")
      .filter(Boolean);
    const out: { service: string; node: string }[] = [];
    for (const service of names) {
      const ps = await docker(info, "node1", [
        "service",
        "ps",
        "--filter",
        "desired-state=running",
        "--format",
        "{{.Node}} {{.CurrentState}}",
        service,
      ]);
      const line = ps.split("\n").find((l) => / Running /.test(l));
      if (line) out.push({ service, node: line.split(" ")[0] ?? "" });
    }
    return out;
  };

  before(async () => {
    ({ info, pier } = await swarmPier({
      images: ["pier/base:bookworm", "pier/node:22"],
      settings: (l) => ({
        ...swarmSettings(l),
        PIER_LOG_LEVEL: "info",
        PIER_REBALANCE_EVERY: String(EVERY_S),
      }),
    }));
    appId = (await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"])).id;
    const push = await pier.push(await pier.repo("web", NODE_DOCKER_APP, appId));
    assert.equal(push.code, 0, push.stderr);
    const scaled = await pier.cli(["scale", "--instances", "3", "--app", "web"]);
    assert.equal(scaled.code, 0, scaled.stderr);
  });
  after(() => swarmPierDown(pier));

  test("an instance the swarm put beside another of its app's is spread again by the regular look, once", async () => {
    const spread = await until("web's 3 instances, one on each node", 120, async () => {
      const list = await services();
      return list.length === 3 && new Set(list.map((s) => s.node)).size === 3 ? list : undefined;
    });
    const before = (await deployments()).length;
    const moving = spread.find((s) => s.node === "node2");
    assert.ok(moving, JSON.stringify(spread));
    // The swarm places node2's instance on node3, beside the one there; then the constraint goes, the task stays.
    await docker(info, "node1", [
      "service",
      "update",
      "--detach",
      "--constraint-add",
      "node.hostname==node3",
      moving.service,
    ]);
    await until("the instance moved onto node3 by the swarm", 90, async () => {
      const s = (await services()).find((x) => x.service === moving.service);
      return s?.node === "node3" ? true : undefined;
    });
    // A look may have come first and redeployed web already (this service gone): what follows holds the same.
    await docker(info, "node1", [
      "service",
      "update",
      "--detach",
      "--constraint-rm",
      "node.hostname==node3",
      moving.service,
    ]).catch((err: Error) => {
      if (!/not found/i.test(err.message)) throw err;
    });
    // What was seen last goes into a failure: the deployments since, and where the instances ran.
    let seen = "";
    await until(`the look every ${EVERY_S} s spreading web again`, 3 * EVERY_S + 90, async () => {
      const ds = await deployments();
      const list = await instances();
      seen = JSON.stringify({
        deployments: ds.slice(0, ds.length - before),
        instances: list.map((i) => [i.number, i.state, i.node]),
      });
      const [d] = ds;
      const running = list.filter((i) => i.state === "running");
      return ds.length > before &&
        d?.state === "succeeded" &&
        /^rebalance: crowded nodes seen by the look every 20 s$/.test(d.cause) &&
        running.length === 3 &&
        new Set(running.map((i) => i.node)).size === 3
        ? true
        : undefined;
    }).catch((err: Error) => {
      const looks = pier.output.split("\n").filter((l) => l.includes('"part":"rebalancer"'));
      throw new Error(`${err.message}; seen last: ${seen}; the rebalancer's lines:\n${looks.join("\n")}`);
    });
    // Even now: the next regular looks (two periods) move nothing more.
    const moved = (await deployments()).length;
    await new Promise((r) => setTimeout(r, 2 * EVERY_S * 1000 + 5000));
    const now = await deployments();
    const since = now.slice(0, now.length - moved);
    assert.deepEqual(since, [], "no more redeploys once the app is spread");
    const status = await pier.get("web", "/");
    assert.equal(status.status, 200, status.body);
  });
});
