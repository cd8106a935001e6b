import { createHash } from "node:crypto";
import type { Route, RouteTarget } from "./ports.js";

/**
 * The HAProxy configuration of Pier's edge, and the runtime commands that switch an app's instances
 * without a reload. Pure and deterministic.
 *
 * Each app has a backend with a fixed number of server slots. A slot holds an instance's address (ready)
 * or nothing (maintenance). A deploy fills free slots with the new instances and puts the old ones in
 * maintenance through HAProxy's runtime API: no reload, so no connection of any app is dropped. Only a
 * change of the set of apps or of a backend's slot count needs a new configuration (a seamless reload).
 */

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const PATH = /^\/[A-Za-z0-9._/-]*$/;

export interface BackendLayout {
  appId: string;
  hostname: string;
  /** One entry per server slot: the instance it sends to, or null (in maintenance). */
  slots: (RouteTarget | null)[];
}

export interface EdgeLayout {
  backends: BackendLayout[];
}

export const backendName = (appId: string) => `app_${appId.replace(/[^A-Za-z0-9_]/g, "_")}`;
export const slotName = (i: number) => `s${i}`;

function check(cond: boolean, message: string): void {
  if (!cond) throw new Error(`edge config: ${message}`);
}

export function validateRoutes(routes: readonly Route[]): void {
  const seen = new Set<string>();
  for (const r of routes) {
    check(HOSTNAME.test(r.hostname), `hostname '${r.hostname}' is not a valid DNS name`);
    check(!seen.has(r.hostname), `hostname '${r.hostname}' is routed twice`);
    seen.add(r.hostname);
    for (const t of r.targets) {
      check(IPV4.test(t.host), `target host '${t.host}' of ${r.hostname} must be an IPv4 address`);
      check(
        Number.isInteger(t.port) && t.port > 0 && t.port < 65536,
        `target port ${t.port} of ${r.hostname} is invalid`,
      );
    }
  }
}

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
      return { appId: r.appId, hostname: r.hostname, slots };
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

/**
 * How to go from `current` to serving `routes` with runtime commands only, or null when the structure
 * changes (apps added or removed, a hostname changed, or not enough free slots): then reload.
 */
export function planRuntimeSwitch(
  current: EdgeLayout,
  routes: readonly Route[],
): { layout: EdgeLayout; steps: RuntimeStep[] } | null {
  validateRoutes(routes);
  if (current.backends.length !== routes.length) return null;
  const steps: RuntimeStep[] = [];
  const backends: BackendLayout[] = [];
  for (const b of current.backends) {
    const r = routes.find((x) => x.appId === b.appId);
    if (!r || r.hostname !== b.hostname) return null;
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
    backends.push({ ...b, slots });
  }
  return { layout: { backends }, steps };
}

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
  /** Absolute directory: pid file, admin socket, hosts map. */
  dir: string;
}

const NO_APP = `<!doctype html><html><head><meta charset=utf-8><title>No app here</title></head><body style='font-family:sans-serif;margin:3em'><h1>No app here</h1><p>No app is served at this address.</p><p><small>Pier</small></p></body></html>`;
const NOT_RUNNING = `<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style='font-family:sans-serif;margin:3em'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>`;

/** The hosts map file: `<hostname> <backend>` per line. */
export function renderHostsMap(layout: EdgeLayout): string {
  return layout.backends.map((b) => `${b.hostname} ${backendName(b.appId)}\n`).join("");
}

export function renderHaproxyConfig(input: HaproxyConfigInput): string {
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
  validateRoutes(input.layout.backends.map((b) => ({ appId: b.appId, hostname: b.hostname, targets: [] })));
  const structure = JSON.stringify(input.layout.backends.map((b) => [b.appId, b.hostname, b.slots.length]));
  const version = createHash("sha256").update(structure).digest("hex").slice(0, 16);
  const lines = [
    "# Rendered by Pier from its route table. Do not edit: the next change overwrites it.",
    "global",
    "  daemon",
    `  pidfile ${dir}/haproxy.pid`,
    `  stats socket ${dir}/admin.sock mode 600 level admin expose-fd listeners`,
    "  hard-stop-after 5m",
    "",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    "  timeout client 65s",
    "  timeout server 300s",
    "  timeout http-request 30s",
    "  timeout http-keep-alive 65s",
    "  timeout queue 30s",
    "  option forwardfor",
    "  option redispatch",
    "  retries 3",
    "  http-reuse safe",
    "",
    "frontend edge",
    `  bind ${input.listenHost}:${input.listenPort}`,
    `  http-request return status 200 content-type text/plain string "${version}" if { path /.pier/edge-version } { req.hdr(host) -m str pier-edge.invalid }`,
    "  http-request set-header X-Forwarded-Proto http",
    "  http-request set-header X-Forwarded-Host %[req.hdr(host)]",
    "  http-request set-header X-Forwarded-Port %[dst_port]",
    "  http-request set-header X-Request-Id %[uuid]",
    `  use_backend %[req.hdr(host),field(1,:),lower,map(${dir}/hosts.map)]`,
    "  default_backend no_app",
    "",
    "backend no_app",
    `  http-request return status 404 content-type text/html string "${NO_APP}"`,
  ];
  for (const b of input.layout.backends) {
    lines.push(
      "",
      `backend ${backendName(b.appId)}`,
      "  balance roundrobin",
      `  http-request return status 503 content-type text/html string "${NOT_RUNNING}" if { nbsrv eq 0 }`,
    );
    b.slots.forEach((s, i) => {
      lines.push(
        s ? `  server ${slotName(i)} ${s.host}:${s.port}` : `  server ${slotName(i)} 127.0.0.1:1 disabled`,
      );
    });
  }
  return `${lines.join("\n")}\n`;
}

/** The version a rendered config answers at /.pier/edge-version: it changes with the structure only. */
export function configVersion(config: string): string | null {
  return /string "([0-9a-f]{16})" if \{ path \/\.pier\/edge-version \}/.exec(config)?.[1] ?? null;
}

/*
 * The nginx configuration of Pier's edge (the NginxEdge adapter): a whole nginx.conf for Pier's own nginx
 * master (`nginx -p <prefix> -c <prefix>/nginx.conf`), never the system's. Routes change by a graceful
 * reload. Pure and deterministic: the same routes give the same text, whatever their order.
 */

export interface NginxConfigInput {
  routes: readonly Route[];
  listenPort: number;
  listenHost: string;
  /** Absolute directory: pid file, error log, temp paths. */
  prefix: string;
  workerProcesses?: number | "auto";
}

/** The Host that reaches the edge's own status server (`/.pier/edge-version`); no app may take it. */
export const EDGE_STATUS_HOST = "pier-edge.invalid";

const nginxPage = (title: string, text: string) =>
  `<!doctype html><html><head><meta charset=utf-8><title>${title}</title></head><body style='font-family:sans-serif;margin:3em'><h1>${title}</h1><p>${text}</p><p><small>Pier</small></p></body></html>\\n`;

const sameTargets = (a: readonly RouteTarget[], b: readonly RouteTarget[]) =>
  a.length === b.length && a.every((t, i) => t.host === b[i]?.host && t.port === b[i]?.port);

/** Sorted, without duplicates: the order of targets does not change the text. */
function sortedTargets(targets: readonly RouteTarget[]): RouteTarget[] {
  const out: RouteTarget[] = [];
  for (const t of [...targets].sort((a, b) =>
    a.host === b.host ? a.port - b.port : a.host < b.host ? -1 : 1,
  )) {
    if (!out.some((o) => o.host === t.host && o.port === t.port)) out.push(t);
  }
  return out;
}

export function renderNginxConfig(input: NginxConfigInput): string {
  const p = input.prefix;
  check(
    PATH.test(p) && !p.split("/").includes(".."),
    `prefix '${p}' must be an absolute path of plain characters`,
  );
  check(
    input.listenHost === "0.0.0.0" || IPV4.test(input.listenHost),
    `listen host '${input.listenHost}' must be an IPv4 address`,
  );
  check(
    Number.isInteger(input.listenPort) && input.listenPort > 0 && input.listenPort < 65536,
    "listen port must be 1..65535",
  );
  const workers = input.workerProcesses ?? "auto";
  check(
    workers === "auto" || (Number.isInteger(workers) && workers > 0 && workers <= 64),
    "worker processes must be 'auto' or 1..64",
  );
  validateRoutes(input.routes);
  check(
    !input.routes.some((r) => r.hostname === EDGE_STATUS_HOST),
    `hostname '${EDGE_STATUS_HOST}' is the edge's own`,
  );

  const listen = `${input.listenHost}:${input.listenPort}`;
  const routes = [...input.routes].sort((a, b) => (a.hostname < b.hostname ? -1 : 1));
  // One upstream per app; an app served at several hostnames shares it. Names that collide once
  // sanitized (`a-b`, `a_b`) get a numbered suffix.
  const upstreams: { appId: string; name: string; targets: RouteTarget[] }[] = [];
  const servers: string[] = [];
  for (const r of routes) {
    const targets = sortedTargets(r.targets);
    const lines = ["  server {", `    listen ${listen};`, `    server_name ${r.hostname};`];
    if (targets.length === 0) {
      lines.push(
        "    default_type text/html;",
        `    location / { return 503 "${nginxPage("App not running", `The app at ${r.hostname} has no running instance. Deploy it, or start it with pier restart.`)}"; }`,
      );
    } else {
      let up = upstreams.find((u) => u.appId === r.appId && sameTargets(u.targets, targets));
      if (!up) {
        const base = backendName(r.appId);
        let name = base;
        for (let n = 1; upstreams.some((u) => u.name === name); n++) name = `${base}_${n}`;
        up = { appId: r.appId, name, targets };
        upstreams.push(up);
      }
      lines.push(`    location / { proxy_pass http://${up.name}; }`);
    }
    lines.push("  }", "");
    servers.push(...lines);
  }

  const body = [
    "# Rendered by Pier from its route table. Do not edit: the next change overwrites it.",
    "daemon on;",
    "master_process on;",
    `worker_processes ${workers};`,
    "worker_rlimit_nofile 16384;",
    // A reload leaves old workers finishing their requests; a long-lived connection cannot keep one for ever.
    "worker_shutdown_timeout 300s;",
    `pid ${p}/nginx.pid;`,
    `lock_file ${p}/nginx.lock;`,
    `error_log ${p}/error.log warn;`,
    "",
    "events {",
    "  worker_connections 4096;",
    "}",
    "",
    "http {",
    "  access_log off;",
    "  server_tokens off;",
    "  tcp_nodelay on;",
    "  keepalive_timeout 65s;",
    "  keepalive_requests 10000;",
    "  client_max_body_size 0;",
    "  large_client_header_buffers 4 16k;",
    // Room for a 253-character hostname per bucket, and for thousands of them.
    "  server_names_hash_bucket_size 512;",
    "  server_names_hash_max_size 16384;",
    `  client_body_temp_path ${p}/tmp/client_body;`,
    `  proxy_temp_path ${p}/tmp/proxy;`,
    `  fastcgi_temp_path ${p}/tmp/fastcgi;`,
    `  uwsgi_temp_path ${p}/tmp/uwsgi;`,
    `  scgi_temp_path ${p}/tmp/scgi;`,
    "",
    // Upgrade (WebSocket) requests keep their Connection header; every other request sends none, so the
    // connections to the instances stay alive.
    '  map $http_upgrade $pier_connection { default upgrade; "" ""; }',
    // A client's own request id is kept when it looks like one (as Heroku does); otherwise nginx makes one.
    '  map $http_x_request_id $pier_request_id { default $request_id; "~^[A-Za-z0-9._:+/=-]{20,200}$" $http_x_request_id; }',
    // Only a plain host name is echoed in the 404 page.
    '  map $host $pier_host { default "this address"; "~^[a-z0-9.-]{1,253}$" $host; }',
    "",
    "  proxy_http_version 1.1;",
    "  proxy_set_header Host $host;",
    "  proxy_set_header Connection $pier_connection;",
    "  proxy_set_header Upgrade $http_upgrade;",
    "  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
    "  proxy_set_header X-Forwarded-Proto $scheme;",
    "  proxy_set_header X-Forwarded-Host $http_host;",
    "  proxy_set_header X-Forwarded-Port $server_port;",
    "  proxy_set_header X-Request-Id $pier_request_id;",
    "  proxy_connect_timeout 5s;",
    "  proxy_send_timeout 300s;",
    "  proxy_read_timeout 300s;",
    // A refused connection (an instance that is retiring) is retried on another instance.
    "  proxy_next_upstream error timeout;",
    "  proxy_next_upstream_tries 3;",
    "  proxy_next_upstream_timeout 15s;",
    // Bodies stream through: no temp file, so the workers never need to write under the prefix.
    "  proxy_request_buffering off;",
    "  proxy_max_temp_file_size 0;",
    // Room for an app's response headers up to 8 KiB (cookies); the body buffers keep nginx's defaults.
    "  proxy_buffer_size 8k;",
    "",
    ...upstreams.flatMap((u) => [
      `  upstream ${u.name} {`,
      "    least_conn;",
      ...u.targets.map((t) => `    server ${t.host}:${t.port} max_fails=1 fail_timeout=5s;`),
      "    keepalive 64;",
      // Shorter than Node's default keepAliveTimeout (5 s): nginx closes an idle connection first.
      "    keepalive_timeout 4s;",
      "  }",
      "",
    ]),
    "  server {",
    `    listen ${listen} default_server backlog=4096;`,
    "    server_name _;",
    "    default_type text/html;",
    `    location / { return 404 "${nginxPage("No app here", "No app is served at $pier_host.")}"; }`,
    "  }",
    "",
    "  server {",
    `    listen ${listen};`,
    `    server_name ${EDGE_STATUS_HOST};`,
    "    default_type text/plain;",
    '    location = /.pier/edge-version { return 200 "@VERSION@\\n"; }',
    "    location / { return 404; }",
    "  }",
    "",
    ...servers,
    "}",
    "",
  ].join("\n");
  const version = createHash("sha256").update(body).digest("hex").slice(0, 16);
  return body.replace("@VERSION@", version);
}

/** The version a rendered nginx config answers at `/.pier/edge-version` (Host `pier-edge.invalid`). */
export function nginxConfigVersion(config: string): string | null {
  return /location = \/\.pier\/edge-version \{ return 200 "([0-9a-f]{16})\\n"; \}/.exec(config)?.[1] ?? null;
}
