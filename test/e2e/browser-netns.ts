// Chromium in a network namespace of its own, reaching the test's pier server through a relay.
//
// Why: Chromium cancels every request in flight with net::ERR_NETWORK_CHANGED when an address appears or
// goes on any interface of its network namespace, and the tests beside the console's create Docker
// networks (a bridge with an address each) all the time. A namespace that holds only its own loopback
// never changes. The browser still opens http://127.0.0.1:PORT: a relay in the namespace listens there
// and carries each connection over a Unix socket (files are shared across network namespaces) to the
// host's 127.0.0.1:PORT.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const PREFIX = "pier-browser-";
const RELAY = fileURLToPath(new URL("./browser-netns-relay.js", import.meta.url));

export type BrowserNetns = {
  /** A program that runs /usr/bin/chromium inside the namespace: playwright's `executablePath`. */
  executablePath: string;
  close(): Promise<void>;
};

function ip(args: string[]): void {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Namespaces left by test processes that are gone (a crashed run) are removed first. */
function removeStale(): void {
  let names: string[] = [];
  try {
    names = readdirSync("/run/netns");
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(n.slice(PREFIX.length));
    if (n.startsWith(PREFIX) && Number.isInteger(pid) && !alive(pid)) {
      spawnSync("ip", ["netns", "del", n]);
    }
  }
}

/** A namespace whose 127.0.0.1:port, for each of `ports`, is the host's. */
export async function browserNetns(ports: number[]): Promise<BrowserNetns> {
  removeStale();
  const name = `${PREFIX}${process.pid}`;
  spawnSync("ip", ["netns", "del", name]);
  ip(["netns", "add", name]);
  ip(["-n", name, "link", "set", "lo", "up"]);
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  const servers: Server[] = [];
  for (const port of ports) {
    const server = createServer((inside) => {
      const host = connect(port, "127.0.0.1");
      inside.pipe(host).pipe(inside);
      inside.on("error", () => host.destroy());
      host.on("error", () => inside.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(join(dir, `${port}.sock`), resolve);
    });
    servers.push(server);
  }
  const relay = spawn("ip", ["netns", "exec", name, process.execPath, RELAY, dir, ...ports.map(String)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    relay.once("exit", (code) => reject(new Error(`the browser's relay ended (exit code ${code})`)));
    relay.stdout.once("data", () => resolve());
  });
  const executablePath = join(dir, "chromium");
  writeFileSync(executablePath, `#!/bin/sh\nexec ip netns exec ${name} /usr/bin/chromium "$@"\n`);
  chmodSync(executablePath, 0o755);
  return {
    executablePath,
    async close() {
      relay.kill("SIGKILL");
      for (const s of servers) s.close();
      spawnSync("ip", ["netns", "del", name]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
