// The swarm's settings (ADR 0030), read by config.ts with the others: its registry (the operator's or
// Pier's own) and how Pier reaches each node's own dockerd.
import { resolve } from "node:path";
import { ConfigError } from "./config-error.js";

/** Where release images are pushed for the swarm's nodes to pull. */
export type SwarmRegistrySetting =
  | {
      kind: "external";
      address: string;
      username: string;
      passwordFile: string;
      /** Where the manager's dockerd reads registries' CAs: Pier trusts the same for the registry's API. */
      certsDir: string;
    }
  | { kind: "own"; listen: string | null; certsDir: string };

/** A node's dockerd: its unix socket, or host and port over plain TCP (a trusted network only). */
export type NodeEngine = { socketPath: string } | { host: string; port: number };

/** `node2=unix:///run/n2.sock,node3=tcp://10.0.0.3:2375`: each node's engine; an error names the bad item. */
export function parseNodeEngines(text: string): Record<string, NodeEngine> {
  const out: Record<string, NodeEngine> = {};
  for (const item of text
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean)) {
    const eq = item.indexOf("=");
    const name = item.slice(0, eq).trim();
    const url = item.slice(eq + 1).trim();
    if (eq < 1 || !name) throw new Error(`'${item}' is not NODE=unix:///path or NODE=tcp://host:port`);
    if (out[name]) throw new Error(`the node ${name} is named twice`);
    const unix = /^unix:\/\/(\/.+)$/.exec(url);
    const tcp = /^tcp:\/\/([a-zA-Z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(url);
    if (unix?.[1]) out[name] = { socketPath: unix[1] };
    else if (tcp?.[1] && tcp[2]) out[name] = { host: tcp[1].replace(/^\[|\]$/g, ""), port: Number(tcp[2]) };
    else throw new Error(`${name}: '${url}' is not unix:///absolute/path nor tcp://host:port`);
  }
  return out;
}

/** With PIER_ENGINE=swarm the registry's three settings are all needed: nodes pull every release from it. */
export function swarmRegistry(c: {
  PIER_ENGINE: "docker" | "swarm";
  PIER_SWARM_REGISTRY?: string;
  PIER_SWARM_REGISTRY_USER?: string;
  PIER_SWARM_REGISTRY_PASSWORD_FILE?: string;
  PIER_SWARM_REGISTRY_LISTEN?: string;
  PIER_DOCKER_CERTS_DIR: string;
}): SwarmRegistrySetting | null {
  if (c.PIER_ENGINE !== "swarm") return null;
  const address = c.PIER_SWARM_REGISTRY;
  const username = c.PIER_SWARM_REGISTRY_USER;
  const passwordFile = c.PIER_SWARM_REGISTRY_PASSWORD_FILE;
  if (!address && !username && !passwordFile)
    return {
      kind: "own",
      listen: c.PIER_SWARM_REGISTRY_LISTEN ?? null,
      certsDir: resolve(c.PIER_DOCKER_CERTS_DIR),
    };
  if (address && username && passwordFile)
    return {
      kind: "external",
      address,
      username,
      passwordFile: resolve(passwordFile),
      certsDir: resolve(c.PIER_DOCKER_CERTS_DIR),
    };
  const missing = (
    ["PIER_SWARM_REGISTRY", "PIER_SWARM_REGISTRY_USER", "PIER_SWARM_REGISTRY_PASSWORD_FILE"] as const
  ).filter((k) => c[k] === undefined);
  throw new ConfigError(
    missing.map(
      (k) =>
        `${k}: required with the other PIER_SWARM_REGISTRY settings (the operator's registry; unset all three for Pier's own)`,
    ),
  );
}
