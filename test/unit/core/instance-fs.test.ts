import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { instanceFilesystem, WRITABLE_LABEL, writableBytes } from "../../../src/core/instance-fs.js";

const MiB = 2 ** 20;

describe("writableBytes: a quarter of the flavor's memory", () => {
  const cases: [string, number, number][] = [
    ["pico", 256 * MiB, 64 * MiB],
    ["nano", 512 * MiB, 128 * MiB],
    ["XS", 1024 * MiB, 256 * MiB],
    ["XL", 16384 * MiB, 4096 * MiB],
  ];
  for (const [flavor, memory, want] of cases) {
    test(flavor, () => assert.equal(writableBytes(memory), want));
  }
});

describe("instanceFilesystem", () => {
  const asImage = { readOnlyRoot: false, tmpfs: {}, readOnlyVolumes: false };
  const tmp = (bytes: number) => `rw,exec,size=${bytes},mode=1777`;
  const cases: [string, Record<string, string>, number, unknown][] = [
    ["an image without the label (a Dockerfile app's, a release before ADR 0023)", {}, 512 * MiB, asImage],
    ["an empty label", { [WRITABLE_LABEL]: "" }, 512 * MiB, asImage],
    [
      "a Pier-built release: read-only root, /tmp bounded, vendor/ read-only",
      { [WRITABLE_LABEL]: "/tmp" },
      512 * MiB,
      { readOnlyRoot: true, tmpfs: { "/tmp": tmp(128 * MiB) }, readOnlyVolumes: true },
    ],
    [
      "several paths, each bounded",
      { [WRITABLE_LABEL]: "/tmp, /var/cache/app" },
      256 * MiB,
      {
        readOnlyRoot: true,
        tmpfs: { "/tmp": tmp(64 * MiB), "/var/cache/app": tmp(64 * MiB) },
        readOnlyVolumes: true,
      },
    ],
    [
      "paths that are not absolute, or climb, or carry options, are dropped",
      { [WRITABLE_LABEL]: "tmp,/a/../etc,/x:rw,/tmp" },
      256 * MiB,
      { readOnlyRoot: true, tmpfs: { "/tmp": tmp(64 * MiB) }, readOnlyVolumes: true },
    ],
  ];
  for (const [name, labels, memory, want] of cases) {
    test(name, () => assert.deepEqual(instanceFilesystem(labels, memory), want));
  }
});
