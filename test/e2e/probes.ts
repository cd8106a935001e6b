// What the isolation tests share: an app's first instance with its address, and a TCP probe run inside an
// instance (every instance they probe from has node: pier/node:22 and Node.js releases).
import { run } from "./harness.js";

export const DOCKER = "/usr/bin/docker";

/** A node one-liner that prints "open" or "closed: <why>" for host:port, within 2 s. */
export const tcpProbe = (host: string, port: number) =>
  `const s=require("net").connect(${port},${JSON.stringify(host)});` +
  `const t=setTimeout(()=>{console.log("closed: timeout");process.exit(0)},2000);` +
  `s.on("connect",()=>{console.log("open");process.exit(0)});` +
  `s.on("error",(e)=>{clearTimeout(t);console.log("closed: "+e.code);process.exit(0)});`;

/**
 * The container of an app's instance 0 and its address on the app's network: the `pier.address` label of an
 * instance in a sandbox, else its own first IPv4 address.
 */
export async function firstInstance(appId: string): Promise<{ id: string; address: string }> {
  const ps = await run([
    DOCKER,
    "ps",
    "-q",
    "--filter",
    `label=pier.app=${appId}`,
    "--filter",
    "label=pier.instance=0",
  ]);
  const id = ps.stdout.trim().split("\n")[0] ?? "";
  const inspect = await run([
    DOCKER,
    "inspect",
    "-f",
    '{{index .Config.Labels "pier.address"}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
    id,
  ]);
  const address =
    inspect.stdout
      .trim()
      .split(/\s+/)
      .find((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a)) ?? "";
  return { id, address };
}

/** tcpProbe from inside `container` to host:port: "open" or "closed: <why>". */
export const probeFrom = async (container: string, host: string, port = 8080) =>
  (
    await run([DOCKER, "exec", container, "node", "-e", tcpProbe(host, port)], { timeoutMs: 30_000 })
  ).stdout.trim();
