import pino, { type Logger } from "pino";
import { type Masker, maskUrlCredentials } from "../core/env-secrets.js";

/** Every string of a log record, with `mask` applied (objects and arrays walked, other values kept). */
export function maskDeep(value: unknown, mask: Masker, depth = 0): unknown {
  if (typeof value === "string") return mask(value);
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) return maskedError(value, mask);
  if (Array.isArray(value)) return value.map((v) => maskDeep(v, mask, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = maskDeep(v, mask, depth + 1);
  return out;
}

/** An error as the log shows it: its type, message and stack, masked. */
export function maskedError(e: unknown, mask: Masker = maskUrlCredentials): Record<string, unknown> {
  const err = e instanceof Error ? e : new Error(String(e));
  return maskDeep({ ...pino.stdSerializers.err(err) }, mask) as Record<string, unknown>;
}

/**
 * The server's log (pino, JSON). Secrets never reach it: fields named like secrets are redacted, and the
 * credentials of any URL in any message, field or error are masked where each record is written. Lines
 * about one deployment are masked with that app's secrets by the deploy log's masker (see Deployer).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    redact: ["token", "password", "privateKey", "*.password", "*.token", "*.privateKey"],
    serializers: {
      err: (e: unknown) => (e instanceof Error ? maskedError(e) : maskDeep(e, maskUrlCredentials)),
    },
    formatters: { log: (record) => maskDeep(record, maskUrlCredentials) as Record<string, unknown> },
    hooks: {
      logMethod(args, method) {
        const masked = args.map((a) => (typeof a === "string" ? maskUrlCredentials(a) : a));
        return method.apply(this, masked as Parameters<typeof method>);
      },
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
