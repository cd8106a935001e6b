import type { Context } from "hono";
import { z } from "zod";
import { PierError } from "../core/errors.js";
import { mayReveal } from "../core/permissions.js";
import { type ApiEnv, scopeOf } from "./access.js";

const RevealQuery = z.enum(["true", "false"], { message: "must be true or false" }).optional();

/**
 * Whether the request asks for secret values in clear (`?reveal=true`) and may have them (ADR 0024). Without
 * it, routes answer secret values masked; a read-only token asking gets 403, never the values.
 */
export function revealOf(c: Context<ApiEnv>): boolean {
  const parsed = RevealQuery.safeParse(c.req.query("reveal"));
  if (!parsed.success)
    throw new PierError("INVALID_INPUT", `reveal: ${parsed.error.issues[0]?.message ?? "invalid"}.`);
  if (parsed.data !== "true") return false;
  if (!mayReveal(scopeOf(c.get("token"))))
    throw new PierError(
      "FORBIDDEN",
      "This token is read-only: it cannot reveal secret values (they are shown masked).",
      "Use a token that may change this app to see them in clear (pier tokens create, without --read-only).",
    );
  return true;
}
