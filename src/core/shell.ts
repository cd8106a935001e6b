/** Quoting for the POSIX shell, for the few files Pier writes for a shell inside a build container. */

/** One shell word, whatever it holds (single quotes; a quote becomes '\''). */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `NAME='value'` lines that `set -a; . file` exports. Names a shell cannot export (the contract's
 * `CC_DOCKER_FIXED-CIDR-V6`) are left out.
 */
export function renderEnvFile(vars: Record<string, string>): string {
  return Object.entries(vars)
    .filter(([k]) => NAME.test(k))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${shellQuote(v)}\n`)
    .join("");
}
