/**
 * The API's answers, declared once (ADR 0026): the route table names them per status, the server's tests
 * check every answer against them, the OpenAPI document describes them, the CLI parses with them and the
 * console takes its types from them. Objects are loose so that a client reading an answer from a newer
 * server passes fields it does not know through untouched; the server's own check (responseProblem)
 * refuses any field that is not declared here.
 */
import { z } from "zod";
import { ADDON_KINDS } from "../addons.js";
import { DEPLOY_STATES, FLAVORS, RUNTIMES } from "../model.js";
import { NODE_AVAILABILITIES, NODE_GUARDED, NODE_ROLES, NODE_STATES } from "../nodes.js";

const time = z.string();
const flavor = z.enum(FLAVORS);
const vars = z.record(z.string(), z.string());

export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), hint: z.string().optional() }),
});

export const Info = z.looseObject({
  version: z.string(),
  domain: z.string(),
  httpPort: z.number(),
  httpsPort: z.number(),
  sshPort: z.number(),
  gitHost: z.string(),
});

export const App = z.looseObject({
  id: z.string(),
  name: z.string(),
  type: z.enum(RUNTIMES),
  flavor,
  buildFlavor: flavor,
  instances: z.number(),
  task: z.string().nullable(),
  allowDockerSocket: z.boolean(),
  stopped: z.boolean(),
  createdAt: time,
  gitUrl: z.string(),
  url: z.string(),
});

const AppState = z.enum(["stopped", "not deployed", "deploying", "running", "down"]);
const ReleaseRef = z.looseObject({ id: z.string(), number: z.number(), commit: z.string(), createdAt: time });

/** An app as `GET /v1/apps` lists it: with its status (null when the engine does not answer). */
export const ListedApp = App.extend({
  status: z
    .looseObject({ state: AppState, release: ReleaseRef.nullable(), running: z.number(), total: z.number() })
    .nullable(),
});

export const Deployment = z.looseObject({
  id: z.string(),
  appId: z.string(),
  state: z.enum(DEPLOY_STATES),
  commit: z.string(),
  cause: z.string(),
  withoutCache: z.boolean(),
  reason: z.string().nullable(),
  releaseId: z.string().nullable(),
  createdAt: time,
  buildingAt: time.nullable(),
  deployingAt: time.nullable(),
  finishedAt: time.nullable(),
});

export const ScaleAnswer = z.looseObject({ app: App, deployment: Deployment.nullable() });

export const Release = z.looseObject({
  id: z.string(),
  appId: z.string(),
  number: z.number(),
  deploymentId: z.string(),
  image: z.string(),
  commit: z.string(),
  httpPort: z.number(),
  tcpPort: z.number().nullable(),
  /** Runs once to completion, no HTTP: recorded when the release was made. */
  task: z.boolean(),
  createdAt: time,
  current: z.boolean(),
});

export const Domain = z.looseObject({
  name: z.string(),
  app: z.string(),
  source: z.enum(["acme", "user"]),
  state: z.enum(["pending", "issued", "failed"]),
  issuer: z.string().nullable(),
  serial: z.string().nullable(),
  notAfter: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
  failures: z.number(),
  lastError: z.string().nullable(),
  url: z.string(),
});

export const Instance = z.looseObject({
  number: z.number(),
  id: z.string(),
  state: z.string(),
  startedAt: time.nullable(),
  restarts: z.number(),
  lastExit: z.looseObject({ code: z.number(), at: time }).nullable(),
  address: z.string().nullable(),
  /** On a swarm (ADR 0030): the node it runs on; absent on one dockerd. */
  node: z.string().optional(),
  /** On a swarm: the swarm placed it on `node` after its task on `from` was lost (`reason`: "node2 down"). */
  moved: z.looseObject({ from: z.string(), reason: z.string(), at: time.nullable() }).optional(),
});

export const Status = z.looseObject({
  app: App,
  state: AppState,
  /** The serving release; `task`: it runs once to completion, no HTTP (what the app is now, ADR 0028). */
  release: ReleaseRef.extend({ image: z.string(), task: z.boolean() }).nullable(),
  deployment: Deployment.nullable(),
  instances: z.array(Instance),
  tcp: z.looseObject({ host: z.string(), port: z.number() }).nullable(),
  /** Why the edge does not route the app, when it cannot. */
  routeProblem: z.string().nullable(),
  domains: z.array(Domain),
});

const LinkedVariable = z.looseObject({
  name: z.string(),
  value: z.string(),
  source: z.looseObject({ kind: z.enum(["addon", "app"]), name: z.string() }),
});

/** `linked` only when the app has links. */
export const Env = z.looseObject({ vars, linked: z.array(LinkedVariable).optional() });
export const Vars = z.looseObject({ vars });
export const EnvVar = z.looseObject({ name: z.string(), value: z.string() });

const Ceiling = z.looseObject({ maxFlavor: flavor, maxInstances: z.number(), maxMemoryMiB: z.number() });

export const Limits = z.looseObject({
  app: z.string(),
  limits: Ceiling,
  set: z.looseObject({
    maxFlavor: flavor.nullable(),
    maxInstances: z.number().nullable(),
    maxMemoryMiB: z.number().nullable(),
  }),
  defaults: Ceiling,
  used: z.looseObject({ flavor, instances: z.number(), memoryMiB: z.number() }),
  variables: z.looseObject({
    maxCount: z.number(),
    maxValueBytes: z.number(),
    maxTotalBytes: z.number(),
    count: z.number(),
    totalBytes: z.number(),
  }),
});

/** One line of a deployment's log (an SSE `data:`); `dropped` on the marker of lines dropped for a follower. */
export const DeployLogLine = z.looseObject({ at: time, line: z.string(), dropped: z.number().optional() });

export const RuntimeLogLine = z.looseObject({
  at: time,
  instance: z.number(),
  stream: z.enum(["stdout", "stderr"]),
  line: z.string(),
  /** A followed line's: give it back in `after` to follow again from after it (its instance's cursor). */
  cursor: z.string().optional(),
});
export const RuntimeLogs = z.looseObject({ lines: z.array(RuntimeLogLine) });

export const NodeVersions = z.looseObject({
  versions: z.array(
    z.looseObject({ version: z.string(), major: z.number(), lts: z.string().nullable(), eol: z.boolean() }),
  ),
});

export const SshPrivateKey = z.looseObject({
  type: z.string(),
  fingerprint: z.string(),
  publicKey: z.string(),
});

export const SshKey = z.looseObject({
  id: z.string(),
  name: z.string(),
  fingerprint: z.string(),
  algo: z.string(),
  /** An admin key: every app (readOnly then applies); else the apps it is granted on. */
  global: z.boolean(),
  readOnly: z.boolean(),
  apps: z.array(z.looseObject({ id: z.string(), name: z.string(), readOnly: z.boolean() })),
  createdAt: time,
});

export const ApiToken = z.looseObject({
  name: z.string(),
  app: z.looseObject({ id: z.string(), name: z.string() }).nullable(),
  readOnly: z.boolean(),
  admin: z.boolean(),
  bootstrap: z.boolean(),
  createdAt: time,
});

/** The answer to `POST /v1/tokens`: the only time the token is shown. */
export const NewApiToken = ApiToken.extend({ token: z.string() });

export const Addon = z.looseObject({
  id: z.string(),
  name: z.string(),
  kind: z.enum(ADDON_KINDS),
  flavor,
  /** The swarm node it is pinned to with its data (ADR 0030); null on one dockerd. */
  node: z.string().nullable().default(null),
  /** The apps it is linked to, by name. */
  apps: z.array(z.string()),
  createdAt: time,
});

export const AddonStatus = Addon.extend({
  state: z.enum(["running", "starting", "stopped", "missing", "joining"]),
  networks: z.array(z.string()),
  startedAt: time.nullable(),
  joins: z.array(
    z.looseObject({
      app: z.string(),
      state: z.enum(["joined", "joining", "pending"]),
      networks: z.array(z.string()),
    }),
  ),
  host: z.string(),
  port: z.number(),
  backups: z.number(),
});

export const AddonEnv = z.looseObject({ addon: z.string(), kind: z.enum(ADDON_KINDS), vars });

export const Backup = z.looseObject({
  id: z.string(),
  addonId: z.string(),
  file: z.string(),
  bytes: z.number(),
  automatic: z.boolean(),
  createdAt: time,
});

export const Links = z.looseObject({
  addons: z.array(
    z.looseObject({
      id: z.string(),
      name: z.string(),
      kind: z.enum(ADDON_KINDS),
      /** On a swarm: the node it is pinned to (an fs bucket pins its apps' instances there). */
      node: z.string().optional(),
    }),
  ),
  apps: z.array(z.looseObject({ id: z.string(), name: z.string() })),
});

/** The OpenAPI document itself (described, not detailed). */
export const OpenApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  components: z.unknown(),
  security: z.unknown(),
  paths: z.record(z.string(), z.unknown()),
});

/** A machine of the swarm (ADR 0030). */
export const ClusterNode = z.looseObject({
  id: z.string(),
  name: z.string(),
  address: z.string(),
  role: z.enum(NODE_ROLES),
  leader: z.boolean(),
  availability: z.enum(NODE_AVAILABILITIES),
  state: z.enum(NODE_STATES),
  labels: vars,
});

/**
 * A node as `GET /v1/nodes` lists it: with how many of Pier's instances run there now, and whether the node
 * guard (ADR 0019 on a swarm) runs there with pier server's rules (`guardProblem`: why not).
 */
export const ListedNode = ClusterNode.extend({
  instances: z.number(),
  guarded: z.enum(NODE_GUARDED),
  guardProblem: z.string().nullable(),
});

/** A node activated, with the apps being redeployed, one after the other, to spread onto it again (names). */
export const ActivatedNode = ClusterNode.extend({ rebalancing: z.array(z.string()) });

/** What a new machine runs to join the swarm; `token` and `command` hold the swarm's join secret. */
export const JoinCommand = z.looseObject({
  role: z.enum(NODE_ROLES),
  command: z.string(),
  token: z.string(),
  managers: z.array(z.string()),
  registry: z.object({ address: z.string(), trust: z.string().nullable() }).nullable(),
});
