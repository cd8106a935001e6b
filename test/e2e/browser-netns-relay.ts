// Run inside the browser's network namespace (browser-netns.ts): `node browser-netns-relay.js DIR PORT...`
// listens on 127.0.0.1:PORT and carries each connection to the Unix socket DIR/PORT.sock, whose other end
// is the host's 127.0.0.1:PORT. Prints one line once every port listens.
import { connect, createServer } from "node:net";
import { join } from "node:path";

const [dir, ...ports] = process.argv.slice(2);
if (!dir || ports.length === 0) {
  process.stderr.write("usage: browser-netns-relay DIR PORT...\n");
  process.exit(2);
}
let listening = 0;
for (const port of ports) {
  const server = createServer((browser) => {
    const host = connect(join(dir, `${port}.sock`));
    browser.pipe(host).pipe(browser);
    browser.on("error", () => host.destroy());
    host.on("error", () => browser.destroy());
  });
  server.listen(Number(port), "127.0.0.1", () => {
    listening += 1;
    if (listening === ports.length) process.stdout.write("listening\n");
  });
}
