import { z } from "zod";
import { FLAVORS, RUNTIMES } from "../core/model.js";
import { appNameProblem } from "../core/names.js";

/** The API's request bodies: validated by the routes, described by the OpenAPI document. */
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
    instances: z.number().int().min(1).max(20).optional(),
    task: z.string().min(1).max(4096).optional(),
  }),
  patchApp: z.object({
    instances: z.number().int().min(1, "must be at least 1").max(20, "must be at most 20").optional(),
    flavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    buildFlavor: z.enum(FLAVORS, { message: `must be one of ${FLAVORS.join(", ")}` }).optional(),
    allowDockerSocket: z.boolean().optional(),
  }),
  patchEnv: z.object({
    set: z.record(z.string(), z.string()).optional(),
    unset: z.array(z.string()).optional(),
  }),
  putEnv: z.object({ value: z.string() }),
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
};
