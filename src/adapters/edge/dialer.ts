// The edge's dialer (ADR 0030): a process started in the edge's network namespace on a swarm's manager
// (`nsenter --net=...`), so that Pier's health gate connects to instances from where the edge serves. It
// listens on a unix socket (argv[2]) in Pier's private data directory; each connection sends one line
// `<ip> <port> <timeoutMs>`, gets `ok` once the dialer's own connection is up (or `error <code>`), and then
// carries that connection's bytes both ways. It exits when its parent closes its stdin.
import { rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { connectDirect, parseDialRequest, readLine } from "./reach.js";

function serve(client: Socket): void {
  client.on("error", () => client.destroy());
  void readLine(client).then((line) => {
    const req = line === null ? null : parseDialRequest(line);
    if (!req) {
      client.end("error EINVAL\n");
      return;
    }
    connectDirect(req.host, req.port, req.timeoutMs).then(
      (upstream) => {
        upstream.on("error", () => client.destroy());
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
        client.write("ok\n");
        client.pipe(upstream);
        upstream.pipe(client);
      },
      (e: NodeJS.ErrnoException) => client.end(`error ${e.code ?? "ECONNREFUSED"}\n`),
    );
  });
}

function main(): void {
  const path = process.argv[2];
  if (!path) {
    process.stderr.write("usage: dialer.js SOCKET\n");
    process.exit(2);
  }
  rmSync(path, { force: true });
  const server = createServer(serve);
  server.listen({ path, readableAll: false, writableAll: false }, () => process.stdout.write("ready\n"));
  server.on("error", (e) => {
    process.stderr.write(`dialer: ${e.message}\n`);
    process.exit(1);
  });
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}

main();
