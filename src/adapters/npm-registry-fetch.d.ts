// The part of npm-registry-fetch (it ships no types) that src/adapters/npm-registry.ts uses.
declare module "npm-registry-fetch" {
  import type { Readable } from "node:stream";

  interface FetchOptions {
    headers?: Record<string, string>;
    /** Certificates trusted for TLS (replaces Node's roots: pass them too). */
    ca?: string | string[];
    /** The proxy for every request (http:// or https:// URL); null: none. */
    proxy?: string | null;
    /** Hosts (comma-separated, suffix match) reached without the proxy. */
    noProxy?: string;
    retry?: { retries: number; factor: number; minTimeout: number; maxTimeout: number };
    timeout?: number;
    /** Subresource Integrity the body must match: the body stream errors with EINTEGRITY otherwise. */
    integrity?: string;
    signal?: AbortSignal;
  }

  interface FetchResponse {
    status: number;
    url: string;
    body: Readable;
    json(): Promise<unknown>;
  }

  function fetch(uri: string, opts?: FetchOptions): Promise<FetchResponse>;
  namespace fetch {
    export type Options = FetchOptions;
    export type Response = FetchResponse;
  }
  export default fetch;
}
