#!/usr/bin/env node
// The `pier` command: the compiled CLI (`npm run build` puts it in dist/).
import "../dist/src/cli/main.js";
