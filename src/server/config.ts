import { existsSync, readFileSync } from "node:fs";
import { homedir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { MAX_CONN_PER_SOURCE } from "../core/edge-config.js";
import { type Ceiling, type HostFacts, hostDefaults, largestFitting, MAX_INSTANCES } from "../core/limits.js";
import { FLAVOR_MEMORY_MIB, FLAVORS } from "../core/model.js";
import { MAX_HOSTNAME, MAX_LABEL } from "../core/names.js";
import { ipv6CidrProblem } from "../core/plan-docker.js";
import {
  type Cidr,
  DEFAULT_SUBNET_POOL,
  DEFAULT_SUBNET_PREFIX,
  formatCidr,
  MAX_SUBNET_PREFIX,
  overlaps,
  parseCidr,
  subnetCount,
} from "../core/subnets.js";

import { ConfigError } from "./config-error.js";
import {
  type NodeEngine,
  parseNodeEngines,
  type SwarmRegistrySetting,
  swarmRegistry,
} from "./config-swarm.js";

/** A proxy URL; `host:port` without a scheme means http://host:port, as curl and npm read it. */
const proxyUrl = () =>
  z
    .string()
    .transform((v) => (v.includes("://") ? v : `http://${v}`))
    .pipe(z.url({ protocol: /^https?$/, message: "must be a URL like http://proxy.example:3128" }))
    .optional();

/**
 * The only module of the server that reads process.env. Every setting is validated at start and every
 * problem is listed at once.
 */
const port = (def: number) =>
  z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, "must be 1..65535")
    .max(65535, "must be 1..65535")
    .default(def);
const SECONDS = "must be a positive number of seconds";
const seconds = (def: number) => z.coerce.number({ message: SECONDS }).positive(SECONDS).default(def);

const schema = z.object({
  PIER_DATA_DIR: z.string().min(1).default(join(homedir(), ".pier")),
  PIER_API_HOST: z.string().min(1).default("127.0.0.1"),
  PIER_API_PORT: port(7070),
  PIER_SSH_HOST: z.string().min(1).default("0.0.0.0"),
  PIER_SSH_PORT: port(2222),
  PIER_HTTP_HOST: z.string().min(1).default("0.0.0.0"),
  PIER_HTTP_PORT: port(8000),
  PIER_HTTPS_HOST: z.string().min(1).optional(),
  PIER_HTTPS_PORT: port(8443),
  PIER_ACME_DIRECTORY: z
    .union([z.literal("off"), z.url({ message: "must be an ACME directory URL, or off" })])
    .default("https://acme-v02.api.letsencrypt.org/directory"),
  PIER_ACME_EMAIL: z.email({ message: "must be an email address" }).optional(),
  PIER_ACME_CA: z
    .string()
    .refine((p) => existsSync(p), "file does not exist")
    .optional(),
  PIER_DOMAIN: z
    .string()
    .regex(
      /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/,
      "must be a DNS name like example.com",
    )
    // Apps answer at <name>.<domain>: every label a DNS label, and room left for a name (ADR 0011).
    .refine((d) => d.split(".").every((l) => l.length <= MAX_LABEL), {
      message: `each label (between dots) must be at most ${MAX_LABEL} characters`,
    })
    .refine((d) => d.length + 2 <= MAX_HOSTNAME, {
      message: `must be at most ${MAX_HOSTNAME - 2} characters, so that <app name>.<domain> is a DNS name`,
    })
    .default("localhost"),
  PIER_GIT_HOST: z.string().min(1).optional(),
  PIER_EXTRA_CA_CERTS: z
    .string()
    .default("/etc/ssl/certs/ca-certificates.crt")
    .refine((p) => existsSync(p), "file does not exist"),
  PIER_CACHE_DIR: z
    .string()
    .min(1)
    .default(join(homedir(), ".cache", "pier")),
  PIER_NPM_REGISTRY: z
    .url({ message: "must be a URL like https://registry.npmjs.org" })
    .default("https://registry.npmjs.org"),
  // The proxy of the server's own requests (the npm registry), under the names every tool reads.
  HTTPS_PROXY: proxyUrl(),
  https_proxy: proxyUrl(),
  NO_PROXY: z.string().optional(),
  no_proxy: z.string().optional(),
  PIER_BUILD_NETWORK: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, "must be the name of a Docker network")
    .optional(),
  PIER_DOCKER_SOCKET: z.string().default("/var/run/docker.sock"),
  PIER_ENGINE: z.enum(["docker", "swarm"], { message: "must be docker or swarm" }).default("docker"),
  // The registry release images go through to the swarm's nodes (ADR 0030): host:port, as nodes name it.
  PIER_SWARM_REGISTRY: z
    .string()
    .regex(/^[a-zA-Z0-9.-]+(:[0-9]{1,5})?$/, "must be the registry's host:port, like 10.0.0.2:5000")
    .optional(),
  PIER_SWARM_REGISTRY_USER: z.string().min(1).optional(),
  // Pier's own registry (without PIER_SWARM_REGISTRY): where it listens, as the nodes reach it.
  PIER_SWARM_REGISTRY_LISTEN: z
    .string()
    .regex(/^[a-zA-Z0-9.-]+:[0-9]{1,5}$/, "must be an address and port of the manager, like 10.0.0.1:5000")
    .optional(),
  // Where the manager's dockerd reads registries' CAs (Pier puts its registry's there).
  PIER_DOCKER_CERTS_DIR: z.string().default("/etc/docker/certs.d"),
  // Where each swarm node's dockerd listens, on that node (the sweep mounts it; swarm templates allowed).
  PIER_SWARM_NODE_SOCKET: z
    .string()
    .regex(/^\//, { message: "must be an absolute path (the docker socket on each node)" })
    .default("/var/run/docker.sock"),
  // How often the rebalancer looks for instances crowding some nodes between nodes' returns (0: never).
  PIER_REBALANCE_EVERY: z.coerce
    .number({ message: "must be 0 (never) or a number of seconds" })
    .int("must be a whole number of seconds")
    .min(0, "must be 0 (never) or a number of seconds")
    .default(900),
  // How many apps the rebalancer redeploys at once when it spreads them over the nodes.
  PIER_REBALANCE_AT_ONCE: z.coerce
    .number({ message: "must be a number of apps, from 1 to 20" })
    .int("must be a whole number of apps")
    .min(1, "must be a number of apps, from 1 to 20")
    .max(20, "must be a number of apps, from 1 to 20")
    .default(3),
  // The dockerd of each node Pier may run add-ons on and exec into (ADR 0030): node=unix:///sock,node=tcp://h:p.
  PIER_SWARM_NODE_ENGINES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      try {
        return parseNodeEngines(v ?? "");
      } catch (e) {
        ctx.addIssue({ code: "custom", message: (e as Error).message });
        return z.NEVER;
      }
    }),
  PIER_SWARM_REGISTRY_PASSWORD_FILE: z
    .string()
    .refine((p) => existsSync(p), "file does not exist")
    .optional(),
  PIER_DOCKER_CLI: z.string().default(existsSync("/usr/bin/docker") ? "/usr/bin/docker" : "docker"),
  PIER_HAPROXY: z.string().default("haproxy"),
  PIER_DEPLOY_TIMEOUT: seconds(900),
  PIER_LISTEN_TIMEOUT: seconds(60),
  PIER_STOP_GRACE: seconds(10),
  PIER_MAX_PUSH_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(512 * 1024 * 1024),
  PIER_API_MAX_BODY: z.coerce
    .number({ message: "must be a number of bytes" })
    .int("must be an integer number of bytes")
    .min(1024, "must be at least 1024 bytes")
    .default(2 ** 20),
  PIER_SSH_AUTH_TIMEOUT: seconds(30),
  PIER_SSH_MAX_UNAUTHENTICATED: z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .default(32),
  PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE: z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .default(8),
  PIER_SSH_IDLE_TIMEOUT: seconds(600),
  PIER_SSH_MAX_CONNECTIONS_PER_KEY: z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .default(16),
  PIER_EDGE_MAX_CONN_PER_SOURCE: z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(100_000, "must be at most 100000")
    .default(MAX_CONN_PER_SOURCE),
  PIER_BACKUP_DIR: z.string().min(1).optional(),
  PIER_BACKUP_DAYS: z.coerce
    .number({ message: "must be a number of days" })
    .int("must be a whole number of days")
    .min(1, "must be at least 1 day")
    .default(7),
  PIER_LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  PIER_ADMIN_TOKEN: z.string().min(24, "must be at least 24 characters").optional(),
  // An app's default ceiling (ADR 0022); unset: derived from the host's memory and pid_max.
  PIER_APP_MAX_FLAVOR: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
  PIER_APP_MAX_INSTANCES: z.coerce
    .number({ message: "must be a number" })
    .int("must be an integer")
    .min(1, `must be 1..${MAX_INSTANCES}`)
    .max(MAX_INSTANCES, `must be 1..${MAX_INSTANCES}`)
    .optional(),
  PIER_APP_MAX_MEMORY_MIB: z.coerce
    .number({ message: "must be a number of MiB" })
    .int("must be a whole number of MiB")
    .min(FLAVOR_MEMORY_MIB.pico, `must be at least ${FLAVOR_MEMORY_MIB.pico} (one pico instance)`)
    .optional(),
  PIER_SUBNET_POOL: z
    .string()
    .default(DEFAULT_SUBNET_POOL)
    .transform((text, ctx) => {
      const c = parseCidr(text);
      if (typeof c === "string") {
        ctx.addIssue({ code: "custom", message: c });
        return z.NEVER;
      }
      return c;
    }),
  PIER_ISOLATION: z.enum(["on", "off"], { message: "must be on or off" }).default("on"),
  PIER_EGRESS_ALLOW: z
    .string()
    .default("")
    .transform((text, ctx) => {
      const list = text
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x !== "");
      for (const c of list) {
        const problem = c.includes(":") ? ipv6CidrProblem(c) : parseCidr(c);
        if (typeof problem === "string") ctx.addIssue({ code: "custom", message: `'${c}' ${problem}` });
      }
      return list;
    }),
  PIER_SUBNET_SIZE: z
    .string()
    .default(String(DEFAULT_SUBNET_PREFIX))
    .transform((text, ctx) => {
      const n = Number(text.replace(/^\//, ""));
      if (!Number.isInteger(n) || n < 8 || n > MAX_SUBNET_PREFIX) {
        ctx.addIssue({
          code: "custom",
          message: `must be a prefix length from 8 to ${MAX_SUBNET_PREFIX} (like ${DEFAULT_SUBNET_PREFIX} or /${DEFAULT_SUBNET_PREFIX}): an app's network needs up to 64 addresses`,
        });
        return z.NEVER;
      }
      return n;
    }),
});

export interface Config {
  dataDir: string;
  api: { host: string; port: number };
  ssh: { host: string; port: number };
  http: { host: string; port: number };
  /** PIER_HTTPS_HOST (default: PIER_HTTP_HOST) and PIER_HTTPS_PORT: the edge's TLS frontend. */
  https: { host: string; port: number };
  /** ACME (ADR 0018): the directory URL (null: off, only users' certificates), contact, extra CA file. */
  acme: { directory: string | null; email: string | null; caFile: string | null };
  domain: string;
  gitHost: string;
  extraCaCerts: string;
  cacheDir: string;
  npmRegistry: string;
  /** HTTPS_PROXY (or https_proxy) for the server's requests to the npm registry, except NO_PROXY's hosts. */
  proxy: { url: string | null; noProxy: string | null };
  /** A Docker network builds join (a registry mirror, an internal git server), or null: the default bridge. */
  buildNetwork: string | null;
  dockerSocket: string;
  /** PIER_ENGINE: one dockerd (docker), or a Docker Swarm whose manager is PIER_DOCKER_SOCKET (ADR 0030). */
  engine: "docker" | "swarm";
  /**
   * Where release images are pushed for the swarm's nodes to pull (ADR 0030); null on one dockerd. Either
   * the operator's (PIER_SWARM_REGISTRY, _USER, _PASSWORD_FILE: the password stays in its file until the
   * server reads it) or Pier's own (none of those set): Debian's docker-registry that Pier runs, listening
   * on PIER_SWARM_REGISTRY_LISTEN (default: the manager's swarm address, port 5000).
   */
  swarmRegistry: SwarmRegistrySetting | null;
  /**
   * PIER_SWARM_NODE_ENGINES: how Pier reaches a node's own dockerd, by node name (add-ons pinned there,
   * commands in its instances); a node not named is reached only through the swarm's manager.
   */
  swarmNodeEngines: Record<string, NodeEngine>;
  /**
   * PIER_SWARM_NODE_SOCKET: the docker socket's path on each node, mounted into the sweep's tasks (a swarm
   * template such as `{{.Node.Hostname}}` may name the node).
   */
  swarmNodeSocket: string;
  /**
   * PIER_REBALANCE_EVERY: on a swarm, how often the rebalancer also looks for apps crowding some nodes
   * (the swarm restarted a failed instance elsewhere), besides a node's return; 0: only at returns.
   */
  rebalanceEveryMs: number;
  /** PIER_REBALANCE_AT_ONCE: how many apps the rebalancer redeploys side by side (each pass plans again between). */
  rebalanceAtOnce: number;
  dockerCli: string;
  haproxy: string;
  deployTimeoutMs: number;
  listenTimeoutMs: number;
  stopGraceMs: number;
  maxPushBytes: number;
  /** The largest API request body, in bytes; larger ones get 413 unread. */
  apiMaxBodyBytes: number;
  /** An SSH connection that has not authenticated by then is closed. */
  sshAuthTimeoutMs: number;
  /** SSH connections not yet authenticated, at most; more are refused. */
  sshMaxUnauthenticated: number;
  /** PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE: of those, from one address (or from builds, on the socket). */
  sshMaxUnauthenticatedPerSource: number;
  /** PIER_SSH_IDLE_TIMEOUT: an authenticated connection without traffic (and no deploy under way) is closed. */
  sshIdleTimeoutMs: number;
  /** PIER_SSH_MAX_CONNECTIONS_PER_KEY: authenticated connections of one key, at most. */
  sshMaxConnectionsPerKey: number;
  /** PIER_EDGE_MAX_CONN_PER_SOURCE: connections one source address may hold open on the edge at a time. */
  edgeMaxConnPerSource: number;
  logLevel: string;
  adminToken: string | undefined;
  /** PIER_BACKUP_DIR: where add-on backups go (default <data dir>/backups), one folder per add-on. */
  backupDir: string;
  /** PIER_BACKUP_DAYS: how long daily automatic backups are kept. */
  backupDays: number;
  /** PIER_SUBNET_POOL and PIER_SUBNET_SIZE: every network Pier creates gets a /prefix of the pool. */
  subnets: { pool: Cidr; prefix: number };
  /** Every app's ceiling unless an admin set its own (ADR 0022): the PIER_APP_MAX_* settings, else the host's. */
  appDefaults: Ceiling;
  /** PIER_ISOLATION: Pier's own firewall rules between apps (ADR 0019); off only where the host refuses them. */
  isolation: boolean;
  /** PIER_EGRESS_ALLOW: private ranges (CIDRs) instances may reach, e.g. a database on the LAN. */
  egressAllow: string[];
}

/** The host's memory and /proc/sys/kernel/pid_max (32768, the kernel's default, when it cannot be read). */
export function readHostFacts(): HostFacts {
  let pidMax = 32768;
  try {
    const n = Number(readFileSync("/proc/sys/kernel/pid_max", "utf8").trim());
    if (Number.isInteger(n) && n > 0) pidMax = n;
  } catch {
    // not Linux, or /proc not mounted: the kernel's default
  }
  return { memoryMiB: Math.floor(totalmem() / 2 ** 20), pidMax };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, host: HostFacts = readHostFacts()): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") picked[key] = v;
  }
  const parsed = schema.safeParse(picked);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`));
  }
  const c = parsed.data;
  if (c.PIER_HTTPS_PORT === c.PIER_HTTP_PORT)
    throw new ConfigError(["PIER_HTTPS_PORT: must differ from PIER_HTTP_PORT"]);
  if (subnetCount(c.PIER_SUBNET_POOL, c.PIER_SUBNET_SIZE) < 2) {
    throw new ConfigError([
      `PIER_SUBNET_POOL: a /${c.PIER_SUBNET_POOL.prefix} holds fewer than two networks of PIER_SUBNET_SIZE /${c.PIER_SUBNET_SIZE}: give a larger pool (like ${DEFAULT_SUBNET_POOL}) or a longer PIER_SUBNET_SIZE`,
    ]);
  }
  const inPool = c.PIER_EGRESS_ALLOW.filter((a) => {
    const v4 = a.includes(":") ? null : parseCidr(a);
    return v4 !== null && typeof v4 !== "string" && overlaps(v4, c.PIER_SUBNET_POOL);
  });
  if (inPool.length > 0)
    throw new ConfigError([
      `PIER_EGRESS_ALLOW: ${inPool.join(", ")} overlaps PIER_SUBNET_POOL ${formatCidr(c.PIER_SUBNET_POOL)}: apps never reach each other's networks`,
    ]);
  return {
    dataDir: resolve(c.PIER_DATA_DIR),
    api: { host: c.PIER_API_HOST, port: c.PIER_API_PORT },
    ssh: { host: c.PIER_SSH_HOST, port: c.PIER_SSH_PORT },
    http: { host: c.PIER_HTTP_HOST, port: c.PIER_HTTP_PORT },
    https: { host: c.PIER_HTTPS_HOST ?? c.PIER_HTTP_HOST, port: c.PIER_HTTPS_PORT },
    acme: {
      directory: c.PIER_ACME_DIRECTORY === "off" ? null : c.PIER_ACME_DIRECTORY,
      email: c.PIER_ACME_EMAIL ?? null,
      caFile: c.PIER_ACME_CA ?? null,
    },
    domain: c.PIER_DOMAIN,
    gitHost: c.PIER_GIT_HOST ?? c.PIER_DOMAIN,
    extraCaCerts: c.PIER_EXTRA_CA_CERTS,
    cacheDir: resolve(c.PIER_CACHE_DIR),
    npmRegistry: c.PIER_NPM_REGISTRY.replace(/\/+$/, ""),
    proxy: { url: c.HTTPS_PROXY ?? c.https_proxy ?? null, noProxy: c.NO_PROXY ?? c.no_proxy ?? null },
    buildNetwork: c.PIER_BUILD_NETWORK ?? null,
    dockerSocket: c.PIER_DOCKER_SOCKET,
    engine: c.PIER_ENGINE,
    swarmRegistry: swarmRegistry(c),
    swarmNodeEngines: c.PIER_SWARM_NODE_ENGINES,
    swarmNodeSocket: c.PIER_SWARM_NODE_SOCKET,
    rebalanceEveryMs: c.PIER_REBALANCE_EVERY * 1000,
    rebalanceAtOnce: c.PIER_REBALANCE_AT_ONCE,
    dockerCli: c.PIER_DOCKER_CLI,
    haproxy: c.PIER_HAPROXY,
    deployTimeoutMs: c.PIER_DEPLOY_TIMEOUT * 1000,
    listenTimeoutMs: c.PIER_LISTEN_TIMEOUT * 1000,
    stopGraceMs: c.PIER_STOP_GRACE * 1000,
    maxPushBytes: c.PIER_MAX_PUSH_BYTES,
    apiMaxBodyBytes: c.PIER_API_MAX_BODY,
    sshAuthTimeoutMs: c.PIER_SSH_AUTH_TIMEOUT * 1000,
    sshMaxUnauthenticated: c.PIER_SSH_MAX_UNAUTHENTICATED,
    sshMaxUnauthenticatedPerSource: c.PIER_SSH_MAX_UNAUTHENTICATED_PER_SOURCE,
    sshIdleTimeoutMs: c.PIER_SSH_IDLE_TIMEOUT * 1000,
    sshMaxConnectionsPerKey: c.PIER_SSH_MAX_CONNECTIONS_PER_KEY,
    edgeMaxConnPerSource: c.PIER_EDGE_MAX_CONN_PER_SOURCE,
    logLevel: c.PIER_LOG_LEVEL,
    adminToken: c.PIER_ADMIN_TOKEN,
    subnets: { pool: c.PIER_SUBNET_POOL, prefix: c.PIER_SUBNET_SIZE },
    isolation: c.PIER_ISOLATION === "on",
    egressAllow: c.PIER_EGRESS_ALLOW,
    backupDir: resolve(c.PIER_BACKUP_DIR ?? join(c.PIER_DATA_DIR, "backups")),
    backupDays: c.PIER_BACKUP_DAYS,
    appDefaults: appDefaults(c, host),
  };
}

function appDefaults(
  c: {
    PIER_APP_MAX_FLAVOR?: Ceiling["maxFlavor"];
    PIER_APP_MAX_INSTANCES?: number;
    PIER_APP_MAX_MEMORY_MIB?: number;
  },
  host: HostFacts,
): Ceiling {
  const fromHost = hostDefaults(host);
  const maxMemoryMiB = c.PIER_APP_MAX_MEMORY_MIB ?? fromHost.maxMemoryMiB;
  return {
    // Unset: the largest flavor one instance of which fits in the memory ceiling.
    maxFlavor: c.PIER_APP_MAX_FLAVOR ?? largestFitting(maxMemoryMiB),
    maxInstances: c.PIER_APP_MAX_INSTANCES ?? fromHost.maxInstances,
    maxMemoryMiB,
  };
}
