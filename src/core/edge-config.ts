import { createHash } from "node:crypto";
import { hostnameProblem } from "./names.js";
import type { Route, RouteTarget, SkippedRoute } from "./ports.js";

/**
 * The HAProxy configuration of Pier's edge, and the runtime commands that switch an app's instances
 * without a reload. Pure and deterministic.
 *
 * Each app has a backend with a fixed number of server slots. A slot holds an instance's address (ready)
 * or nothing (maintenance). A deploy fills free slots with the new instances and puts the old ones in
 * maintenance through HAProxy's runtime API: no reload, so no connection of any app is dropped. Only a
 * change of the set of apps or of a backend's slot count needs a new configuration (a seamless reload).
 */

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const PATH = /^\/[A-Za-z0-9._/-]*$/;

export interface BackendLayout {
  appId: string;
  hostname: string;
  /** One entry per server slot: the instance it sends to, or null (in maintenance). */
  slots: (RouteTarget | null)[];
  /** Custom domains routed to the app too (absent in layouts written before them). */
  aliases?: string[];
  /** HTTP requests are redirected to HTTPS. */
  forceHttps?: boolean;
}

export interface EdgeLayout {
  backends: BackendLayout[];
}

export const backendName = (appId: string) => `app_${appId.replace(/[^A-Za-z0-9_]/g, "_")}`;
export const slotName = (i: number) => `s${i}`;

function check(cond: boolean, message: string): void {
  if (!cond) throw new Error(`edge config: ${message}`);
}

/** Why the edge cannot take this route (its host name or a target), or null. */
export function routeProblem(r: Route): string | null {
  const bad = hostnameProblem(r.hostname);
  if (bad) return bad;
  for (const a of r.aliases ?? []) {
    const badAlias = hostnameProblem(a);
    if (badAlias) return badAlias;
  }
  for (const t of r.targets) {
    if (!IPV4.test(t.host)) return `target host '${t.host}' of ${r.hostname} must be an IPv4 address`;
    if (!Number.isInteger(t.port) || t.port <= 0 || t.port >= 65536)
      return `target port ${t.port} of ${r.hostname} is invalid`;
  }
  return null;
}

/**
 * The routes the edge can take, and those it cannot (skipped, with the reason): one app's bad route
 * never keeps the others from being served. Of two routes for one host name, the first is kept.
 */
export function partitionRoutes(routes: readonly Route[]): { ok: Route[]; skipped: SkippedRoute[] } {
  const ok: Route[] = [];
  const skipped: SkippedRoute[] = [];
  const seen = new Map<string, string>();
  for (const r of routes) {
    const names = [r.hostname, ...(r.aliases ?? [])];
    const taken = names.find((n, i) => seen.has(n) || names.indexOf(n) !== i);
    const reason =
      routeProblem(r) ??
      (taken !== undefined ? `hostname '${taken}' is routed to ${seen.get(taken) ?? r.appId} already` : null);
    if (reason) skipped.push({ appId: r.appId, hostname: r.hostname, reason });
    else {
      for (const n of names) seen.set(n, r.appId);
      ok.push(r);
    }
  }
  return { ok, skipped };
}

/** Throws on the first route the edge cannot take (the layout functions only get checked routes). */
export function validateRoutes(routes: readonly Route[]): void {
  const { skipped } = partitionRoutes(routes);
  check(skipped.length === 0, skipped[0]?.reason ?? "");
}

/** The layout's record of a route's custom domains and redirect. */
const extras = (r: Route) => ({ aliases: [...(r.aliases ?? [])].sort(), forceHttps: r.forceHttps === true });

/** The redirect is a line of the backend's configuration; domains are lines of the hosts map only. */
const sameStructure = (b: BackendLayout, r: Route) => (b.forceHttps === true) === extras(r).forceHttps;

const sameTarget = (a: RouteTarget | null, b: RouteTarget) =>
  a !== null && a.host === b.host && a.port === b.port;

/** Slots for `n` targets: room for a whole second set, so a deploy never needs a reload. */
export const slotCount = (n: number) => Math.max(2, 2 * n);

/** A new layout for the routes, from scratch (used when the structure changes). */
export function layoutFor(routes: readonly Route[], previous?: EdgeLayout): EdgeLayout {
  validateRoutes(routes);
  const backends = [...routes]
    .sort((a, b) => a.hostname.localeCompare(b.hostname))
    .map((r) => {
      const old = previous?.backends.find((b) => b.appId === r.appId);
      const size = Math.max(slotCount(r.targets.length), old?.slots.length ?? 0);
      const slots: (RouteTarget | null)[] = Array.from({ length: size }, () => null);
      // Targets keep the slots they had, so connections in flight keep their server.
      const rest: RouteTarget[] = [];
      for (const t of r.targets) {
        const at = old?.slots.findIndex((s) => sameTarget(s, t)) ?? -1;
        if (at >= 0 && slots[at] === null) slots[at] = t;
        else rest.push(t);
      }
      for (const t of rest) slots[slots.indexOf(null)] = t;
      return { appId: r.appId, hostname: r.hostname, slots, ...extras(r) };
    });
  return { backends };
}

export interface RuntimeStep {
  backend: string;
  slot: string;
  /** `ready` with an address, or `maint`. */
  state: "ready" | "maint";
  target: RouteTarget | null;
}

/** A custom domain taken out of the hosts map (`del`) or put in it, to a backend (`add`). */
export interface HostStep {
  op: "add" | "del";
  host: string;
  backend: string;
}

/**
 * How to go from `current` to serving `routes` with runtime commands only, or null when the structure
 * changes (apps added or removed, a hostname or the redirect changed, or not enough free slots): then
 * reload. A custom domain added or removed is a line of the hosts map (`hosts`: all removals first, so a
 * domain moving between apps is never routed twice), whatever the number of apps.
 */
export function planRuntimeSwitch(
  current: EdgeLayout,
  routes: readonly Route[],
): { layout: EdgeLayout; steps: RuntimeStep[]; hosts: HostStep[] } | null {
  validateRoutes(routes);
  if (current.backends.length !== routes.length) return null;
  const steps: RuntimeStep[] = [];
  const backends: BackendLayout[] = [];
  const dels: HostStep[] = [];
  const adds: HostStep[] = [];
  for (const b of current.backends) {
    const r = routes.find((x) => x.appId === b.appId);
    if (!r || r.hostname !== b.hostname || !sameStructure(b, r)) return null;
    const before = b.aliases ?? [];
    const after = extras(r).aliases;
    const backend = backendName(b.appId);
    for (const host of before) if (!after.includes(host)) dels.push({ op: "del", host, backend });
    for (const host of after) if (!before.includes(host)) adds.push({ op: "add", host, backend });
    const slots = [...b.slots];
    const wanted = r.targets;
    const fresh = wanted.filter((t) => !slots.some((s) => sameTarget(s, t)));
    const free = slots.map((s, i) => (s === null ? i : -1)).filter((i) => i >= 0);
    if (fresh.length > free.length) return null;
    // First bring the new instances in, then take the old ones out.
    fresh.forEach((t, k) => {
      const i = free[k]!;
      slots[i] = t;
      steps.push({ backend: backendName(b.appId), slot: slotName(i), state: "ready", target: t });
    });
    slots.forEach((s, i) => {
      if (s !== null && !wanted.some((t) => sameTarget(s, t))) {
        slots[i] = null;
        steps.push({ backend: backendName(b.appId), slot: slotName(i), state: "maint", target: null });
      }
    });
    backends.push({ ...b, slots, aliases: after });
  }
  return { layout: { backends }, steps, hosts: [...dels, ...adds] };
}

/** The runtime API command of a hosts map change (`map`: the hosts map file HAProxy loaded). */
export const hostCommand = (step: HostStep, map: string) =>
  step.op === "del" ? `del map ${map} ${step.host}` : `add map ${map} ${step.host} ${step.backend}`;

/** The runtime API commands of one step. */
export function runtimeCommands(step: RuntimeStep): string[] {
  const id = `${step.backend}/${step.slot}`;
  if (step.state === "maint" || !step.target) return [`set server ${id} state maint`];
  return [
    `set server ${id} addr ${step.target.host} port ${step.target.port}`,
    `set server ${id} state ready`,
  ];
}

export interface HaproxyConfigInput {
  layout: EdgeLayout;
  listenHost: string;
  listenPort: number;
  /** Absolute directory: pid file, admin socket, hosts map, acme.map, tls/. */
  dir: string;
  /** The HTTPS frontend (ADR 0018): certificates in <dir>/tls (default.pem, then those of certs.list). */
  https?: { host: string; port: number };
  /** Concurrent connections one source address may hold on the edge (ADR 0024); default MAX_CONN_PER_SOURCE. */
  maxConnPerSource?: number;
}

/** The default of PIER_EDGE_MAX_CONN_PER_SOURCE: well under HAProxy's maxconn (about 10,000 here). */
export const MAX_CONN_PER_SOURCE = 256;

/** The TLS 1.2 ciphers of the HTTPS frontend: ECDHE key exchange, AES-GCM or ChaCha20-Poly1305. */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

/** Where the edge's certificates are: the default one (unknown SNI), and the list of the domains' ones. */
export const tlsPaths = (dir: string) => ({
  dir: `${dir}/tls`,
  defaultCert: `${dir}/tls/default.pem`,
  crtList: `${dir}/tls/certs.list`,
  cert: (name: string) => `${dir}/tls/${name}.pem`,
});

const NO_APP = `<!doctype html><html><head><meta charset=utf-8><title>No app here</title></head><body style='font-family:sans-serif;margin:3em'><h1>No app here</h1><p>No app is served at this address.</p><p><small>Pier</small></p></body></html>`;
const NOT_RUNNING = `<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style='font-family:sans-serif;margin:3em'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>`;

/** The hosts map file: `<hostname> <backend>` per line. */
export function renderHostsMap(layout: EdgeLayout): string {
  return layout.backends
    .flatMap((b) => [b.hostname, ...(b.aliases ?? [])].map((h) => `${h} ${backendName(b.appId)}\n`))
    .join("");
}

/** The stick table that counts each source's connections, shared by both frontends (ADR 0024). */
const PER_SOURCE = "per_source";

/**
 * The first lines of a frontend: each connection is counted against its source (an IPv4 address, or the /64
 * of an IPv6 one: one IPv6 client holds a whole /64), and refused at once past `max` open at a time, so one
 * client holding idle connections never takes every slot of HAProxy's maxconn.
 */
const perSourceLimit = (max: number) => [
  `  tcp-request connection track-sc0 src,ipmask(32,64) table ${PER_SOURCE}`,
  `  tcp-request connection reject if { sc0_conn_cur(${PER_SOURCE}) gt ${max} }`,
];

/**
 * The lines of a frontend that set the forwarded headers and pick the backend by host; first, requests that
 * are not idempotent (POST, PATCH, ...) are never retried on another connection (`retry-on` in defaults).
 * The edge is the first proxy a client meets: whatever a client says in X-Forwarded-For, X-Real-IP or
 * Forwarded is replaced with what the edge saw (the connection's source; the edge binds IPv4 only, so the
 * address needs no quoting in Forwarded).
 */
const hostRouting = (proto: "http" | "https", dir: string) => [
  "  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }",
  "  http-request set-header X-Forwarded-For %[src]",
  "  http-request set-header X-Real-IP %[src]",
  `  http-request set-header Forwarded for=%[src];proto=${proto}`,
  `  http-request set-header X-Forwarded-Proto ${proto}`,
  "  http-request set-header X-Forwarded-Host %[req.hdr(host)]",
  "  http-request set-header X-Forwarded-Port %[dst_port]",
  `  use_backend %[req.hdr(host),field(1,:),lower,map(${dir}/hosts.map)]`,
  "  default_backend no_app",
];

/** Refuses an input HAProxy would misread: paths, addresses and ports, routes, the per-source cap. */
function checkConfigInput(input: HaproxyConfigInput, maxConn: number): void {
  const { dir } = input;
  check(PATH.test(dir), `directory '${dir}' must be an absolute path of plain characters`);
  check(
    input.listenHost === "0.0.0.0" || IPV4.test(input.listenHost),
    `listen host '${input.listenHost}' must be an IPv4 address`,
  );
  check(
    Number.isInteger(input.listenPort) && input.listenPort > 0 && input.listenPort < 65536,
    "listen port must be 1..65535",
  );
  validateRoutes(
    input.layout.backends.map((b) => ({
      appId: b.appId,
      hostname: b.hostname,
      aliases: b.aliases,
      targets: [],
    })),
  );
  const https = input.https;
  if (https) {
    check(
      https.host === "0.0.0.0" || IPV4.test(https.host),
      `https host '${https.host}' must be an IPv4 address`,
    );
    check(
      Number.isInteger(https.port) && https.port > 0 && https.port < 65536 && https.port !== input.listenPort,
      "https port must be 1..65535 and not the HTTP port",
    );
  }
  check(Number.isInteger(maxConn) && maxConn >= 1, "connections per source must be a positive integer");
}

/** The config's version: a hash of its structure (custom domains change through the runtime API instead). */
function structureVersion(input: HaproxyConfigInput, maxConn: number): string {
  const structure = JSON.stringify([
    input.layout.backends.map((b) => [b.appId, b.hostname, b.slots.length, b.forceHttps === true]),
    input.https ?? null,
    maxConn,
  ]);
  return createHash("sha256").update(structure).digest("hex").slice(0, 16);
}

/** The global and defaults sections. */
function globalSection(input: HaproxyConfigInput): string[] {
  const { dir } = input;
  return [
    "global",
    "  daemon",
    `  pidfile ${dir}/haproxy.pid`,
    `  stats socket ${dir}/admin.sock mode 600 level admin expose-fd listeners`,
    "  hard-stop-after 5m",
    // TLS 1.2 with forward secrecy and AEAD ciphers only (Mozilla's "intermediate" list without DHE): OpenSSL's
    // default also took CBC ciphers with SHA-1 and, for RSA certificates, RSA key exchange. TLS 1.3's suites
    // are all strong (OpenSSL's default).
    ...(input.https ? [`  ssl-default-bind-ciphers ${TLS12_CIPHERS}`] : []),
    "",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    "  timeout client 65s",
    "  timeout server 300s",
    "  timeout http-request 30s",
    "  timeout http-keep-alive 65s",
    "  timeout queue 30s",
    "  option redispatch",
    // Six, not HAProxy's 3: a retry of a request sent on an idle connection the app was closing takes another
    // idle connection, which under load may be closing too (the worst-case app in edge-haproxy.test.ts: 4
    // dead ones in a row, 44 of 18,000 GETs with 3; 1 with 6; 0 with 10). nginx does not count a failure on
    // a cached connection as a try at all. A refused connection to a lone instance waits 1 s per retry; an
    // app with several instances, or an instance the edge put in maintenance, is retried on another at once.
    "  retries 6",
    // A request takes any idle connection to its server, the first of a new client connection too (nginx
    // with upstream keepalive does the same): with `safe` each new client connection opened one to the app
    // (through docker-proxy): over 40% of the CPU of a short HTTPS visit (ADR 0018). An idle connection the
    // app closes at the very moment it is taken gets the request retried on another, for idempotent methods
    // only (the rule in hostRouting): a retried POST could run twice.
    "  http-reuse always",
    "  retry-on conn-failure empty-response",
    // Each part of a streamed response (server-sent events, a flushed page) goes out as it comes: without
    // it HAProxy held every part but the last for about 200 ms (MSG_MORE), waiting for more.
    "  option http-no-delay",
    "",
  ];
}

/** The HTTP frontend, and the HTTPS one when the edge serves HTTPS. */
function frontendSections(input: HaproxyConfigInput, version: string, maxConn: number): string[] {
  const { dir, https } = input;
  const tls = tlsPaths(dir);
  return [
    "frontend edge",
    `  bind ${input.listenHost}:${input.listenPort}`,
    ...perSourceLimit(maxConn),
    `  http-request return status 200 content-type text/plain string "${version}" if { path /.pier/edge-version } { req.hdr(host) -m str pier-edge.invalid }`,
    // ACME's HTTP-01 answers, from a map the control plane changes through the runtime API (ADR 0018).
    ...(https
      ? [
          `  http-request return status 200 content-type text/plain lf-string "%[path,field(4,/),map(${dir}/acme.map)]" if { path_beg /.well-known/acme-challenge/ } { path,field(4,/),map(${dir}/acme.map) -m found }`,
        ]
      : []),
    ...hostRouting("http", dir),
    "",
    ...(https
      ? [
          "frontend edge_tls",
          `  bind ${https.host}:${https.port} ssl crt ${tls.defaultCert} crt-list ${tls.crtList} alpn h2,http/1.1 ssl-min-ver TLSv1.2`,
          ...perSourceLimit(maxConn),
          ...hostRouting("https", dir),
          "",
        ]
      : []),
  ];
}

/** An app's backend: its 503 page, the redirect to HTTPS if forced, one server line per slot. */
function appBackend(
  b: HaproxyConfigInput["layout"]["backends"][number],
  https: HaproxyConfigInput["https"],
): string[] {
  const lines: string[] = [
    "",
    `backend ${backendName(b.appId)}`,
    "  balance roundrobin",
    // The page of a backend without a usable server is HAProxy's own 503, not a rule on `nbsrv`: during a
    // seamless reload the old process counts its backends' servers as 0 while it still answers requests
    // it had accepted, and such a rule made every reload (any app's create or delete) answer a few
    // requests of every app with this page.
    `  http-error status 503 content-type text/html string "${NOT_RUNNING}"`,
  ];
  if (b.forceHttps && https) {
    const port = https.port === 443 ? "" : `:${https.port}`;
    lines.push(
      `  http-request redirect location https://%[req.hdr(host),field(1,:)]${port}%[capture.req.uri] code 301 unless { ssl_fc }`,
    );
  }
  b.slots.forEach((s, i) => {
    lines.push(
      s ? `  server ${slotName(i)} ${s.host}:${s.port}` : `  server ${slotName(i)} 127.0.0.1:1 disabled`,
    );
  });
  return lines;
}

export function renderHaproxyConfig(input: HaproxyConfigInput): string {
  const maxConn = input.maxConnPerSource ?? MAX_CONN_PER_SOURCE;
  checkConfigInput(input, maxConn);
  const version = structureVersion(input, maxConn);
  const lines = [
    "# Rendered by Pier from its route table. Do not edit: the next change overwrites it.",
    ...globalSection(input),
    ...frontendSections(input, version, maxConn),
    // One entry per source with open connections (at most maxconn of them), kept a minute after the last one.
    `backend ${PER_SOURCE}`,
    "  stick-table type ipv6 size 100k expire 60s store conn_cur",
    "",
    "backend no_app",
    `  http-request return status 404 content-type text/html string "${NO_APP}"`,
  ];
  for (const b of input.layout.backends) lines.push(...appBackend(b, input.https));
  return `${lines.join("\n")}\n`;
}

/** The version a rendered config answers at /.pier/edge-version: it changes with the structure only. */
export function configVersion(config: string): string | null {
  return /string "([0-9a-f]{16})" if \{ path \/\.pier\/edge-version \}/.exec(config)?.[1] ?? null;
}
