/**
 * Every error a user can see carries a stable code, a real HTTP status, a message a user can act on,
 * and a hint. The API serialises it as `{ "error": { "code", "message", "hint" } }`.
 */
export type ErrorCode =
  | "APP_NOT_FOUND"
  | "APP_EXISTS"
  | "ADDON_NOT_FOUND"
  | "ADDON_NOT_RUNNING"
  | "BACKUP_NOT_FOUND"
  | "DEPLOYMENT_NOT_FOUND"
  | "RELEASE_NOT_FOUND"
  | "SSH_KEY_NOT_FOUND"
  | "SSH_KEY_EXISTS"
  | "INVALID_INPUT"
  | "INVALID_VARIABLE"
  | "PAYLOAD_TOO_LARGE"
  | "LIMIT_EXCEEDED"
  | "ENV_LIMIT_EXCEEDED"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "CONFLICT"
  | "APP_BUSY"
  | "NOTHING_TO_DEPLOY"
  | "BUILD_FAILED"
  | "HEALTH_CHECK_FAILED"
  | "DEPLOY_CANCELLED"
  | "DEPLOY_TIMEOUT"
  | "DEPLOY_SUPERSEDED"
  | "ENGINE_ERROR"
  | "EDGE_ERROR"
  | "DOMAIN_NOT_FOUND"
  | "CERTIFICATE_INVALID"
  | "ACME_ERROR"
  | "SUBNET_OVERLAPS"
  | "SUBNET_POOL_FULL"
  | "ISOLATION_FAILED"
  | "CONFIG_INVALID"
  | "SECRET_UNREADABLE"
  | "NODE_NOT_FOUND"
  | "NO_SWARM"
  | "INTERNAL";

export const STATUS_OF: Record<ErrorCode, number> = {
  APP_NOT_FOUND: 404,
  APP_EXISTS: 409,
  ADDON_NOT_FOUND: 404,
  ADDON_NOT_RUNNING: 409,
  BACKUP_NOT_FOUND: 404,
  DEPLOYMENT_NOT_FOUND: 404,
  RELEASE_NOT_FOUND: 404,
  SSH_KEY_NOT_FOUND: 404,
  SSH_KEY_EXISTS: 409,
  INVALID_INPUT: 400,
  INVALID_VARIABLE: 400,
  PAYLOAD_TOO_LARGE: 413,
  // An app's ceiling, set by an admin (ADR 0022): a policy the asker's token may not lift, as Kubernetes
  // answers a quota.
  LIMIT_EXCEEDED: 403,
  // The caps on variables (ADR 0022): the same for everyone, under the engine's own limits.
  ENV_LIMIT_EXCEEDED: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  APP_BUSY: 409,
  NOTHING_TO_DEPLOY: 409,
  BUILD_FAILED: 422,
  HEALTH_CHECK_FAILED: 422,
  DEPLOY_CANCELLED: 409,
  DEPLOY_TIMEOUT: 504,
  DEPLOY_SUPERSEDED: 409,
  ENGINE_ERROR: 502,
  EDGE_ERROR: 502,
  DOMAIN_NOT_FOUND: 404,
  CERTIFICATE_INVALID: 422,
  ACME_ERROR: 502,
  SUBNET_OVERLAPS: 409,
  SUBNET_POOL_FULL: 503,
  ISOLATION_FAILED: 503,
  CONFIG_INVALID: 500,
  SECRET_UNREADABLE: 500,
  NODE_NOT_FOUND: 404,
  // The nodes' routes on a server whose engine is one dockerd (PIER_ENGINE=docker, ADR 0030).
  NO_SWARM: 409,
  INTERNAL: 500,
};

export class PierError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, hint?: string) {
    super(message);
    this.name = "PierError";
    this.code = code;
    this.status = STATUS_OF[code];
    this.hint = hint;
  }

  toJSON(): { error: { code: ErrorCode; message: string; hint?: string } } {
    return { error: { code: this.code, message: this.message, ...(this.hint ? { hint: this.hint } : {}) } };
  }
}

/**
 * A listener of pier server that could not bind its address: the setting that names it, and why (in use,
 * or a port below 1024 without the right), instead of an unexpected error.
 */
export function listenFailed(e: unknown, setting: string, host: string, port: number): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE")
    return new PierError(
      "CONFIG_INVALID",
      `${setting}: ${host}:${port} is already in use by another process.`,
      `Stop that process (ss -ltnp 'sport = :${port}' shows it), or set ${setting} to a free port.`,
    );
  if (code === "EACCES")
    return new PierError(
      "CONFIG_INVALID",
      `${setting}: pier server may not listen on ${host}:${port} (ports below 1024 need root or CAP_NET_BIND_SERVICE).`,
      `Run pier server as root, or set ${setting} to a port of 1024 or more.`,
    );
  if (code === "EADDRNOTAVAIL")
    return new PierError("CONFIG_INVALID", `${setting}: ${host} is not an address of this host.`);
  return e as Error;
}
