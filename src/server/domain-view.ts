import type { Domain } from "../core/domains.js";
import type { App } from "../core/model.js";
import type { DomainStore } from "../core/ports.js";

/** The custom domains of every app, by app id (what the edge routes besides `<app>.<PIER_DOMAIN>`). */
export async function domainsByApp(store: Pick<DomainStore, "listDomains">): Promise<Map<string, string[]>> {
  const byApp = new Map<string, string[]>();
  for (const d of await store.listDomains()) byApp.set(d.appId, [...(byApp.get(d.appId) ?? []), d.name]);
  return byApp;
}

/** What `pier domain` shows of a domain. */
export interface DomainView {
  name: string;
  app: string;
  source: Domain["source"];
  state: Domain["state"];
  issuer: string | null;
  serial: string | null;
  notAfter: string | null;
  /** When Pier next tries to obtain or renew the certificate by itself (null: a user's certificate). */
  nextAttemptAt: string | null;
  failures: number;
  lastError: string | null;
  url: string;
}

/** The view of a domain of `app` (its HTTPS URL names the port unless 443). */
export function domainView(d: Domain, app: App, httpsPort: number): DomainView {
  const port = httpsPort === 443 ? "" : `:${httpsPort}`;
  return {
    name: d.name,
    app: app.name,
    source: d.source,
    state: d.state,
    issuer: d.issuer,
    serial: d.serial,
    notAfter: d.notAfter,
    nextAttemptAt: d.nextAttemptAt,
    failures: d.failures,
    lastError: d.lastError,
    url: `https://${d.name}${port}`,
  };
}
