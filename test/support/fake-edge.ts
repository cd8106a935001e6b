/**
 * The one fake edge of the unit tests (ADR 0027): it keeps the route table it was given and answers a
 * request as Pier's HAProxy does (route by Host, 404 for no app, 503 for no instance, the redirect to HTTPS,
 * ACME's HTTP-01 answers), forwarding to the targets round-robin. It passes the Edge conformance suite
 * (test/conformance/edge.ts) that the HAProxy edge passes.
 */
import { request } from "node:http";
import { partitionRoutes } from "../../src/core/edge-config.js";
import { PierError } from "../../src/core/errors.js";
import type { Edge, Route, SkippedRoute, TlsEdge } from "../../src/core/ports.js";

export interface EdgeAnswer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

const page = (title: string, text: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`;

/** GET `path` from a target, with `host` as its Host header. */
function forward(target: { host: string; port: number }, host: string, path: string): Promise<EdgeAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target, path, headers: { host }, agent: false }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => {
        body += c.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on("error", () =>
      resolve({ status: 503, body: page("App not running", "no running instance"), headers: {} }),
    );
    req.on("timeout", () => reject(new Error("timeout")));
    req.end();
  });
}

/** The edge's TLS side, in memory: certificates by name, challenge answers by token. */
export class FakeTls implements TlsEdge {
  readonly certs = new Map<string, string>();
  readonly challenges = new Map<string, string>();
  installs = 0;
  /** Refuse every certificate, as HAProxy refuses one it cannot load. */
  refuse = false;

  async installCertificate(name: string, pem: string): Promise<void> {
    if (this.refuse) throw new PierError("EDGE_ERROR", "HAProxy refused to serve the certificate");
    this.installs++;
    this.certs.set(name, pem);
  }
  async removeCertificate(name: string): Promise<void> {
    this.certs.delete(name);
  }
  async certificates(): Promise<string[]> {
    return [...this.certs.keys()];
  }
  async served(): Promise<string[]> {
    return [...this.certs.keys()];
  }
  async setChallenge(token: string, keyAuthorization: string): Promise<void> {
    this.challenges.set(token, keyAuthorization);
  }
  async removeChallenge(token: string): Promise<void> {
    this.challenges.delete(token);
  }
}

export class FakeEdge implements Edge {
  /** The routes served now (copies of those applied, bad ones left out). */
  served: Route[] = [];
  /** The next apply() throws, as when HAProxy refuses a configuration (the old one keeps serving). */
  failNext = false;
  private running = false;
  private turn = 0;

  /** `https`: the HTTPS side's port, when the edge has one (the redirect of forceHttps names it). */
  constructor(readonly opts: { tls?: FakeTls; httpsPort?: number } = {}) {}

  async start(): Promise<void> {
    this.running = true;
  }

  async stop(): Promise<void> {
    this.running = false;
  }

  async apply(routes: readonly Route[]): Promise<{ skipped: SkippedRoute[] }> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error("edge: HAProxy refused a route change");
    }
    const { ok, skipped } = partitionRoutes(routes);
    this.served = ok.map((r) => ({ ...r, targets: [...r.targets], aliases: [...(r.aliases ?? [])] }));
    return { skipped };
  }

  /** A GET through the edge's HTTP side, with this Host header. */
  async get(host: string, path = "/"): Promise<EdgeAnswer> {
    if (!this.running) throw new Error("connect ECONNREFUSED: the edge does not run");
    const challenge = /^\/\.well-known\/acme-challenge\/([^/]+)$/.exec(path)?.[1];
    const answer = challenge === undefined ? undefined : this.opts.tls?.challenges.get(challenge);
    if (answer !== undefined && this.opts.httpsPort !== undefined)
      return { status: 200, body: answer, headers: {} };
    const name = (host.split(":")[0] ?? "").toLowerCase();
    const r = this.served.find((x) => x.hostname === name || x.aliases?.includes(name));
    if (!r)
      return { status: 404, body: page("No app here", "No app is served at this address."), headers: {} };
    if (r.forceHttps && this.opts.httpsPort !== undefined) {
      const port = this.opts.httpsPort === 443 ? "" : `:${this.opts.httpsPort}`;
      return { status: 301, body: "", headers: { location: `https://${name}${port}${path}` } };
    }
    const target = r.targets[this.turn++ % Math.max(1, r.targets.length)];
    if (!target) return { status: 503, body: page("App not running", "no running instance"), headers: {} };
    return forward(target, host, path);
  }
}
