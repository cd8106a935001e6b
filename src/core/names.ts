/**
 * The one rule for app names, shared by the API, the CLI and the edge: an app answers at
 * `<name>.<PIER_DOMAIN>`, so its name is a DNS label (RFC 1123) and the whole host name must be a valid
 * DNS name. A name can never look like an app id, since `pier` commands and git URLs take either.
 */

/** Longest DNS label. */
export const MAX_LABEL = 63;
/** Longest DNS name (without the trailing dot). */
export const MAX_HOSTNAME = 253;

/** What `newId("app")` makes: `app-` and 12 hex digits. */
export const APP_ID_PATTERN = /^app-[0-9a-f]{12}$/;

const LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/** Why `name` cannot be an app name on `domain`, or null when it can. */
export function appNameProblem(name: string, domain?: string): string | null {
  if (name.length === 0) return "name: must not be empty";
  if (name.length > MAX_LABEL) return `name: '${name}' is longer than ${MAX_LABEL} characters (a DNS label)`;
  if (!/^[a-z]/.test(name)) return `name: '${name}' must start with a lowercase letter`;
  if (name.endsWith("-")) return `name: '${name}' must not end with '-' (a DNS label)`;
  if (!LABEL.test(name)) return `name: '${name}' may hold only lowercase letters, digits and '-'`;
  if (APP_ID_PATTERN.test(name))
    return `name: '${name}' has the form of an app id (app-<hex>); choose another`;
  if (domain !== undefined && name.length + 1 + domain.length > MAX_HOSTNAME)
    return `name: '${name}.${domain}' is longer than ${MAX_HOSTNAME} characters (a DNS name)`;
  return null;
}

/** Why `hostname` cannot be routed, or null: each dot-separated label a DNS label, at most 253 in all. */
export function hostnameProblem(hostname: string): string | null {
  if (hostname.length === 0 || hostname.length > MAX_HOSTNAME)
    return `hostname '${hostname}' must be 1-${MAX_HOSTNAME} characters`;
  for (const label of hostname.split(".")) {
    if (label.length > MAX_LABEL || !LABEL.test(label))
      return `hostname '${hostname}' is not a valid DNS name (label '${label}')`;
  }
  return null;
}
