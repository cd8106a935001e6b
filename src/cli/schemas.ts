import type { z } from "zod";
import * as r from "../core/api/records.js";

/**
 * The API's answers as the CLI reads them: the very schemas of the route table (core/api/records.ts,
 * ADR 0026). Objects are loose: fields the CLI does not know pass through untouched, so `--format json`
 * prints exactly what the server sent.
 */

export const AppSchema = r.App;
export type ApiApp = z.output<typeof r.App>;

/**
 * An app as `GET /v1/apps` lists it: with its status (null when the server's engine does not answer; absent
 * from servers older than the status in the list, which the CLI still reads).
 */
export const AppListSchema = r.ListedApp.extend({ status: r.ListedApp.shape.status.optional() });

export const DeploymentSchema = r.Deployment;
export type ApiDeployment = z.output<typeof r.Deployment>;

export const ScaleAnswerSchema = r.ScaleAnswer;
export const SshKeySchema = r.SshKey;
export const ApiTokenSchema = r.ApiToken;
/** The answer to `POST /v1/tokens`: the only time the token is shown. */
export const NewApiTokenSchema = r.NewApiToken;
export const SshPrivateKeySchema = r.SshPrivateKey;
export const EnvSchema = r.Env;
export const EnvVarSchema = r.EnvVar;
export const VarsSchema = r.Vars;

/** One line of a deployment's build/deploy log (SSE `data:`). */
export const DeployLogLineSchema = r.DeployLogLine;

/** One line of an instance's runtime log. */
export const RuntimeLogLineSchema = r.RuntimeLogLine;
export type RuntimeLogLine = z.output<typeof r.RuntimeLogLine>;
export const RuntimeLogsSchema = r.RuntimeLogs;

/** `pier status`: a server older than custom domains sends no `domains`, which the CLI still reads. */
export const StatusSchema = r.Status.extend({ domains: r.Status.shape.domains.optional() });
export const ApiErrorBodySchema = r.ErrorBody;

/** `GET /v1/apps/:app/limits` (ADR 0022). */
export const LimitsSchema = r.Limits;

export const ReleaseSchema = r.Release;
export const NodeVersionsSchema = r.NodeVersions;
export const AddonSchema = r.Addon;
export const AddonStatusSchema = r.AddonStatus;
export const AddonEnvSchema = r.AddonEnv;
export const BackupSchema = r.Backup;
export const LinksSchema = r.Links;
export const DomainSchema = r.Domain;
