import { readFileSync } from "node:fs";

/** pier's version, from the package.json beside `dist/` (this file runs as dist/src/cli/version.js). */
export function cliVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}
