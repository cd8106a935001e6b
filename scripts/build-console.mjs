// Bundles the web console (src/console, Preact in TSX) into dist/console/console.js and console.css, the two
// files `pier server` serves from its own origin (ADR 0017). `npm run build` runs it after tsc, which
// type-checks the console with src/console/tsconfig.json (esbuild only strips the types).
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = `${root}dist/console`;
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { console: "src/console/main.tsx" },
  outdir,
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  minify: true,
  legalComments: "eof",
  tsconfig: "src/console/tsconfig.json",
  logLevel: "warning",
});
