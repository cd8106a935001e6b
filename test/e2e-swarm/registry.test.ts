// The release registry's Docker adapter on the swarm lab (ADR 0030): the manager pushes a release image to
// a registry and a worker pulls it by digest; what is forgotten no longer pulls. Twice, on one lab: to the
// lab's registry (TLS from the lab's CA, htpasswd), and to a registry with token auth (distribution's
// `auth: token:`, its token service test/support/token-server.ts), as an operator's registry often is.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after } from "node:test";
import Docker from "dockerode";
import { RegistryApi } from "../../src/adapters/engine/registry-api.js";
import { DockerRegistryPush } from "../../src/adapters/engine/registry-push.js";
import { releaseRegistryConformance } from "../conformance/release-registry.js";
import { makeTokenPki, TokenServer } from "../support/token-server.js";
import { docker, importBusybox, type LabInfo, lab, labUp, until } from "./lab.js";

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
  const host = info.hostAddress;
  const address = `${host}:5000`;
  const dir = mkdtempSync(join(tmpdir(), "pier-token-registry-"));
  const pki = await makeTokenPki(dir, host);
  const password = randomBytes(16).toString("hex");
  const pusherPassword = randomBytes(16).toString("hex");
  const service = "pier-test-registry";
  const tokens = new TokenServer({
    host,
    issuer: "pier-test-token-service",
    service,
    tls: pki.tls,
    signing: pki.signing,
    accounts: {
      pier: { password, actions: ["pull", "push", "delete"] },
      pusher: { password: pusherPassword, actions: ["pull", "push"] },
    },
  });
  await tokens.start();
  mkdirSync(join(dir, "data"));
  writeFileSync(join(dir, "config.yml"), registryConfig(dir, address, tokens.realm, service, pki));
  const registryProcess: ChildProcess = spawn("docker-registry", ["serve", join(dir, "config.yml")], {
    stdio: ["ignore", openSync(join(dir, "registry.log"), "a"), openSync(join(dir, "registry.log"), "a")],
  });
  await until(`the token-auth registry answers on ${address}`, 20, async () =>
    (await RegistryApi.probe(address, pki.caPem, 1000)) === 401 ? true : undefined,
  );
  // The lab's nodes trust its CA for its address (their /etc/docker is the lab's), the worker logs in.
  const labDir = dirname(dirname(info.registry.caFile));
  for (const node of ["node1", "node2"]) {
    const certs = join(labDir, node, "etc-docker/certs.d", address);
    mkdirSync(certs, { recursive: true });
    writeFileSync(join(certs, "ca.crt"), pki.caPem);
  }
  await login(info, "node2", address, "pier", password);
  const as = (user: string, pw: string) =>
    new DockerRegistryPush({ docker: manager, address, username: user, password: pw, caPem: pki.caPem });
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
    cleanUp: async () => {
      registryProcess.kill();
      await tokens.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

function registryConfig(
  dir: string,
  address: string,
  realm: string,
  service: string,
  pki: Awaited<ReturnType<typeof makeTokenPki>>,
): string {
  return `version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: ${join(dir, "data")}
  delete:
    enabled: true
http:
  addr: ${address}
  tls:
    certificate: ${pki.tls.certFile}
    key: ${pki.tls.keyFile}
auth:
  token:
    realm: ${realm}
    service: ${service}
    issuer: pier-test-token-service
    rootcertbundle: ${pki.signing.certFile}
`;
}
