// An engine holds more apps than dockerd's default address pools allow networks (about 30): 40 apps, each on
// its own network with a /26 of PIER_SUBNET_POOL, deployed with git push as a user does; deleting them frees
// their networks, sandboxes and subnets. A pool that overlaps a network Pier did not make stops the start.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { NODE_DOCKER_APP, Pier, run, scopeOf } from "./harness.js";

const DOCKER = "/usr/bin/docker";
const APPS = 40;

/** Runs `work` on every item, `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

describe("density: past the old ceiling of networks per engine", { timeout: 300_000 }, () => {
  const pier = new Pier();
  const apps: { name: string; id: string }[] = [];
  let scope = "";
  const lines = async (argv: string[]) =>
    (await run([DOCKER, ...argv])).stdout.split("\n").filter((l) => l.trim() !== "");
  const subnetsInStore = () => {
    const db = new Database(join(pier.dataDir, "pier.db"), { readonly: true, fileMustExist: true });
    try {
      return db.prepare("SELECT subnet, network, app_id AS appId FROM subnets").all() as {
        subnet: string;
        network: string;
        appId: string;
      }[];
    } finally {
      db.close();
    }
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    scope = scopeOf(pier.dataDir);
  });
  after(() => pier.destroy());

  test(`${APPS} apps deploy, each on its own network with a /26 of the pool, and all answer`, async () => {
    const names = Array.from({ length: APPS }, (_, i) => `dense-${i}`);
    await eachLimited(names, 4, async (name) => {
      const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", name]);
      apps.push({ name, id: app.id });
      const push = await pier.push(await pier.repo(name, NODE_DOCKER_APP, app.id));
      assert.equal(push.code, 0, `push of ${name}: ${push.stderr}`);
    });
    for (const a of apps) assert.equal((await pier.get(a.name)).status, 200, `${a.name} answers`);

    const nets = await lines(["network", "ls", "-q", "--filter", `label=pier.scope=${scope}`]);
    assert.equal(nets.length, APPS, "one network per app");
    const subnets = await lines([
      "network",
      "inspect",
      "-f",
      "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
      ...nets,
    ]);
    assert.equal(new Set(subnets).size, APPS, "each its own subnet");
    for (const s of subnets) assert.match(s, /^10\.210\.\d+\.\d+\/26$/);
    const recorded = subnetsInStore();
    assert.deepEqual(recorded.map((r) => r.subnet).sort(), [...subnets].sort(), "the store records them");
    assert.deepEqual(new Set(recorded.map((r) => r.appId)), new Set(apps.map((a) => a.id)));
  });

  test("deleting the apps removes their instances, sandboxes, networks and subnets", async () => {
    await eachLimited(apps, 4, async (a) => {
      const r = await pier.cli(["delete", "--app", a.name, "--yes"]);
      assert.equal(r.code, 0, r.stderr);
    });
    assert.deepEqual(await pier.cliJson<unknown[]>(["apps"]), []);
    assert.deepEqual(await lines(["ps", "-aq", "--filter", `label=pier.scope=${scope}`]), []);
    assert.deepEqual(await lines(["network", "ls", "-q", "--filter", `label=pier.scope=${scope}`]), []);
    assert.deepEqual(subnetsInStore(), []);
  });
});

describe("density: the subnet pool is checked at start", { timeout: 60_000 }, () => {
  test("a pool overlapping the engine's default bridge stops pier server with the setting named", async () => {
    const bridge = (
      await run([DOCKER, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", "bridge"])
    ).stdout.trim();
    assert.match(bridge, /^\d+\.\d+\.\d+\.\d+\/\d+$/);
    const pier = new Pier({ PIER_SUBNET_POOL: bridge });
    try {
      await assert.rejects(pier.start(), (e: Error) => {
        assert.match(
          e.message,
          new RegExp(
            `PIER_SUBNET_POOL: ${bridge.replaceAll(".", "\\.")} overlaps the Docker network 'bridge'`,
          ),
        );
        return true;
      });
    } finally {
      await pier.destroy().catch(() => undefined);
    }
  });

  test("a network size too small for an app is refused with the rule", async () => {
    const pier = new Pier({ PIER_SUBNET_SIZE: "28" });
    try {
      await assert.rejects(pier.start(), /PIER_SUBNET_SIZE: must be a prefix length from 8 to 26/);
    } finally {
      await pier.destroy().catch(() => undefined);
    }
  });
});
