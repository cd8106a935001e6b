import { z } from "zod";
import type { ReplyOf } from "../core/api/call.js";
import * as r from "../core/api/records.js";
import type { RouteKey } from "../core/api/routes.js";

/**
 * The API's answers as the CLI reads them: the very schemas of the route table (core/api/records.ts,
 * ADR 0026), which the client (client.ts) takes per route. Objects are loose: fields the CLI does not know
 * pass through untouched, so `--format json` prints exactly what the server sent.
 */

export type ApiDeployment = z.output<typeof r.Deployment>;
export type ApiToken = z.output<typeof r.ApiToken>;
export type SshKey = z.output<typeof r.SshKey>;
/** One line of an instance's runtime log. */
export type RuntimeLogLine = z.output<typeof r.RuntimeLogLine>;
export const ReleaseSchema = r.Release;
export const ApiErrorBodySchema = r.ErrorBody;

/**
 * Where the CLI reads an answer more leniently than the table declares it, for fields older servers omit:
 * an app as `GET /v1/apps` lists it without its status (older than the status in the list), and
 * `pier status` without `domains` (older than custom domains) or its release's `task` (older than the flag
 * in the status). The client parses these routes' answers
 * with these schemas, and types them so.
 */
export const LENIENT_ANSWERS = {
  "GET /v1/apps": z.array(r.ListedApp.extend({ status: r.ListedApp.shape.status.optional() })),
  "GET /v1/apps/:app/status": r.Status.extend({
    domains: r.Status.shape.domains.optional(),
    release: r.Status.shape.release.unwrap().extend({ task: z.boolean().optional() }).nullable(),
  }),
} satisfies Partial<Record<RouteKey, z.ZodType>>;

type Lenient = typeof LENIENT_ANSWERS;

/** What the CLI's call to a route reads: the table's answer, or the lenient one above. */
export type CliReplyOf<K extends RouteKey> = K extends keyof Lenient ? z.output<Lenient[K]> : ReplyOf<K>;

/** The schema the CLI parses a route's JSON answer with (`declared`: the table's, for the answer's status). */
export function answerSchema(key: RouteKey, declared: z.ZodType): z.ZodType {
  return Object.hasOwn(LENIENT_ANSWERS, key) ? LENIENT_ANSWERS[key as keyof Lenient] : declared;
}
