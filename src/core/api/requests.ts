import { z } from "zod";
import { MAX_INSTANCES } from "../limits.js";
import { FLAVOR_MEMORY_MIB, FLAVORS, RUNTIMES } from "../model.js";
import { appNameProblem } from "../names.js";
import { NODE_ROLES } from "../nodes.js";

/** The API's request bodies (ADR 0026): the route table names them, the routes validate with them. */
export const schemas = {
  createApp: z.object({
    // The domain-dependent part of the rule (the whole host name fits) is checked by AppService.create.
    name: z.string().superRefine((name, ctx) => {
      const problem = appNameProblem(name);
      if (problem) ctx.addIssue({ code: "custom", message: problem.replace(/^name: /, "") });
    }),
    type: z.enum(RUNTIMES, { message: `must be one of ${RUNTIMES.join(", ")}` }),
    flavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    buildFlavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    instances: z.number().int().min(1).max(MAX_INSTANCES).optional(),
    task: z.string().min(1).max(4096).optional(),
  }),
  patchApp: z.object({
    instances: z
      .number()
      .int()
      .min(1, "must be at least 1")
      .max(MAX_INSTANCES, `must be at most ${MAX_INSTANCES}`)
      .optional(),
    flavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    buildFlavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    allowDockerSocket: z.boolean().optional(),
  }),
  patchEnv: z.object({
    set: z.record(z.string(), z.string()).optional(),
    unset: z.array(z.string()).optional(),
  }),
  putEnv: z.object({ value: z.string() }),
  // An app's ceiling (ADR 0022); null: back to the server's default. Unknown fields are refused.
  patchLimits: z.strictObject({
    maxFlavor: z
      .enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` })
      .nullable()
      .optional(),
    maxInstances: z
      .number()
      .int()
      .min(1, "must be at least 1")
      .max(MAX_INSTANCES, `must be at most ${MAX_INSTANCES}`)
      .nullable()
      .optional(),
    maxMemoryMiB: z
      .number()
      .int()
      .min(FLAVOR_MEMORY_MIB.pico, `must be at least ${FLAVOR_MEMORY_MIB.pico} (one pico instance)`)
      .nullable()
      .optional(),
  }),
  deploy: z.object({ withoutCache: z.boolean().optional() }),
  addKey: z.object({
    publicKey: z.string().min(1).max(16384),
    name: z.string().max(100).optional(),
    readOnly: z.boolean().optional(),
  }),
  createToken: z.object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "must be 1-63 letters, digits, '.', '_' or '-'")
      .refine((n) => n !== "admin", "'admin' is the bootstrap admin token's name"),
    app: z.string().min(1).optional(),
    readOnly: z.boolean().optional(),
  }),
  putPrivateKey: z.object({ privateKey: z.string().min(1).max(32768) }),
  createAddon: z.object({
    kind: z.string().min(1),
    name: z.string().min(1),
    flavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    /** Apps to link it to at once. */
    link: z.array(z.string().min(1)).max(100).optional(),
    /** The swarm node to pin it to, with its data (ADR 0030); absent: the manager. Refused on one dockerd. */
    node: z.string().min(1).max(255).optional(),
  }),
  linkAddon: z.object({ addon: z.string().min(1) }),
  linkApp: z.object({ app: z.string().min(1) }),
  putPublished: z.object({ value: z.string() }),
  addDomain: z.object({ name: z.string().min(1).max(253) }),
  joinCommand: z.object({
    role: z.enum(NODE_ROLES, { message: `must be one of ${NODE_ROLES.join(", ")}` }).default("worker"),
  }),
  setCertificate: z.object({
    /** PEM: the certificate, then its chain. */
    cert: z.string().min(1).max(65_536),
    /** PEM, unencrypted. */
    key: z.string().min(1).max(16_384),
  }),
};

const flag = z.enum(["true", "false"]).optional();

/**
 * The query parameters each route reads, for the OpenAPI document. The handlers parse them (reveal.ts,
 * parseTime) with the messages the API has always given.
 */
export const queries = {
  reveal: z.object({ reveal: flag }),
  follow: z.object({ follow: flag }),
  force: z.object({ force: flag }),
  /** A restore's source add-on (name or id), when the backup is another add-on's of the same kind. */
  restoreFrom: z.object({ from: z.string().optional() }),
  acme: z.object({ acme: flag }),
  logs: z.object({
    since: z.string().optional(),
    until: z.string().optional(),
    tail: z.string().optional(),
    follow: flag,
    /** With follow: cursors of lines had (comma-separated); each of their instances goes on after its own. */
    after: z.string().optional(),
  }),
};
