// A listener that cannot bind its address names the setting and the reason, instead of an unexpected error.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { describe, it } from "node:test";
import { listenFailed, PierError } from "../../../src/core/errors.js";

const listen = (s: Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(port, "127.0.0.1", () => resolve());
  });

describe("listenFailed", () => {
  it("a port in use: the setting, the address and how to find the other process", async () => {
    const taken = createServer();
    await listen(taken, 0);
    const port = (taken.address() as { port: number }).port;
    try {
      const e = await listen(createServer(), port).then(
        () => assert.fail("bound a port in use"),
        (err: unknown) => listenFailed(err, "PIER_API_PORT", "127.0.0.1", port),
      );
      assert.ok(e instanceof PierError);
      assert.equal(e.code, "CONFIG_INVALID");
      assert.equal(e.message, `PIER_API_PORT: 127.0.0.1:${port} is already in use by another process.`);
      assert.match(e.hint ?? "", new RegExp(`sport = :${port}`));
    } finally {
      taken.close();
    }
  });

  it("a privileged port and an address not of this host say so; any other error is kept as it is", () => {
    const errno = (code: string) => Object.assign(new Error(code), { code });
    assert.match(listenFailed(errno("EACCES"), "PIER_HTTP_PORT", "0.0.0.0", 80).message, /below 1024/);
    assert.match(
      listenFailed(errno("EADDRNOTAVAIL"), "PIER_SSH_PORT", "10.9.9.9", 22).message,
      /PIER_SSH_PORT: 10\.9\.9\.9 is not an address of this host/,
    );
    const other = errno("EMFILE");
    assert.equal(listenFailed(other, "PIER_API_PORT", "127.0.0.1", 7070), other);
  });
});
