/**
 * The Store's contract (ADR 0027), one suite for every implementation: the SQLite store (unit and e2e run)
 * and the in-memory store of the unit tests. A new store is proven by one call: storeConformance(name,
 * factory). Each test gets a new, empty store from the factory.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PierError } from "../../src/core/errors.js";
import type { App } from "../../src/core/model.js";
import type { AddonStore, DomainStore, NewApp, Store } from "../../src/core/ports.js";
import { accessConformance } from "./store-access.js";
import { addonConformance } from "./store-addons.js";
import { deploy, deploymentsContract, release, releasesContract } from "./store-deploys.js";

export interface StoreUnderTest {
  store: Store;
  addons: AddonStore;
  domains: DomainStore;
  /** Closes the store and removes what it made. */
  close(): void;
}
export type StoreFactory = () => Promise<StoreUnderTest>;

export const newApp = (name: string, extra: Partial<NewApp> = {}): NewApp => ({
  id: `app-${name}`,
  name,
  type: "node",
  flavor: "nano",
  buildFlavor: "M",
  instances: 1,
  task: null,
  ...extra,
});

/** A stored app (as `Store.getApp` returns it), for unit tests that need one without a store. */
export const appRecord = (name: string, extra: Partial<App> = {}): App => ({
  ...newApp(name),
  allowDockerSocket: false,
  stopped: false,
  createdAt: "2026-01-01T00:00:00.000Z",
  ...extra,
});

/** The PierError code a promise rejects with ("resolved" when it does not). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return e instanceof PierError ? e.code : `not a PierError: ${String(e)}`;
  }
  return "resolved";
}

/** Runs `body` with a new store, closed after. */
export const withStore = (factory: StoreFactory, body: (s: StoreUnderTest) => Promise<void>) => async () => {
  const s = await factory();
  try {
    await body(s);
  } finally {
    s.close();
  }
};

export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`Store conformance: ${name}`, () => {
    appsContract(factory);
    envContract(factory);
    deploymentsContract(factory);
    releasesContract(factory);
    exitsAndSubnetsContract(factory);
    accessConformance(factory);
    addonConformance(factory);
  });
}

function appsContract(factory: StoreFactory): void {
  describe("apps", () => {
    it(
      "created, found by id or name, listed by name; a taken name is APP_EXISTS",
      withStore(factory, async ({ store }) => {
        const web = await store.createApp(newApp("web"));
        assert.deepEqual(
          { ...web, createdAt: "" },
          { ...newApp("web"), allowDockerSocket: false, stopped: false, createdAt: "" },
        );
        assert.ok(!Number.isNaN(Date.parse(web.createdAt)));
        await store.createApp(newApp("api", { task: "node job.js" }));
        assert.deepEqual(await store.findApp("app-web"), web);
        assert.deepEqual(await store.findApp("web"), web);
        assert.equal(await store.findApp("nope"), null);
        assert.deepEqual(
          (await store.listApps()).map((a) => a.name),
          ["api", "web"],
        );
        assert.equal(await codeOf(store.createApp(newApp("web", { id: "app-other" }))), "APP_EXISTS");
        assert.equal((await store.listApps()).length, 2, "nothing added on a refusal");
      }),
    );

    it(
      "updated field by field (undefined leaves a field); an unknown app is APP_NOT_FOUND",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        const a = await store.updateApp("app-web", { instances: 3, stopped: true, flavor: undefined });
        assert.equal(a.instances, 3);
        assert.equal(a.stopped, true);
        assert.equal(a.flavor, "nano");
        const b = await store.updateApp("app-web", {
          allowDockerSocket: true,
          flavor: "S",
          buildFlavor: "L",
        });
        assert.deepEqual([b.allowDockerSocket, b.flavor, b.buildFlavor, b.instances], [true, "S", "L", 3]);
        assert.deepEqual(await store.findApp("web"), b);
        assert.equal(await codeOf(store.updateApp("app-nope", { instances: 2 })), "APP_NOT_FOUND");
      }),
    );

    it(
      "deleted with everything of its own; other apps keep theirs",
      withStore(factory, async ({ store, addons, domains }) => {
        await store.createApp(newApp("web"));
        await store.createApp(newApp("api"));
        for (const id of ["app-web", "app-api"]) {
          await store.changeEnv(id, { A: "1" }, []);
          await store.setAppSecret(id, "ssh_private_key", "k");
          await deploy(store, id, `dep-${id}`);
          await store.commitRelease(release(id, `rel-${id}`, `dep-${id}`), {}, new Date().toISOString());
          await addons.setPublished(id, "URL", "u");
        }
        await domains.addDomain({ name: "web.example.test", appId: "app-web", nextAttemptAt: null });
        await addons.linkApp("app-api", "app-web");
        await store.deleteApp("app-web");
        assert.equal(await store.findApp("web"), null);
        assert.deepEqual(await store.getEnv("app-web"), {});
        assert.equal(await store.getAppSecret("app-web", "ssh_private_key"), null);
        assert.equal(await store.getDeployment("dep-app-web"), null);
        assert.equal(await store.getRelease("rel-app-web"), null);
        assert.deepEqual(await store.listDeployments("app-web"), []);
        assert.deepEqual(await domains.listDomains(), []);
        assert.deepEqual(await addons.linkedApps("app-api"), [], "a link to it goes");
        assert.deepEqual(await addons.getPublished("app-web"), {});
        assert.deepEqual(await store.getEnv("app-api"), { A: "1" });
        assert.equal((await store.currentRelease("app-api"))?.id, "rel-app-api");
        await store.deleteApp("app-web"); // gone already: no error
      }),
    );

    it(
      "what a caller gets is a copy: changing it changes nothing stored",
      withStore(factory, async ({ store }) => {
        const a = await store.createApp(newApp("web"));
        a.instances = 9;
        (await store.getEnv("app-web")).X = "1";
        assert.equal((await store.findApp("web"))?.instances, 1);
        assert.deepEqual(await store.getEnv("app-web"), {});
      }),
    );
  });
}

function envContract(factory: StoreFactory): void {
  describe("variables, secrets and limits", () => {
    it(
      "changeEnv sets and unsets at once and returns the variables, by name",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        assert.deepEqual(await store.changeEnv("app-web", { B: "2", A: "1", C: "x" }, []), {
          A: "1",
          B: "2",
          C: "x",
        });
        const after = await store.changeEnv("app-web", { A: "one", D: "a b\nc=d" }, ["C", "NOPE"]);
        assert.deepEqual(Object.entries(after), [
          ["A", "one"],
          ["B", "2"],
          ["D", "a b\nc=d"],
        ]);
        assert.deepEqual(await store.getEnv("app-web"), after);
      }),
    );

    it(
      "changeEnv is all or nothing: accept sees the result and, throwing, refuses the whole change",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.changeEnv("app-web", { A: "1", B: "2" }, []);
        let seen: Record<string, string> = {};
        const refuse = (next: Record<string, string>) => {
          seen = next;
          throw new PierError("ENV_LIMIT_EXCEEDED", "too many");
        };
        assert.equal(
          await codeOf(store.changeEnv("app-web", { C: "3" }, ["A"], refuse)),
          "ENV_LIMIT_EXCEEDED",
        );
        assert.deepEqual(seen, { B: "2", C: "3" }, "accept saw the variables as the change would leave them");
        assert.deepEqual(await store.getEnv("app-web"), { A: "1", B: "2" }, "nothing changed");
      }),
    );

    it(
      "a variable named like an Object.prototype property is a variable",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.changeEnv("app-web", Object.fromEntries([["__proto__", "x"]]), []);
        const vars = await store.getEnv("app-web");
        assert.equal(Object.getPrototypeOf(vars), Object.prototype);
        assert.deepEqual(Object.entries(vars), [["__proto__", "x"]]);
      }),
    );

    it(
      "app secrets round-trip, per app; null removes one",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        await store.createApp(newApp("api"));
        const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n";
        await store.setAppSecret("app-web", "ssh_private_key", pem);
        assert.equal(await store.getAppSecret("app-web", "ssh_private_key"), pem);
        assert.equal(await store.getAppSecret("app-api", "ssh_private_key"), null);
        await store.setAppSecret("app-web", "ssh_private_key", "new");
        assert.equal(await store.getAppSecret("app-web", "ssh_private_key"), "new");
        await store.setAppSecret("app-web", "ssh_private_key", null);
        assert.equal(await store.getAppSecret("app-web", "ssh_private_key"), null);
      }),
    );

    it(
      "limits: none set is all null; a patch sets some, null goes back to the default",
      withStore(factory, async ({ store }) => {
        await store.createApp(newApp("web"));
        const none = { maxFlavor: null, maxInstances: null, maxMemoryMiB: null };
        assert.deepEqual(await store.appLimits("app-web"), none);
        assert.deepEqual(await store.setAppLimits("app-web", { maxInstances: 3 }), {
          ...none,
          maxInstances: 3,
        });
        const both = await store.setAppLimits("app-web", { maxFlavor: "L", maxMemoryMiB: 2048 });
        assert.deepEqual(both, { maxFlavor: "L", maxInstances: 3, maxMemoryMiB: 2048 });
        await store.setAppLimits("app-web", { maxInstances: null });
        assert.deepEqual(await store.appLimits("app-web"), { ...both, maxInstances: null });
      }),
    );
  });
}

function exitsAndSubnetsContract(factory: StoreFactory): void {
  describe("exits and subnets", () => {
    it(
      "lastExits: per container, how many exits, the last one's code and time; per app",
      withStore(factory, async ({ store }) => {
        for (const n of ["web", "api"]) await store.createApp(newApp(n));
        const exit = (appId: string, containerId: string, exitCode: number, at: string) =>
          store.recordExit({ appId, containerId, instance: 0, exitCode, at });
        await exit("app-web", "c1", 1, "2026-11-20T12:00:01.000Z");
        await exit("app-web", "c1", 137, "2026-11-20T12:00:03.000Z");
        await exit("app-web", "c1", 2, "2026-11-20T12:00:02.000Z");
        await exit("app-web", "c2", 0, "2026-11-20T12:00:00.000Z");
        await exit("app-api", "c3", 1, "2026-11-20T12:00:00.000Z");
        const last = await store.lastExits("app-web");
        assert.deepEqual(Object.fromEntries(last), {
          c1: { code: 137, at: "2026-11-20T12:00:03.000Z", count: 3 },
          c2: { code: 0, at: "2026-11-20T12:00:00.000Z", count: 1 },
        });
        assert.deepEqual([...(await store.lastExits("app-nope")).keys()], []);
      }),
    );

    it(
      "claimSubnet: a free subnet is the network's; a network keeps its own; another's is null",
      withStore(factory, async ({ store }) => {
        const a = { subnet: "10.210.0.0/26", network: "pier-a", appId: "app-a" };
        assert.equal(await store.claimSubnet(a), "10.210.0.0/26");
        assert.equal(await store.claimSubnet({ ...a, subnet: "10.210.0.64/26" }), "10.210.0.0/26");
        assert.equal(await store.claimSubnet({ ...a, network: "pier-b", appId: "app-b" }), null);
        await store.claimSubnet({ subnet: "10.210.0.128/26", network: "pier-c", appId: "app-c" });
        assert.deepEqual(
          (await store.listSubnets()).map((s) => [s.subnet, s.network, s.appId]),
          [
            ["10.210.0.0/26", "pier-a", "app-a"],
            ["10.210.0.128/26", "pier-c", "app-c"],
          ],
        );
        await store.releaseSubnets(["pier-a", "pier-gone"]);
        assert.deepEqual(
          (await store.listSubnets()).map((s) => s.network),
          ["pier-c"],
        );
        assert.equal(await store.claimSubnet({ ...a, network: "pier-b" }), "10.210.0.0/26", "free again");
      }),
    );

    it(
      "claimSubnet: many claims at once never give one subnet to two networks",
      withStore(factory, async ({ store }) => {
        const got = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.claimSubnet({
              subnet: `10.210.0.${(i % 4) * 64}/26`,
              network: `pier-${i}`,
              appId: `app-${i}`,
            }),
          ),
        );
        const granted = got.filter((s) => s !== null);
        assert.equal(granted.length, 4);
        assert.equal(new Set(granted).size, 4);
      }),
    );
  });
}
