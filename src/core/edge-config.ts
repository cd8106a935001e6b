import { createHash } from "node:crypto";
import type { Route } from "./ports.js";

/** The nginx configuration of Pier's edge, rendered from the route table. Pure and deterministic. */

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const PATH = /^\/[A-Za-z0-9._/-]*$/;

export interface EdgeConfigInput {
  routes: readonly Route[];
  listenHost: string;
  listenPort: number;
  /** Absolute directory for the pid file, logs and temp files. */
  prefix: string;
  workerProcesses?: number | "auto";
}

function check(cond: boolean, message: string): void {
  if (!cond) throw new Error(`edge config: ${message}`);
}

const upstreamName = (appId: string) => `app_${appId.replace(/[^A-Za-z0-9_]/g, "_")}`;

const page = (title: string, text: string) =>
  `<!doctype html><html><head><meta charset=utf-8><title>${title}</title></head><body style=\\"font-family:sans-serif;margin:3em\\"><h1>${title}</h1><p>${text}</p><p><small>Pier</small></p></body></html>`;

export function renderNginxConfig(input: EdgeConfigInput): string {
  check(PATH.test(input.prefix), `prefix '${input.prefix}' must be an absolute path of plain characters`);
  check(
    input.listenHost === "0.0.0.0" || IPV4.test(input.listenHost),
    `listen host '${input.listenHost}' must be an IPv4 address`,
  );
  check(
    Number.isInteger(input.listenPort) && input.listenPort > 0 && input.listenPort < 65536,
    "listen port must be 1..65535",
  );
  const routes = [...input.routes].sort((a, b) => a.hostname.localeCompare(b.hostname));
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
  const listen = `${input.listenHost}:${input.listenPort}`;
  const p = input.prefix;
  const lines: string[] = [
    "# Rendered by Pier from its route table. Do not edit: the next change overwrites it.",
    `worker_processes ${input.workerProcesses ?? "auto"};`,
    `pid ${p}/nginx.pid;`,
    `error_log ${p}/error.log warn;`,
    "worker_rlimit_nofile 16384;",
    "events { worker_connections 4096; multi_accept on; }",
    "http {",
    "  access_log off;",
    "  server_tokens off;",
    "  sendfile on;",
    "  tcp_nodelay on;",
    "  keepalive_timeout 65s;",
    "  keepalive_requests 10000;",
    "  client_max_body_size 100m;",
    "  server_names_hash_bucket_size 128;",
    `  client_body_temp_path ${p}/tmp/body;`,
    `  proxy_temp_path ${p}/tmp/proxy;`,
    `  fastcgi_temp_path ${p}/tmp/fastcgi;`,
    `  uwsgi_temp_path ${p}/tmp/uwsgi;`,
    `  scgi_temp_path ${p}/tmp/scgi;`,
    "  proxy_http_version 1.1;",
    '  proxy_set_header Connection "";',
    "  proxy_set_header Host $http_host;",
    "  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
    "  proxy_set_header X-Forwarded-Proto $scheme;",
    "  proxy_set_header X-Forwarded-Host $host;",
    "  proxy_set_header X-Forwarded-Port $server_port;",
    "  proxy_set_header X-Request-Id $request_id;",
    "  proxy_connect_timeout 5s;",
    "  proxy_read_timeout 300s;",
    "  proxy_send_timeout 300s;",
    "  proxy_buffering on;",
    "  proxy_next_upstream error timeout;",
    "  proxy_next_upstream_tries 3;",
    "  default_type text/html;",
    "",
    "  server {",
    `    listen ${listen} default_server reuseport backlog=4096;`,
    "    server_name _;",
    `    location = /.pier/edge-version { default_type text/plain; return 200 "$pier_edge_version"; }`,
    `    location / { return 404 "${page("No app here", "No app is served at $host.")}"; }`,
    "  }",
  ];
  for (const r of routes) {
    lines.push("");
    if (r.targets.length > 0) {
      const up = upstreamName(r.appId);
      lines.splice(lines.indexOf("  server {"), 0, `  upstream ${up} {`, "    least_conn;");
      const at = lines.indexOf("  server {");
      const servers = [...r.targets]
        .sort((a, b) => a.host.localeCompare(b.host) || a.port - b.port)
        .map((t) => `    server ${t.host}:${t.port} max_fails=1 fail_timeout=2s;`);
      lines.splice(at, 0, ...servers, "    keepalive 64;", "  }", "");
      lines.push(
        "  server {",
        `    listen ${listen};`,
        `    server_name ${r.hostname};`,
        `    location / { proxy_pass http://${up}; }`,
        "  }",
      );
    } else {
      lines.push(
        "  server {",
        `    listen ${listen};`,
        `    server_name ${r.hostname};`,
        `    location / { return 503 "${page("App not running", `The app at $host has no running instance.`)}"; }`,
        "  }",
      );
    }
  }
  lines.push("}");
  const body = lines.join("\n");
  const version = createHash("sha256").update(body).digest("hex").slice(0, 16);
  return `${body.replace("http {", `http {\n  map "" $pier_edge_version { default "${version}"; }`)}\n`;
}

/** The version string a rendered config answers at /.pier/edge-version. */
export function configVersion(config: string): string | null {
  return /\$pier_edge_version \{ default "([0-9a-f]+)"; \}/.exec(config)?.[1] ?? null;
}
