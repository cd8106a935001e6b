// What the isolation tests share: an app's first instance with its address, and a TCP probe run inside an
// instance (every instance they probe from has node: pier/node:22 and Node.js releases).
import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
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

/** A host of the test's own beside this machine: a network namespace behind a veth pair. */
export interface PeerHost {
  ns: string;
  /** The veth's ends: on the host, and in the namespace. */
  veth: string;
  peer: string;
  /** The namespace's address, routed from the host as a /32 through the veth. */
  address: string;
  /** The host end's address (a /32 of its own). */
  hostSide: string;
}

async function sh(argv: string[]): Promise<void> {
  const r = await run(argv, { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
}

/** A peer host's names (`tag` keeps two tests' apart; interface names stay under 16 bytes). */
export const peerHost = (prefix: string, tag: string, address: string, hostSide: string): PeerHost => ({
  ns: `${prefix}-${tag}`,
  veth: `${prefix.slice(0, 2)}h${tag}`,
  peer: `${prefix.slice(0, 2)}n${tag}`,
  address,
  hostSide,
});

/** Makes the namespace, its veth pair, its address and the host's route to it. */
export async function peerHostUp(p: PeerHost): Promise<void> {
  await sh(["ip", "netns", "add", p.ns]);
  await sh(["ip", "link", "add", p.veth, "type", "veth", "peer", "name", p.peer]);
  await sh(["ip", "link", "set", p.peer, "netns", p.ns]);
  await sh(["ip", "addr", "add", `${p.hostSide}/32`, "dev", p.veth]);
  await sh(["ip", "link", "set", p.veth, "up"]);
  await sh(["ip", "route", "add", `${p.address}/32`, "dev", p.veth]);
  await sh(["ip", "netns", "exec", p.ns, "ip", "addr", "add", `${p.address}/32`, "dev", p.peer]);
  await sh(["ip", "netns", "exec", p.ns, "ip", "link", "set", p.peer, "up"]);
  await sh(["ip", "netns", "exec", p.ns, "ip", "link", "set", "lo", "up"]);
  await sh(["ip", "netns", "exec", p.ns, "ip", "route", "add", "default", "dev", p.peer]);
}

/** Removes what peerHostUp made (what is already gone is no error). */
export async function peerHostDown(p: PeerHost): Promise<void> {
  await run(["ip", "route", "del", `${p.address}/32`, "dev", p.veth]);
  await run(["ip", "link", "del", p.veth]);
  await run(["ip", "netns", "del", p.ns]);
}

/** Runs a Node.js script (`node -e`) in the peer host's namespace. */
export const nodeInPeerHost = (p: PeerHost, script: string, stdio: StdioOptions = "ignore"): ChildProcess =>
  spawn("ip", ["netns", "exec", p.ns, process.execPath, "-e", script], { stdio });
