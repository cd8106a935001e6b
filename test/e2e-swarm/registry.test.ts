// The release registry's Docker adapter on the swarm lab (ADR 0030): the manager pushes a release image to
// a registry and a worker pulls it by digest; what is forgotten no longer pulls. Twice, on one lab: to the
// lab's registry (TLS from the lab's CA, htpasswd), and to a registry with token auth (distribution's
// `auth: token:`, its token service test/support/token-server.ts), as an operator's registry often is.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import Docker from "dockerode";
import { RegistryApi } from "../../src/adapters/engine/registry-api.js";
import { DockerRegistryPush } from "../../src/adapters/engine/registry-push.js";
import type { PierError } from "../../src/core/errors.js";
import { releaseRegistryConformance } from "../conformance/release-registry.js";
import { startTokenRegistry, type TokenRegistry } from "../support/token-server.js";
import { docker, importBusybox, type LabInfo, lab, labUp } from "./lab.js";

interface LabImages {
  info: LabInfo;
  manager: Docker;
  image: string;
  twin: string;
  other: string;
}

let up: Promise<LabImages> | null = null;

/** The lab (2 nodes) and the manager's images, made once for both suites of this file. */
function labOnce(): Promise<LabImages> {
  up ??= (async () => {
    await lab("down");
    const info = await labUp(2);
    const image = await importBusybox(info, "node1", "pier-app/registry-test:d1");
    const twin = "pier-app/registry-test:d3";
    await docker(info, "node1", ["tag", image, twin]);
    // Imported again: another image (its creation time differs), so another digest.
    const other = await importBusybox(info, "node1", "pier-app/registry-test:d2");
    const manager = new Docker({ socketPath: info.dockerHost.replace(/^unix:\/\//, "") });
    return { info, manager, image, twin, other };
  })();
  return up;
}

after(async () => {
  await lab("down");
});

releaseRegistryConformance("Docker, to the lab's registry", async () => {
  const { info, manager, image, twin, other } = await labOnce();
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
    cleanUp: async () => {},
  };
});

/** The docker CLI's `login` on a lab node, the password on stdin. */
function login(info: LabInfo, node: string, address: string, user: string, password: string) {
  const n = info.nodes.find((x) => x.name === node);
  const p = spawn(
    "/usr/bin/docker",
    ["-H", n?.dockerHost ?? "", "login", "-u", user, "--password-stdin", address],
    {
      env: { ...process.env, DOCKER_CONFIG: info.dockerConfig },
      stdio: ["pipe", "ignore", "pipe"],
    },
  );
  let err = "";
  p.stderr.on("data", (c: Buffer) => {
    err += c.toString();
  });
  p.stdin.end(`${password}\n`);
  return new Promise<void>((resolve, reject) =>
    p.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`docker login on ${node}: ${err}`)))),
  );
}

releaseRegistryConformance("Docker, to a registry with token auth", async () => {
  const { info, manager, image, twin, other } = await labOnce();
  const password = randomBytes(16).toString("hex");
  const pusherPassword = randomBytes(16).toString("hex");
  // On the host's address on the lab's bridge: the nodes reach it.
  const registry = await startTokenRegistry({
    host: info.hostAddress,
    port: 5000,
    accounts: {
      pier: { password, actions: ["pull", "push", "delete"] },
      pusher: { password: pusherPassword, actions: ["pull", "push"] },
    },
  });
  const { address, caPem, tokens } = registry;
  // The lab's nodes trust its CA for its address (their /etc/docker is the lab's), the worker logs in.
  const labDir = dirname(dirname(info.registry.caFile));
  for (const node of ["node1", "node2"]) {
    const certs = join(labDir, node, "etc-docker/certs.d", address);
    mkdirSync(certs, { recursive: true });
    writeFileSync(join(certs, "ca.crt"), caPem);
  }
  await login(info, "node2", address, "pier", password);
  const as = (user: string, pw: string) =>
    new DockerRegistryPush({ docker: manager, address, username: user, password: pw, caPem });
  return {
    registry: as("pier", password),
    wrongPassword: as("pier", "not-the-password"),
    password,
    image,
    twin,
    other,
    pullElsewhere: async (ref) => {
      await docker(info, "node2", ["pull", ref]);
    },
    tokenService: {
      stop: () => tokens.stop(),
      start: () => tokens.start(),
      fresh: () => as("pier", password),
      withoutDelete: () => as("pusher", pusherPassword),
    },
    cleanUp: () => registry.stop(),
  };
});

describe("the registry's API and a token service: a token per scope, reused", () => {
  let registry: TokenRegistry;
  before(async () => {
    const { info } = await labOnce();
    registry = await startTokenRegistry({
      host: info.hostAddress,
      port: 5001,
      accounts: { pier: { password: "pier-password", actions: ["pull", "delete"] } },
    });
  });
  after(() => registry?.stop());

  test("several repositories' tags and deletes: the token service is asked once per repository and action", async () => {
    const { address, caPem } = registry;
    const api = new RegistryApi({ address, caPem, username: "pier", password: "pier-password" });
    const zero = `sha256:${"0".repeat(64)}`;
    for (let i = 0; i < 3; i++) {
      for (const repo of ["pier-app/a", "pier-app/b"]) {
        assert.deepEqual(await api.tags(repo), []);
        assert.equal(await api.digest(repo, "d1"), null);
        assert.equal(await api.deleteManifest(repo, zero), false);
      }
    }
    assert.deepEqual(
      registry.tokens.requests.map((r) => `${r.account} ${r.scopes.join(" ")} ${r.status}`),
      [
        "pier repository:pier-app/a:pull 200",
        "pier repository:pier-app/a:delete 200",
        "pier repository:pier-app/b:pull 200",
        "pier repository:pier-app/b:delete 200",
      ],
    );
  });

  test("a kept token the registry no longer takes (expired): a new one is asked once, and the call goes through", async () => {
    const { address, caPem, tokens } = registry;
    const api = new RegistryApi({ address, caPem, username: "pier", password: "pier-password" });
    // The first call learns the token service from the registry's challenge.
    assert.deepEqual(await api.tags("pier-app/fresh"), []);
    const from = tokens.requests.length;
    tokens.staleTokens = 1;
    // The stale token is refused by the registry (401 with a new challenge): Pier asks again, once.
    assert.deepEqual(await api.tags("pier-app/stale"), []);
    assert.deepEqual(await api.tags("pier-app/stale"), []);
    assert.deepEqual(
      tokens.requests.slice(from).map((r) => `${r.scopes.join(" ")} ${r.status}`),
      ["repository:pier-app/stale:pull 200", "repository:pier-app/stale:pull 200"],
    );
    // A token service that keeps giving stale tokens: the registry's refusal is the error, not a loop.
    tokens.staleTokens = 2;
    await assert.rejects(api.tags("pier-app/stale2"), (e: PierError) => {
      assert.equal(e.code, "ENGINE_ERROR");
      assert.match(e.message, /HTTP 401/);
      return true;
    });
    assert.equal(tokens.requests.length - from, 4);
  });

  test("a token kept past its lifetime is not used: a new one is asked for at the next call", async () => {
    const { address, caPem, tokens } = registry;
    let now = Date.now();
    const api = new RegistryApi({
      address,
      caPem,
      username: "pier",
      password: "pier-password",
      clock: { now: () => now },
    });
    const asked = () => tokens.requests.filter((r) => r.scopes.includes("repository:pier-app/life:pull"));
    await api.tags("pier-app/life");
    now += 200_000;
    await api.tags("pier-app/life");
    assert.equal(asked().length, 1, "within its lifetime (300 s): kept");
    now += 200_000;
    await api.tags("pier-app/life");
    assert.equal(asked().length, 2, "past its lifetime: asked again");
  });
});
