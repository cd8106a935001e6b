/**
 * The `pier` executable (bin/pier.js imports this file; `npm start` runs it with `server`). Binds the
 * CLI to the process: argv, stdout/stderr, stdin, the exit code.
 */
import { createInterface } from "node:readline";
import { ApiClient } from "./client.js";
import { loadCliConfig } from "./config.js";
import type { Io } from "./output.js";
import { run } from "./run.js";
import { cliVersion } from "./version.js";

// `pier logs | head`: the reader went away; that is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw e;
  });
}

const io: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  cwd: process.cwd(),
  stdinIsTTY: process.stdin.isTTY === true,
  async readStdin() {
    let text = "";
    process.stdin.setEncoding("utf8");
    for await (const chunk of process.stdin) text += chunk;
    return text;
  },
  prompt(question) {
    return new Promise((resolve) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      let answered = false;
      rl.once("close", () => {
        if (!answered) resolve(null);
      });
      rl.question(question, (answer) => {
        answered = true;
        rl.close();
        resolve(answer);
      });
    });
  },
};

process.exitCode = await run(process.argv.slice(2), {
  io,
  makeClient: () => new ApiClient(loadCliConfig()),
  version: cliVersion(),
});
