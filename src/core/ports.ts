/**
 * The ports between Pier's logic and the outside world. Each has one real adapter in src/adapters
 * and, where unit tests need it, a fake that passes the same conformance suite.
 */

/** One address an instance answers HTTP on (a loopback address of the host). */
export interface RouteTarget {
  host: string;
  port: number;
}

/** `hostname` (e.g. `myapp.localhost`) is served by `targets`, balanced. No target: 503. */
export interface Route {
  appId: string;
  hostname: string;
  targets: RouteTarget[];
}

export interface Edge {
  /** Starts the proxy if it does not run; adopts one that runs already (after a control-plane restart). */
  start(): Promise<void>;
  /**
   * Makes the proxy serve exactly these routes, without dropping a request in flight.
   * A configuration the proxy rejects is not applied (the old one keeps serving) and the call throws.
   */
  apply(routes: readonly Route[]): Promise<void>;
  /** Stops the proxy. `pier server` never calls it on exit: the data plane outlives the control plane. */
  stop(): Promise<void>;
}
