/** What the /v1 API answers, as far as the console reads it (docs/api.md). */
export interface App {
  id: string;
  name: string;
  type: string;
  flavor: string;
  buildFlavor: string;
  instances: number;
  task: string | null;
  stopped: boolean;
  createdAt: string;
  gitUrl: string;
  url: string;
}

/** An app as `GET /v1/apps` lists it: with its status, read for all apps at once by the server. */
export interface ListedApp extends App {
  status: {
    state: string;
    release: { id: string; number: number; commit: string; createdAt: string } | null;
    running: number;
    total: number;
  } | null;
}

/** A custom domain and its certificate (`GET /v1/apps/:app/domains`). */
export interface DomainView {
  name: string;
  app: string;
  source: "acme" | "user";
  state: "pending" | "issued" | "failed";
  issuer: string | null;
  serial: string | null;
  notAfter: string | null;
  nextAttemptAt: string | null;
  failures: number;
  lastError: string | null;
  url: string;
}

export interface Deployment {
  id: string;
  state: "queued" | "building" | "deploying" | "succeeded" | "failed" | "cancelled";
  commit: string;
  cause: string;
  withoutCache: boolean;
  reason: string | null;
  createdAt: string;
  buildingAt: string | null;
  deployingAt: string | null;
  finishedAt: string | null;
}

export interface Instance {
  number: number;
  id: string;
  state: string;
  startedAt: string | null;
  restarts: number;
  lastExit: { code: number; at: string } | null;
  address: string | null;
}

export interface Status {
  app: App;
  state: string;
  release: { id: string; number: number; commit: string; createdAt: string } | null;
  deployment: Deployment | null;
  instances: Instance[];
  tcp: unknown;
  routeProblem: string | null;
}

export interface Release {
  id: string;
  number: number;
  deploymentId: string;
  commit: string;
  createdAt: string;
  current: boolean;
}

export interface Addon {
  id: string;
  name: string;
  kind: string;
  flavor: string;
  apps: string[];
  createdAt: string;
}

export interface Links {
  addons: { id: string; name: string; kind: string }[];
  apps: { id: string; name: string }[];
}

export interface LinkedVariable {
  name: string;
  value: string;
  source: { kind: "addon" | "app"; name: string };
}

export interface EnvAnswer {
  vars: Record<string, string>;
  linked?: LinkedVariable[];
}

export interface Whoami {
  name: string;
  app: { id: string; name: string } | null;
  readOnly: boolean;
  admin: boolean;
}

export interface Info {
  version: string;
  domain: string;
  httpPort: number;
  sshPort: number;
  gitHost: string;
}

export { FLAVORS, RUNTIMES, TERMINAL_STATES } from "../core/model.js";
