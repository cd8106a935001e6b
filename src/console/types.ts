/**
 * What the /v1 API answers, as the console reads it: the types of the route table's schemas
 * (core/api/records.ts, ADR 0026). Type-only: zod stays out of the console's bundle.
 */
import type { z } from "zod";
import type * as r from "../core/api/records.js";

export type App = z.output<typeof r.App>;
/** An app as `GET /v1/apps` lists it: with its status, read for all apps at once by the server. */
export type ListedApp = z.output<typeof r.ListedApp>;
/** A custom domain and its certificate (`GET /v1/apps/:app/domains`). */
export type DomainView = z.output<typeof r.Domain>;
export type Deployment = z.output<typeof r.Deployment>;
export type Instance = z.output<typeof r.Instance>;
export type Status = z.output<typeof r.Status>;
export type Release = z.output<typeof r.Release>;
export type Addon = z.output<typeof r.Addon>;
export type Links = z.output<typeof r.Links>;
export type EnvAnswer = z.output<typeof r.Env>;
export type LinkedVariable = NonNullable<EnvAnswer["linked"]>[number];
export type Whoami = z.output<typeof r.ApiToken>;
export type Info = z.output<typeof r.Info>;

export type { Flavor, Runtime } from "../core/model.js";
export { FLAVORS, RUNTIMES, TERMINAL_STATES } from "../core/model.js";
