// A CONNECT proxy to one host:port and nowhere else, for tests and benches whose builds must reach the npm
// registry through a proxy (test/e2e/build-proxy.test.ts; bench/swarm, whose lab has no route out).
import { createServer, type Server } from "node:http";
import { connect, type Socket } from "node:net";

export interface ConnectProxy {
  /** Not listening yet: the caller listens on an address or a unix socket. */
  server: Server;
  /** Every CONNECT target asked for, allowed or not. */
  asked: string[];
  /** How many tunnels it opened. */
  tunnels(): number;
  /** Ends every open connection and closes the server. */
  close(): Promise<void>;
}

/** The npm registry's `host:443` (PIER_NPM_REGISTRY's, else registry.npmjs.org's): what builds tunnel to. */
export const npmRegistryTarget = (): string =>
  `${new URL(process.env.PIER_NPM_REGISTRY ?? "https://registry.npmjs.org").hostname}:443`;

/** A proxy that tunnels CONNECTs to `target` (`host:port`) and refuses (403) every other target. */
export function connectProxy(target: string): ConnectProxy {
  const open = new Set<Socket>();
  const asked: string[] = [];
  let tunnels = 0;
  const track = (s: Socket) => {
    open.add(s);
    s.on("close", () => open.delete(s));
  };
  const server = createServer((_req, res) => res.writeHead(405).end("CONNECT only\n"));
  server.on("connect", (req, client: Socket, head: Buffer) => {
    asked.push(req.url ?? "");
    track(client);
    client.on("error", () => client.destroy());
    if (req.url !== target) {
      client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const [hostname, port] = target.split(":") as [string, string];
    const upstream = connect(Number(port), hostname, () => {
      tunnels++;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    track(upstream);
    upstream.on("error", () => client.destroy());
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  });
  return {
    server,
    asked,
    tunnels: () => tunnels,
    close: async () => {
      for (const s of open) s.destroy();
      if (server.listening) await new Promise((r) => server.close(r));
    },
  };
}
