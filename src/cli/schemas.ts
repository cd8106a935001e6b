import { z } from "zod";
import { DEPLOY_STATES, RUNTIMES } from "../core/model.js";

/**
 * The API's answers (docs/api.md) as the CLI reads them. Objects are loose: fields the CLI does not
 * know pass through untouched, so `--format json` prints exactly what the server sent.
 */

const time = z.string();

export const AppSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  type: z.enum(RUNTIMES),
  flavor: z.string(),
  buildFlavor: z.string(),
  instances: z.number(),
  task: z.string().nullable(),
  allowDockerSocket: z.boolean(),
  stopped: z.boolean(),
  createdAt: time,
  gitUrl: z.string(),
  /** A task app serves no HTTP; accept null for it. */
  url: z.string().nullable(),
});
export type ApiApp = z.output<typeof AppSchema>;

/** An app as `GET /v1/apps` lists it: with its status (absent from older servers, null without the engine). */
export const AppListSchema = AppSchema.extend({
  status: z
    .looseObject({
      state: z.string(),
      release: z.looseObject({ number: z.number() }).nullable(),
      running: z.number(),
      total: z.number(),
    })
    .nullable()
    .optional(),
});

export const DeploymentSchema = z.looseObject({
  id: z.string(),
  appId: z.string(),
  state: z.enum(DEPLOY_STATES),
  commit: z.string().nullable(),
  cause: z.string(),
  withoutCache: z.boolean(),
  reason: z.string().nullable(),
  releaseId: z.string().nullable(),
  createdAt: time,
  buildingAt: time.nullable(),
  deployingAt: time.nullable(),
  finishedAt: time.nullable(),
});
export type ApiDeployment = z.output<typeof DeploymentSchema>;

export const ScaleAnswerSchema = z.looseObject({ app: AppSchema, deployment: DeploymentSchema.nullable() });

export const SshKeySchema = z.looseObject({
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

export const ApiTokenSchema = z.looseObject({
  name: z.string(),
  app: z.looseObject({ id: z.string(), name: z.string() }).nullable(),
  readOnly: z.boolean(),
  admin: z.boolean(),
  bootstrap: z.boolean(),
  createdAt: time,
});

/** The answer to `POST /v1/tokens`: the only time the token is shown. */
export const NewApiTokenSchema = ApiTokenSchema.extend({ token: z.string() });

export const SshPrivateKeySchema = z.looseObject({
  type: z.string(),
  fingerprint: z.string(),
  publicKey: z.string(),
});

export const EnvSchema = z.looseObject({ vars: z.record(z.string(), z.string()) });
export const EnvVarSchema = z.looseObject({ name: z.string(), value: z.string() });

/** One line of a deployment's build/deploy log (SSE `data:`). */
export const DeployLogLineSchema = z.looseObject({ at: time, line: z.string() });

/** One line of an instance's runtime log. */
export const RuntimeLogLineSchema = z.looseObject({
  at: time,
  instance: z.union([z.number(), z.string()]),
  stream: z.string(),
  line: z.string(),
});
export type RuntimeLogLine = z.output<typeof RuntimeLogLineSchema>;
export const RuntimeLogsSchema = z.looseObject({ lines: z.array(RuntimeLogLineSchema) });

export const StatusSchema = z.looseObject({
  app: AppSchema,
  state: z.string(),
  /** Not detailed by docs/api.md; the CLI shows `number` or `id` when present. */
  release: z.looseObject({ id: z.string().optional(), number: z.number().optional() }).nullable(),
  deployment: DeploymentSchema.nullable(),
  instances: z.array(
    z.looseObject({
      number: z.number(),
      id: z.string(),
      state: z.string(),
      startedAt: time.nullable(),
      restarts: z.number(),
      lastExit: z.looseObject({ code: z.number().nullable(), at: time }).nullable(),
      address: z.string().nullable(),
    }),
  ),
  tcp: z.looseObject({ host: z.string(), port: z.number() }).nullable(),
  /** Why the edge does not route the app, when it cannot. */
  routeProblem: z.string().nullish(),
  /** The app's custom domains (a server before them sends none). */
  domains: z
    .array(
      z.looseObject({
        name: z.string(),
        state: z.string(),
        source: z.string(),
        issuer: z.string().nullable(),
        notAfter: z.string().nullable(),
        lastError: z.string().nullable(),
      }),
    )
    .optional(),
});

export const ApiErrorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    hint: z.string().nullish(),
  }),
});

const CeilingSchema = z.looseObject({
  maxFlavor: z.string(),
  maxInstances: z.number(),
  maxMemoryMiB: z.number(),
});

/** `GET /v1/apps/:app/limits` (ADR 0022). */
export const LimitsSchema = z.looseObject({
  app: z.string(),
  limits: CeilingSchema,
  set: z.looseObject({
    maxFlavor: z.string().nullable(),
    maxInstances: z.number().nullable(),
    maxMemoryMiB: z.number().nullable(),
  }),
  defaults: CeilingSchema,
  used: z.looseObject({ flavor: z.string(), instances: z.number(), memoryMiB: z.number() }),
  variables: z.looseObject({
    maxCount: z.number(),
    maxValueBytes: z.number(),
    maxTotalBytes: z.number(),
    count: z.number(),
    totalBytes: z.number(),
  }),
});
