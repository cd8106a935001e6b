import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PierError } from "../core/errors.js";

/**
 * The web console (ADR 0017): a Preact app bundled at build time (scripts/build-console.mjs) into
 * dist/console/console.js and console.css, served from Pier's own origin. It drives the same /v1 API as the
 * CLI with the token the user signs in with (kept in the tab's sessionStorage only), and puts every value on
 * the page as text. The policy allows only these two files: no inline script or style, nothing from
 * elsewhere.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export const CONSOLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pier console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/console.js"></script>
</head><body><div id="root"><noscript>The Pier console needs JavaScript; the CLI (pier) does everything it does.</noscript></div></body></html>
`;

/** dist/console, from dist/src/server (this file, compiled): found whatever the working directory. */
const DIR = new URL("../../console/", import.meta.url);

export const CONSOLE_ASSETS: Readonly<Record<string, string>> = {
  "console.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

const cache = new Map<string, string>();

/** One of the bundle's files (read once), or a 500 that says how to build it. */
export function consoleAsset(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    try {
      text = readFileSync(fileURLToPath(new URL(name, DIR)), "utf8");
    } catch {
      throw new PierError(
        "INTERNAL",
        `The console's ${name} is missing from dist/console.`,
        "Build it: npm run build (it bundles src/console with esbuild).",
      );
    }
    cache.set(name, text);
  }
  return text;
}
