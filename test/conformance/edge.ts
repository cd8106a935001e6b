/**
 * The Edge's contract (and TlsEdge's), one suite for every implementation (ADR 0027): Pier's HAProxy edge
 * (test/e2e/edge-conformance.test.ts) and the fake of the unit tests (test/support/fake-edge.ts). What is
 * checked is what a client of the edge sees: status codes, bodies, the redirect, the challenge answer.
 * The suite runs its own backends: HTTP servers on loopback that answer with their name.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, describe, it } from "node:test";
import type { Edge, Route, TlsEdge } from "../../src/core/ports.js";

export interface EdgeUnderTest {
  edge: Edge;
  tls: TlsEdge;
  /** A GET through the edge's HTTP side with this Host header. */
  get(
    host: string,
    path?: string,
  ): Promise<{ status: number; body: string; headers: Record<string, unknown> }>;
  /** The HTTPS side's port (in the redirect of forceHttps). */
  httpsPort: number;
  /** Stops the edge and removes what it made. */
  close(): Promise<void>;
}
export type EdgeFactory = () => Promise<EdgeUnderTest>;

/** A certificate and its key (PEM, the edge's form) for `name`, valid long enough. */
export interface EdgeCertificate {
  name: string;
  pem: string;
}

async function backend(name: string): Promise<{ server: Server; target: { host: string; port: number } }> {
  const server = createServer((req, res) => res.end(JSON.stringify({ name, path: req.url })));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  return { server, target: { host: "127.0.0.1", port: typeof a === "object" && a ? a.port : 0 } };
}

const nameOf = (body: string) => (JSON.parse(body) as { name: string }).name;

export function edgeConformance(implementation: string, factory: EdgeFactory, cert: EdgeCertificate): void {
  describe(`Edge conformance: ${implementation}`, { timeout: 120_000 }, () => {
    const servers: Server[] = [];
    const started = async (name: string) => {
      const b = await backend(name);
      servers.push(b.server);
      return b.target;
    };
    after(() => {
      for (const s of servers) s.close();
    });
    const withEdge = (body: (e: EdgeUnderTest) => Promise<void>) => async () => {
      const e = await factory();
      try {
        await e.edge.start();
        await body(e);
      } finally {
        await e.close();
      }
    };

    it(
      "routes by Host (case and port ignored) and by alias; 404 for no app, 503 for no instance",
      withEdge(async ({ edge, get }) => {
        const a = await started("a");
        const routes: Route[] = [
          { appId: "app-a", hostname: "a.localhost", aliases: ["www.a.test"], targets: [a] },
          { appId: "app-b", hostname: "b.localhost", targets: [] },
        ];
        assert.deepEqual(await edge.apply(routes), { skipped: [] });
        const r = await get("a.localhost", "/x?y=1");
        assert.equal(r.status, 200);
        assert.deepEqual(JSON.parse(r.body), { name: "a", path: "/x?y=1" });
        assert.equal((await get("A.LOCALHOST:80")).status, 200);
        assert.equal(nameOf((await get("www.a.test")).body), "a");
        const none = await get("nope.localhost");
        assert.equal(none.status, 404);
        assert.match(none.body, /No app is served/);
        const b = await get("b.localhost");
        assert.equal(b.status, 503);
        assert.match(b.body, /no running instance/);
      }),
    );

    it(
      "balances across an app's targets",
      withEdge(async ({ edge, get }) => {
        const targets = [await started("one"), await started("two")];
        await edge.apply([{ appId: "app-a", hostname: "a.localhost", targets }]);
        const seen = new Set<string>();
        for (let i = 0; i < 10; i++) seen.add(nameOf((await get("a.localhost")).body));
        assert.deepEqual([...seen].sort(), ["one", "two"]);
      }),
    );

    it(
      "each apply is the whole table: a route left out is gone, a new one served, targets switched",
      withEdge(async ({ edge, get }) => {
        const [a, b, c] = [await started("a"), await started("b"), await started("c")];
        await edge.apply([
          { appId: "app-a", hostname: "a.localhost", targets: [a] },
          { appId: "app-b", hostname: "b.localhost", targets: [b] },
        ]);
        await edge.apply([
          { appId: "app-a", hostname: "a.localhost", targets: [c] },
          { appId: "app-c", hostname: "c.localhost", targets: [b] },
        ]);
        assert.equal(nameOf((await get("a.localhost")).body), "c", "switched to the new target");
        assert.equal((await get("b.localhost")).status, 404, "left out: gone");
        assert.equal(nameOf((await get("c.localhost")).body), "b");
        await edge.start(); // running already: adopted, still serving
        assert.equal(nameOf((await get("a.localhost")).body), "c");
      }),
    );

    it(
      "a route it cannot take is skipped with the reason; the others are served",
      withEdge(async ({ edge, get }) => {
        const a = await started("a");
        const { skipped } = await edge.apply([
          { appId: "app-bad", hostname: "bad_name!.localhost", targets: [a] },
          { appId: "app-a", hostname: "a.localhost", targets: [a] },
          { appId: "app-twice", hostname: "a.localhost", targets: [a] },
        ]);
        assert.deepEqual(
          skipped.map((s) => [s.appId, s.hostname]),
          [
            ["app-bad", "bad_name!.localhost"],
            ["app-twice", "a.localhost"],
          ],
        );
        assert.match(skipped[1]?.reason ?? "", /routed to app-a already/);
        assert.equal(nameOf((await get("a.localhost")).body), "a");
      }),
    );

    it(
      "forceHttps: an HTTP request is redirected (301) to the same host and path on HTTPS",
      withEdge(async ({ edge, get, httpsPort }) => {
        const a = await started("a");
        await edge.apply([
          { appId: "app-a", hostname: "a.localhost", targets: [a], forceHttps: true },
          { appId: "app-b", hostname: "b.localhost", targets: [a] },
        ]);
        const r = await get("a.localhost:8000", "/p?q=1");
        assert.equal(r.status, 301);
        const port = httpsPort === 443 ? "" : `:${httpsPort}`;
        assert.equal(r.headers.location, `https://a.localhost${port}/p?q=1`);
        assert.equal((await get("b.localhost")).status, 200, "another app is not redirected");
      }),
    );

    it(
      "certificates: installed ones are listed and served, removed ones are not",
      withEdge(async ({ tls }) => {
        assert.deepEqual(await tls.certificates(), []);
        await tls.installCertificate(cert.name, cert.pem);
        assert.deepEqual(await tls.certificates(), [cert.name]);
        assert.deepEqual(await tls.served(), [cert.name]);
        await tls.removeCertificate(cert.name);
        assert.deepEqual(await tls.certificates(), []);
        assert.deepEqual(await tls.served(), []);
      }),
    );

    it(
      "HTTP-01: a challenge set is answered on any host with its key authorization; removed, it is not",
      withEdge(async ({ edge, tls, get }) => {
        await edge.apply([{ appId: "app-a", hostname: "a.localhost", targets: [] }]);
        await tls.setChallenge("tok-1", "tok-1.thumbprint");
        const r = await get("shop.example.test", "/.well-known/acme-challenge/tok-1");
        assert.deepEqual([r.status, r.body], [200, "tok-1.thumbprint"]);
        assert.equal(
          (await get("a.localhost", "/.well-known/acme-challenge/tok-1")).body,
          "tok-1.thumbprint",
        );
        await tls.removeChallenge("tok-1");
        assert.equal((await get("shop.example.test", "/.well-known/acme-challenge/tok-1")).status, 404);
        assert.equal(
          (await get("a.localhost", "/.well-known/acme-challenge/tok-1")).status,
          503,
          "the app's own",
        );
      }),
    );
  });
}
