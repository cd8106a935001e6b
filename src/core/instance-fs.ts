import { LABEL } from "./labels.js";
// What an instance of a Pier-built image (the Node.js and PHP runtimes) may write, and as whom it runs
// (docs/adr/0023). Pure: the engine adapter applies the plan.

/**
 * The unprivileged user (and group) of Pier-built release images: `pier` in pier/node and pier/php (home
 * /tmp). Numeric, so that it holds in an image whose /etc/passwd lacks the name (an older toolchain).
 */
export const APP_USER = "10000:10000";

/** The user build containers run as: root, for `CC_PRE_BUILD_HOOK`s that install tools globally. */
export const BUILD_USER = "0:0";

/**
 * The label of a release image whose instances get a read-only root filesystem and a size-bounded tmpfs at
 * each of these paths (comma-separated). Only Pier sets it: a Dockerfile's `pier.*` labels are refused.
 */
export const WRITABLE_LABEL = LABEL.writable;

/** Where instances of Pier-built images may write: the home of `pier` too. */
export const WRITABLE_PATHS = ["/tmp"] as const;

/** The share of the instance's memory that its writable space may take (tmpfs pages count in it). */
const WRITABLE_SHARE = 4;

/** The bytes an instance may write, per writable path: a quarter of its memory (64 MiB on pico). */
export const writableBytes = (memoryBytes: number): number => Math.floor(memoryBytes / WRITABLE_SHARE);

export interface InstanceFilesystem {
  readOnlyRoot: boolean;
  /** Mount point -> the engine's tmpfs options. */
  tmpfs: Record<string, string>;
  /** Whether a release volume (vendor/) is mounted read-only. */
  readOnlyVolumes: boolean;
}

/** The filesystem of an instance of an image with these labels: as the image has it unless it is Pier's. */
export function instanceFilesystem(labels: Record<string, string>, memoryBytes: number): InstanceFilesystem {
  const paths = (labels[WRITABLE_LABEL] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => /^\/[A-Za-z0-9._/-]*$/.test(p) && !p.split("/").includes(".."));
  if (paths.length === 0) return { readOnlyRoot: false, tmpfs: {}, readOnlyVolumes: false };
  const size = writableBytes(memoryBytes);
  // exec: tools unpack and run helpers there (npx, node-gyp); nosuid and nodev are the engine's defaults.
  const options = `rw,exec,size=${size},mode=1777`;
  return {
    readOnlyRoot: true,
    tmpfs: Object.fromEntries(paths.map((p) => [p, options])),
    readOnlyVolumes: true,
  };
}
