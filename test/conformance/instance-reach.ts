// The InstanceReach port's conformance suite (ADR 0030): connections to instances from where the edge
// serves. Run over the host's own network and over the edge's dialer (test/unit/adapters/instance-reach.test.ts);
// the dialer inside a swarm's edge sandbox is exercised by every gate of test/e2e-swarm/deploy-swarm.test.ts.
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import type { InstanceReach } from "../../src/core/ports.js";

/** Reads from `s` until it has `n` bytes or ends. */
function readBytes(s: Socket, n: number): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const onData = (c: Buffer) => {
      got += c.toString();
      if (got.length >= n) finish();
    };
    const finish = () => {
      s.off("data", onData);
      resolve(got);
    };
    s.on("data", onData);
    s.once("end", finish);
    s.once("close", finish);
  });
}

export function instanceReachConformance(
  name: string,
  make: () => Promise<{ reach: InstanceReach; done(): Promise<void> }>,
): void {
  describe(`InstanceReach conformance: ${name}`, { timeout: 30_000 }, () => {
    let reach: InstanceReach;
    let done: () => Promise<void>;
    let server: Server;
    let port = 0;
    let closedPort = 0;

    before(async () => {
      ({ reach, done } = await make());
      // Speaks first (a banner in the same packet as the dialer's answer, often), then echoes.
      server = createServer((s) => {
        s.write("hello\n");
        s.pipe(s);
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      port = (server.address() as { port: number }).port;
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
      closedPort = (closed.address() as { port: number }).port;
      await new Promise<void>((r) => closed.close(() => r()));
    });
    after(async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await done();
    });

    test("a connection carries every byte both ways, those the server sends first included", async () => {
      const s = await reach.connect("127.0.0.1", port, 2000);
      try {
        assert.equal(await readBytes(s, 6), "hello\n");
        s.write("ping 1\n");
        assert.equal(await readBytes(s, 7), "ping 1\n");
        const big = "x".repeat(200_000);
        s.write(big);
        assert.equal((await readBytes(s, big.length)).length, big.length);
      } finally {
        s.destroy();
      }
    });

    test("many connections at once each get their own bytes", async () => {
      const all = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const s = await reach.connect("127.0.0.1", port, 2000);
          await readBytes(s, 6);
          s.write(`n${i}\n`);
          const got = await readBytes(s, `n${i}\n`.length);
          s.destroy();
          return got;
        }),
      );
      assert.deepEqual(
        all,
        Array.from({ length: 20 }, (_, i) => `n${i}\n`),
      );
    });

    test("a port nothing listens on is refused with ECONNREFUSED", async () => {
      await assert.rejects(reach.connect("127.0.0.1", closedPort, 2000), (e: NodeJS.ErrnoException) => {
        assert.equal(e.code, "ECONNREFUSED");
        return true;
      });
    });
  });
}
