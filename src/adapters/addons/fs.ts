import { ADDON_PORTS } from "../../core/addons.js";
import type { AddonServers } from "../../core/ports.js";
import { type AddonKindDefinition, ContainerAddons } from "./container.js";

/**
 * fs: a file-system bucket (issue 17 item 4; ADR 0015). Its data is its volume, mounted read-write into
 * every instance of each linked app at the path CC_FS_BUCKET names (core/buckets.ts). Its server is an idle
 * process of `pier/addon-fs:1` (Debian's tar and gzip) that backs the files up (a gzip'ed tar) and restores
 * them all or nothing (extracted aside, checked, then swapped in with renames). On a swarm the volume is on
 * the add-on's node and its apps' instances are pinned there (ADR 0030; NFS is the later option). Nothing to authenticate: a bucket is reached only by its mount,
 * which only linked apps get.
 */
export const FS: AddonKindDefinition = {
  kind: "fs",
  image: "pier/addon-fs:1",
  port: ADDON_PORTS.fs,
  credentials: () => ({ user: "", password: "", database: "" }),
  env: () => ({}),
  restore: { argv: (file) => ["pier-addon", "restore", file], restart: false },
};

export const fsProvider = (servers: AddonServers) => new ContainerAddons(FS, servers);
