// The nginx configuration that phpserver writes (`phpserver config`, the same flags as php-server): what PHP
// sees through it in classic mode ($_SERVER's SERVER_NAME, REQUEST_SCHEME) and how a client that leaves is
// passed on to PHP (connection_aborted()), in both modes.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const PHPSERVER = fileURLToPath(new URL("../../../../src/phpserver/phpserver", import.meta.url));
const dirs: string[] = [];

async function config(args: string[], env: Record<string, string> = {}): Promise<string> {
  const run = mkdtempSync(join(tmpdir(), "phpserver-"));
  dirs.push(run);
  const { stdout } = await promisify(execFile)("bash", [PHPSERVER, "config", ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PHPSERVER_RUN_DIR: run, ...env },
  });
  return stdout;
}

/** The directives of the block that starts with `head` (up to its closing brace), comments left out. */
function block(conf: string, head: string): string[] {
  const at = conf.indexOf(head);
  assert.ok(at >= 0, `no ${head} in:\n${conf}`);
  const lines: string[] = [];
  let depth = 0;
  for (const raw of conf.slice(at).split("\n")) {
    const line = raw.trim();
    depth += (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;
    if (line && !line.startsWith("#")) lines.push(line);
    if (depth <= 0 && lines.length > 0) break;
  }
  return lines;
}

describe("phpserver's nginx configuration", () => {
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("classic mode: SERVER_NAME is the requested host, REQUEST_SCHEME follows X-Forwarded-Proto (after fastcgi_params, whose later values php-fpm keeps)", async () => {
    const php = block(await config(["--root", "/tmp"]), "location ~ [^/]\\.php");
    const include = php.indexOf("include /etc/nginx/fastcgi_params;");
    assert.ok(include >= 0);
    for (const param of [
      "fastcgi_param SERVER_NAME $host;",
      "fastcgi_param REQUEST_SCHEME $fwd_scheme;",
      "fastcgi_param HTTP_HOST $http_host if_not_empty;",
    ]) {
      assert.ok(php.indexOf(param) > include, `${param} comes after fastcgi_params`);
    }
  });

  it("classic mode: what PHP flushes is passed on unbuffered, and a client that leaves closes php-fpm's connection", async () => {
    const conf = await config(["--root", "/tmp"]);
    const php = block(conf, "location ~ [^/]\\.php");
    assert.ok(php.includes("fastcgi_buffering off;"));
    assert.doesNotMatch(conf, /fastcgi_ignore_client_abort\s+on/);
  });

  it("worker mode: every dynamic request goes to the workers, a client that leaves closes the worker's connection", async () => {
    const conf = await config(["--root", "/tmp", "--worker", "/tmp/worker.php,2"]);
    const worker = block(conf, "location @worker");
    assert.match(worker.join("\n"), /proxy_pass http:\/\/unix:.*\/worker\.sock;/);
    for (const h of ["Remote-Addr", "Remote-Port", "Protocol", "Https", "Server-Port", "Server-Addr"]) {
      assert.ok(
        worker.some((l) => l.startsWith(`proxy_set_header X-Phpserver-${h} `)),
        `X-Phpserver-${h} is passed to the worker`,
      );
    }
    assert.doesNotMatch(conf, /proxy_ignore_client_abort\s+on/);
    assert.deepEqual(block(conf, "location / "), ["location / { try_files $uri @worker; }"]);
  });

  it("refuses what it cannot serve, naming it", async () => {
    await assert.rejects(config(["--mercure"]), /--mercure: this phpserver serves no Mercure hub/);
    await assert.rejects(config(["--listen", "nope:x"]), /--listen nope:x: not an address/);
  });
});
