// Add-ons and links end to end (issue 9): a Node.js app linked to a kv add-on writes and reads a key over
// the Redis protocol (port 6378, the token as password), one linked to postgresql creates a table and reads
// it back (the `pg` package from the npm registry), a PHP app reaches a mysql add-on (MariaDB) with mysqli
// and pdo_mysql, an app linked to another sees its published variables,
// unlinking removes them at the next restart; only linked apps reach an add-on; secrets are masked; bad
// input gets clear errors; backups restore exactly; the data survives a restart of pier server.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";

const PKG = `${JSON.stringify({ name: "linked", version: "1.0.0", scripts: { start: "node server.js" }, dependencies: { pg: "8.13.1" } }, null, 2)}\n`;

// The Redis protocol in a few lines: AUTH, then one command; the answer's first line.
const SERVER = `
const http = require("http");
const net = require("net");
const { Client } = require("pg");
const resp = (args) => "*" + args.length + "\\r\\n" + args.map((a) => "$" + Buffer.byteLength(a) + "\\r\\n" + a + "\\r\\n").join("");
function kv(host, port, password, cmd) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port: Number(port) });
    let buf = "";
    const t = setTimeout(() => { s.destroy(); resolve("ERR timeout"); }, 4000);
    s.on("error", (e) => { clearTimeout(t); resolve("ERR " + e.code); });
    s.on("connect", () => s.write(resp(["AUTH", password]) + resp(cmd)));
    s.on("data", (d) => {
      buf += d.toString();
      const lines = buf.split("\\r\\n");
      if (lines[0].startsWith("-")) { clearTimeout(t); s.destroy(); return resolve(lines[0]); }
      if (lines.length >= 3 && lines[1].startsWith("$-1")) { clearTimeout(t); s.destroy(); return resolve("(nil)"); }
      if (lines.length >= 3 && /^[+:-]/.test(lines[1])) { clearTimeout(t); s.destroy(); return resolve(lines[1].slice(1)); }
      if (lines.length >= 4) { clearTimeout(t); s.destroy(); resolve(lines[1].startsWith("$") ? lines[2] : lines[1]); }
    });
  });
}
const server = http.createServer(async (req, res) => {
  const u = new URL(req.url, "http://x");
  const e = process.env;
  try {
    if (u.pathname === "/kv/set") return res.end(await kv(e.KV_HOST, e.KV_PORT, u.searchParams.get("token") ?? e.KV_TOKEN, ["SET", "k", u.searchParams.get("v")]));
    if (u.pathname === "/kv/get") return res.end(await kv(e.KV_HOST, e.KV_PORT, u.searchParams.get("token") ?? e.KV_TOKEN, ["GET", "k"]));
    if (u.pathname === "/pg") {
      const c = new Client({ connectionString: e.DATABASE_URL, connectionTimeoutMillis: 4000 });
      await c.connect();
      await c.query("CREATE TABLE IF NOT EXISTS notes (body text)");
      if (u.searchParams.get("add")) await c.query("INSERT INTO notes VALUES ($1)", [u.searchParams.get("add")]);
      const r = await c.query("SELECT body FROM notes ORDER BY body");
      await c.end();
      return res.end(r.rows.map((x) => x.body).join(","));
    }
    if (u.pathname.startsWith("/env/")) return res.end(e[u.pathname.slice(5)] ?? "(unset)");
    res.end("ok");
  } catch (err) {
    res.end("ERR " + err.message);
  }
});
server.listen(8080, "0.0.0.0");
`;

const FILES = { "package.json": PKG, "server.js": SERVER, ".gitignore": "/node_modules\n" };

describe("add-ons and links", { timeout: 600_000 }, () => {
  const pier = new Pier();
  const ok = async (args: string[]) => {
    const r = await pier.cli(args);
    assert.equal(r.code, 0, `pier ${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  const body = async (app: string, path: string) => (await pier.get(app, path)).body;
  const deploy = async (name: string) => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", name]);
    const dir = await pier.repo(name, FILES, app.id);
    const r = await pier.push(dir);
    assert.equal(r.code, 0, r.stderr);
    return r;
  };
  const restart = (app: string) => ok(["restart", "--app", app]);
  const docker = (args: string[]) => run(["/usr/bin/docker", ...args]);
  /**
   * An app's `/kv/get` from its own instance: an edge error (a reload under way) is retried, and the
   * answering instance must be the app's, so that an answer is the app's own connection to the add-on.
   */
  const kvGetFrom = async (app: string): Promise<string> => {
    for (let i = 0; ; i++) {
      const r = await pier.get(app, "/kv/get");
      const who = await pier.get(app, "/env/CC_APP_NAME");
      if (r.status === 200 && who.status === 200) {
        assert.equal(who.body, app, "the edge routes the app's host to the app's own instance");
        return r.body;
      }
      if (i >= 10) assert.fail(`${app}.localhost answered ${r.status} ${r.body.slice(0, 200)}`);
      await new Promise((res) => setTimeout(res, 500));
    }
  };
  /** A network error, never a Redis reply (a value, OK, (nil), WRONGPASS, NOAUTH). */
  const UNREACHABLE = /^ERR (ENOTFOUND|EAI_AGAIN|timeout|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH)$/;
  /** The add-on container's address on each of its networks. */
  const addresses = async (host: string): Promise<Record<string, string>> => {
    const r = await docker([
      "inspect",
      "-f",
      "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}={{$v.IPAddress}} {{end}}",
      host,
    ]);
    return Object.fromEntries(
      r.stdout
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map((x) => x.split("=") as [string, string]),
    );
  };
  /** What the engine says about isolation, for a failure's message. */
  const isolationDiagnostics = async (host: string) => {
    const nets = await addresses(host);
    const all = await run([
      "sh",
      "-c",
      "for n in $(docker network ls -q); do docker network inspect -f '{{.Name}} {{range .IPAM.Config}}{{.Subnet}} {{end}}{{range $k, $v := .Containers}}{{$v.Name}}={{$v.IPv4Address}} {{end}}' $n; done | grep 10.210.",
    ]);
    const rules = await run([
      "sh",
      "-c",
      "iptables -S DOCKER-ISOLATION-STAGE-1; iptables -S DOCKER-ISOLATION-STAGE-2",
    ]);
    return `add-on: ${JSON.stringify(nets)}; networks: ${all.stdout}; isolation rules: ${rules.stdout}${rules.stderr}`;
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
  });
  after(async () => {
    await pier.destroy();
  });

  test("a kv add-on linked at creation: the app writes and reads a key; the token is masked", async () => {
    const web = await pier.cliJson<{ id: string }>(["create", "--type", "node", "web"]);
    const created = await pier.cliJson<{ name: string; kind: string; apps: string[] }>([
      "addon",
      "create",
      "kv",
      "cache",
      "--link",
      "web",
      "--flavor",
      "pico",
    ]);
    assert.deepEqual([created.kind, created.apps], ["kv", ["web"]]);
    // The build sees the variables too; the deploy log masks the token.
    await ok([
      "env",
      "set",
      "CC_PRE_BUILD_HOOK",
      'echo "build sees $KV_HOST:$KV_PORT token=$KV_TOKEN"',
      "--app",
      "web",
    ]);
    const push = await pier.push(await pier.repo("web", FILES, web.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Linked variables from add-on cache: KV_HOST, KV_PORT, KV_TOKEN, REDIS_HOST/);
    assert.match(push.stderr, /build sees pier-addon-adn-[0-9a-f]+:6378 token=\*\*\*\*/);
    assert.equal(await body("web", "/kv/set?v=hello"), "OK");
    assert.equal(await body("web", "/kv/get"), "hello");
    assert.match(await body("web", "/kv/get?token=wrong"), /WRONGPASS|NOAUTH/);
    assert.equal(await body("web", "/env/KV_PORT"), "6378");
    assert.match(
      await body("web", "/env/REDIS_URL"),
      /^redis:\/\/:[A-Za-z0-9_-]+@pier-addon-adn-[0-9a-f]+:6378$/,
    );

    const env = await ok(["env", "--app", "web"]);
    assert.match(env.stdout, /# from add-on cache\nKV_HOST=pier-addon-adn-/);
    assert.match(env.stdout, /KV_TOKEN=\*\*\*\*\n/);
    assert.match(env.stdout, /REDIS_URL=redis:\/\/:\*\*\*\*@pier-addon/);
    const token = (await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]))
      .KV_TOKEN;
    assert.match(token ?? "", /^[A-Za-z0-9_-]{40,}$/);
    assert.ok(!env.stdout.includes(token as string), "pier env masks the token");
    const revealed = await ok(["env", "--app", "web", "--reveal"]);
    assert.ok(revealed.stdout.includes(`KV_TOKEN=${token}`));
    const log = await ok(["logs", "--deployment", "latest", "--app", "web"]).catch(() => null);
    if (log) assert.ok(!log.stdout.includes(token as string));
  });

  test("a PHP app linked to kv reaches it with the redis extension over tcp on port 6378, the token as password", async () => {
    const php = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpkv"]);
    await ok(["service", "link-addon", "cache", "--app", "phpkv"]);
    const index = `<?php
$r = new Redis();
$r->connect(getenv('KV_HOST'), (int) getenv('KV_PORT'));
if (!$r->auth(getenv('KV_TOKEN'))) { http_response_code(500); echo 'auth refused'; exit; }
if (isset($_GET['v'])) { $r->set('php', $_GET['v']); }
header('Content-Type: application/json');
echo json_encode(['port' => getenv('KV_PORT'), 'k' => $r->get('k'), 'php' => $r->get('php')]);
`;
    const push = await pier.push(await pier.repo("phpkv", { "index.php": index }, php.id));
    assert.equal(push.code, 0, push.stderr);
    const got = JSON.parse(await body("phpkv", "/?v=from-php")) as Record<string, string>;
    assert.equal(got.port, "6378");
    assert.equal(got.k, "hello", "the PHP app reads what the Node.js app wrote");
    assert.equal(got.php, "from-php");
    assert.equal(await body("web", "/kv/get"), "hello");
  });

  test("a Dockerfile app linked to kv reaches it during its build (RUN steps on the app's network)", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "dockerkv"]);
    await ok(["service", "link-addon", "cache", "--app", "dockerkv"]);
    const dockerfile = [
      "FROM pier/node:22",
      "ARG KV_HOST",
      "ARG KV_TOKEN",
      // Plain bash: AUTH, PING over /dev/tcp; the build fails unless the add-on answers PONG.
      'SHELL ["/bin/bash", "-c"]',
      String.raw`RUN exec 3<>/dev/tcp/$KV_HOST/6378 && printf 'AUTH %s\r\nPING\r\n' "$KV_TOKEN" >&3 && timeout 5 head -c 12 <&3 > /tmp/answer; grep -q PONG /tmp/answer && echo build reached the add-on`,
      "CMD [\"node\", \"-e\", \"require('http').createServer((q, s) => s.end('ok')).listen(8080, '0.0.0.0')\"]",
      "",
    ].join("\n");
    const push = await pier.push(await pier.repo("dockerkv", { Dockerfile: dockerfile }, app.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /build reached the add-on/);
    assert.equal(await body("dockerkv", "/"), "ok");
  });

  test("an app that is not linked cannot reach the add-on, even with its host, port and token", async () => {
    const vars = await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]);
    const host = vars.KV_HOST as string;
    await deploy("stranger");
    await ok(["env", "set", "KV_HOST", host, "--app", "stranger"]);
    await ok(["env", "set", "KV_PORT", "6378", "--app", "stranger"]);
    await ok(["env", "set", "KV_TOKEN", vars.KV_TOKEN as string, "--app", "stranger"]);
    await restart("stranger");
    assert.match(await kvGetFrom("stranger"), UNREACHABLE);
    // By address, too: the add-on's address on each network it is on (its own, the linked apps').
    for (const addr of Object.values(await addresses(host))) {
      await ok(["env", "set", "KV_HOST", addr, "--app", "stranger"]);
      await restart("stranger");
      const got = await kvGetFrom("stranger");
      if (!UNREACHABLE.test(got))
        assert.fail(`address ${addr} answered ${got}: ${await isolationDiagnostics(host)}`);
    }
  });

  test("an app unlinked (at its next restart) or deleted no longer reaches the add-on; nor does a new app on the freed subnet", async () => {
    const vars = await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]);
    const host = vars.KV_HOST as string;
    const former = await pier.cliJson<{ id: string }>(["create", "--type", "node", "former"]);
    await ok(["service", "link-addon", "cache", "--app", "former"]);
    const push = await pier.push(await pier.repo("former", FILES, former.id));
    assert.equal(push.code, 0, push.stderr);
    assert.equal(await kvGetFrom("former"), "hello");
    const net = `pier-${former.id}`;
    const addr = (await addresses(host))[net] as string;
    assert.match(addr ?? "", /^\d+\.\d+\.\d+\.\d+$/, "the add-on is on the linked app's network");
    type Status = { networks: string[]; joins: { app: string; state: string }[] };
    const joined = await pier.cliJson<Status>(["addon", "status", "cache"]);
    assert.ok(joined.joins.some((j) => j.app === "former" && j.state === "joined"));

    // Unlinked: until its next restart it keeps reaching it (ADR 0016), then neither by name nor by the
    // address it had on the app's network.
    await ok(["service", "unlink-addon", "cache", "--app", "former"]);
    await ok(["env", "set", "KV_HOST", host, "--app", "former"]);
    await ok(["env", "set", "KV_TOKEN", vars.KV_TOKEN as string, "--app", "former"]);
    await ok(["env", "set", "KV_PORT", "6378", "--app", "former"]);
    await restart("former");
    const left = await pier.cliJson<Status>(["addon", "status", "cache"]);
    assert.ok(!left.networks.includes(net), `the add-on left the unlinked app's network: ${left.networks}`);
    assert.ok(!left.joins.some((j) => j.app === "former"));
    assert.match(await kvGetFrom("former"), UNREACHABLE);
    await ok(["env", "set", "KV_HOST", addr, "--app", "former"]);
    await restart("former");
    const byAddr = await kvGetFrom("former");
    if (!UNREACHABLE.test(byAddr))
      assert.fail(`${addr} answered ${byAddr}: ${await isolationDiagnostics(host)}`);

    // Linked again, then the app is deleted: the add-on leaves its network, whose subnet is freed; a new
    // app (which may get that subnet, and the add-on's former address on it) does not reach the add-on.
    await ok(["service", "link-addon", "cache", "--app", "former"]);
    await ok(["env", "set", "KV_HOST", host, "--app", "former"]);
    await restart("former");
    assert.equal(await kvGetFrom("former"), "hello");
    const again = (await addresses(host))[net] as string;
    const subnet = (
      await docker(["network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", net])
    ).stdout.trim();
    assert.equal((await pier.api("DELETE", `/v1/apps/${former.id}`)).status, 204);
    assert.ok(!Object.hasOwn(await addresses(host), net), "the add-on left the deleted app's network");
    assert.notEqual((await docker(["network", "inspect", net])).code, 0, "the deleted app's network is gone");
    const newcomer = await pier.cliJson<{ id: string }>(["create", "--type", "node", "newcomer"]);
    await ok(["env", "set", "KV_HOST", again, "--app", "newcomer"]);
    await ok(["env", "set", "KV_PORT", "6378", "--app", "newcomer"]);
    await ok(["env", "set", "KV_TOKEN", vars.KV_TOKEN as string, "--app", "newcomer"]);
    const p2 = await pier.push(await pier.repo("newcomer", FILES, newcomer.id));
    assert.equal(p2.code, 0, p2.stderr);
    const itsSubnet = (
      await docker([
        "network",
        "inspect",
        "-f",
        "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
        `pier-${newcomer.id}`,
      ])
    ).stdout.trim();
    const got = await kvGetFrom("newcomer");
    if (!UNREACHABLE.test(got))
      assert.fail(
        `${again} answered ${got} (the deleted app's subnet ${subnet}, the new app's ${itsSubnet}): ${await isolationDiagnostics(host)}`,
      );
    assert.ok(!Object.keys(await addresses(host)).includes(`pier-${newcomer.id}`));
    // An address of Pier's pool that no network uses does not leave the machine either (by the host's
    // default route, something outside answered: an egress proxy's HTTP 400 was taken for the add-on).
    await ok(["env", "set", "KV_HOST", "10.210.255.250", "--app", "newcomer"]);
    await restart("newcomer");
    assert.match(await kvGetFrom("newcomer"), /^ERR (EHOSTUNREACH|ENETUNREACH|ECONNREFUSED)$/);
    await pier.api("DELETE", `/v1/apps/${newcomer.id}`);
  });

  test("a postgresql add-on linked later: the next restart gets DATABASE_URL; backups restore exactly", async () => {
    await ok(["addon", "create", "postgresql", "db", "--flavor", "pico"]);
    await ok(["service", "link-addon", "db", "--app", "web"]);
    // A link changes no running instance.
    assert.equal(await body("web", "/env/DATABASE_URL"), "(unset)");
    await restart("web");
    assert.match(
      await body("web", "/env/DATABASE_URL"),
      /^postgresql:\/\/u_db:[^@]+@pier-addon-adn-[0-9a-f]+:5432\/db$/,
    );
    assert.equal(await body("web", "/pg?add=first"), "first");
    const links = await pier.cliJson<{ addons: { name: string }[] }>(["service", "--app", "web"]);
    assert.deepEqual(
      links.addons.map((a) => a.name),
      ["cache", "db"],
    );

    const b = await pier.cliJson<{ id: string }>(["addon", "backup", "create", "db"]);
    assert.equal(await body("web", "/pg?add=second"), "first,second");
    // (The daily round, a minute after the server starts, may have added an automatic one.)
    const list = await pier.cliJson<{ id: string; automatic: boolean }[]>(["addon", "backup", "list", "db"]);
    assert.deepEqual(
      list.filter((x) => !x.automatic).map((x) => x.id),
      [b.id],
    );
    const refused = await pier.cli(["addon", "backup", "restore", "db", b.id]);
    assert.notEqual(refused.code, 0, "asks, or --yes");
    await ok(["addon", "backup", "restore", "db", b.id, "--yes"]);
    assert.equal(await body("web", "/pg"), "first");

    // kv: a snapshot, restored exactly.
    const kb = await pier.cliJson<{ id: string }>(["addon", "backup", "create", "cache"]);
    assert.equal(await body("web", "/kv/set?v=later"), "OK");
    // A backup of another add-on is refused, and changes nothing.
    const other = await pier.cli(["addon", "backup", "restore", "cache", b.id, "--yes"]);
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /is of the add-on 'db', not of 'cache'/);
    assert.equal(await body("web", "/kv/get"), "later");
    await ok(["addon", "backup", "restore", "cache", kb.id, "--yes"]);
    assert.equal(await body("web", "/kv/get"), "hello");
  });

  test("a PHP app linked to mysql reaches it with mysqli and pdo_mysql from its variables; the password is masked; backups restore exactly", async () => {
    const php = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpmy"]);
    const created = await pier.cliJson<{ kind: string; apps: string[] }>([
      "addon",
      "create",
      "mysql",
      "mydb",
      "--link",
      "phpmy",
      "--flavor",
      "pico",
    ]);
    assert.deepEqual([created.kind, created.apps], ["mysql", ["phpmy"]]);
    await ok([
      "env",
      "set",
      "CC_PRE_BUILD_HOOK",
      'echo "build sees $MYSQL_ADDON_HOST:$MYSQL_ADDON_PORT password=$MYSQL_ADDON_PASSWORD url=$DATABASE_URL"',
      "--app",
      "phpmy",
    ]);
    // mysqli from the MYSQL_ADDON_* variables writes; PDO from DATABASE_URL reads.
    const index = `<?php
$m = new mysqli(getenv('MYSQL_ADDON_HOST'), getenv('MYSQL_ADDON_USER'), getenv('MYSQL_ADDON_PASSWORD'),
  getenv('MYSQL_ADDON_DB'), (int) getenv('MYSQL_ADDON_PORT'));
$m->set_charset('utf8mb4');
$m->query('CREATE TABLE IF NOT EXISTS notes (body VARCHAR(100))');
if (isset($_GET['add'])) {
  $s = $m->prepare('INSERT INTO notes VALUES (?)');
  $s->bind_param('s', $_GET['add']);
  $s->execute();
}
$u = parse_url(getenv('DATABASE_URL'));
$dsn = sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $u['host'], $u['port'], rawurldecode(ltrim($u['path'], '/')));
$pdo = new PDO($dsn, rawurldecode($u['user']), rawurldecode($u['pass']), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
header('Content-Type: application/json');
echo json_encode([
  'scheme' => $u['scheme'],
  'driver' => $pdo->getAttribute(PDO::ATTR_DRIVER_NAME),
  'server' => $m->server_info,
  'notes' => $pdo->query('SELECT body FROM notes ORDER BY body')->fetchAll(PDO::FETCH_COLUMN),
]);
`;
    const push = await pier.push(await pier.repo("phpmy", { "index.php": index }, php.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Linked variables from add-on mydb: MYSQL_ADDON_HOST, MYSQL_ADDON_PORT/);
    assert.match(
      push.stderr,
      /build sees pier-addon-adn-[0-9a-f]+:3306 password=\*\*\*\* url=mysql:\/\/u_mydb:\*\*\*\*@pier-addon-adn-[0-9a-f]+:3306\/mydb/,
    );
    type Page = { scheme: string; driver: string; server: string; notes: string[] };
    const page = async (path: string) => JSON.parse(await body("phpmy", path)) as Page;
    const first = await page("/?add=caf%C3%A9");
    assert.deepEqual([first.scheme, first.driver, first.notes], ["mysql", "mysql", ["café"]]);
    assert.match(first.server, /MariaDB/);

    const vars = await pier.cliJson<Record<string, string>>(["addon", "env", "mydb", "--reveal"]);
    const password = vars.MYSQL_ADDON_PASSWORD as string;
    assert.match(password, /^[0-9a-f]{64}$/);
    assert.ok(!push.stderr.includes(password), "the deploy log masks the password");
    const env = await ok(["env", "--app", "phpmy"]);
    assert.match(env.stdout, /# from add-on mydb\n/);
    assert.match(env.stdout, /MYSQL_ADDON_PASSWORD=\*\*\*\*\n/);
    assert.match(env.stdout, /DATABASE_URL=mysql:\/\/u_mydb:\*\*\*\*@pier-addon/);
    assert.ok(!env.stdout.includes(password), "pier env masks the password");

    // A backup (mariadb-dump), listed; a later write; the restore brings back exactly the backup.
    const b = await pier.cliJson<{ id: string; bytes: number }>(["addon", "backup", "create", "mydb"]);
    assert.ok(b.bytes > 0);
    assert.deepEqual((await page("/?add=later")).notes, ["café", "later"]);
    const list = await pier.cliJson<{ id: string; automatic: boolean }[]>([
      "addon",
      "backup",
      "list",
      "mydb",
    ]);
    assert.deepEqual(
      list.filter((x) => !x.automatic).map((x) => x.id),
      [b.id],
    );
    await ok(["addon", "backup", "restore", "mydb", b.id, "--yes"]);
    assert.deepEqual((await page("/")).notes, ["café"]);
    const status = await pier.cliJson<{ state: string; port: number }>(["addon", "status", "mydb"]);
    assert.deepEqual([status.state, status.port], ["running", 3306]);
    await ok(["addon", "delete", "mydb", "--yes", "--force"]);
  });

  test("an app linked to another sees its published variables; unlinking removes them at the next restart", async () => {
    await pier.cliJson(["create", "--type", "node", "api"]);
    await ok(["published-config", "set", "API_URL", "http://api.internal:8080", "--app", "api"]);
    await ok(["published-config", "set", "API_SECRET", "s3cr3t-value", "--app", "api"]);
    const bad = await pier.cli(["published-config", "set", "CC_RUN_COMMAND", "x", "--app", "api"]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /may not start with CC_/);
    await ok(["service", "link-app", "api", "--app", "web"]);
    await restart("web");
    assert.equal(await body("web", "/env/API_URL"), "http://api.internal:8080");
    const env = await ok(["env", "--app", "web"]);
    assert.match(env.stdout, /# from app api\nAPI_SECRET=\*\*\*\*\nAPI_URL=http:\/\/api.internal:8080\n/);

    await ok(["service", "unlink-app", "api", "--app", "web"]);
    await ok(["service", "unlink-addon", "cache", "--app", "web"]);
    assert.equal(await body("web", "/env/API_URL"), "http://api.internal:8080", "until the next restart");
    await restart("web");
    assert.equal(await body("web", "/env/API_URL"), "(unset)");
    assert.equal(await body("web", "/env/KV_HOST"), "(unset)");
    assert.match(await body("web", "/env/DATABASE_URL"), /^postgresql:/);
  });

  test("bad input: clear errors with the error shape, nothing lost", async () => {
    const unknown = await pier.api("POST", "/v1/addons", { kind: "mongodb", name: "x" });
    assert.equal(unknown.status, 400);
    assert.match(JSON.stringify(unknown.json), /unknown add-on kind 'mongodb'/);
    const dup = await pier.api("POST", "/v1/addons", { kind: "kv", name: "cache" });
    assert.equal(dup.status, 409);
    const noApp = await pier.api("POST", "/v1/apps/nope/links/addons", { addon: "cache" });
    assert.equal(noApp.status, 404);
    const noAddon = await pier.api("POST", "/v1/apps/web/links/addons", { addon: "nope" });
    assert.equal(noAddon.status, 404);
    assert.equal((noAddon.json as { error: { code: string } }).error.code, "ADDON_NOT_FOUND");
    const twice = await pier.api("POST", "/v1/apps/web/links/addons", { addon: "db" });
    assert.equal(twice.status, 409);
    const linked = await pier.cli(["addon", "delete", "db", "--yes"]);
    assert.notEqual(linked.code, 0);
    assert.match(linked.stderr, /linked to web/);
    const badName = await pier.api("PUT", "/v1/apps/api/published-config/1BAD", { value: "x" });
    assert.equal(badName.status, 400);
    assert.equal(await body("web", "/pg"), "first", "nothing was lost");

    // Deleting a linked add-on without --force: 409 with the error shape, and the add-on stays.
    const del = await pier.api("DELETE", "/v1/addons/db");
    assert.equal(del.status, 409);
    assert.equal((del.json as { error: { code: string } }).error.code, "CONFLICT");
    assert.match((del.json as { error: { hint: string } }).error.hint, /unlink-addon db --app APP|--force/);
    // A backup of another add-on: 404, nothing restored.
    const [dbBackup] = await pier.cliJson<{ id: string }[]>(["addon", "backup", "list", "db"]);
    const cross = await pier.api("POST", `/v1/addons/cache/backups/${dbBackup?.id}/restore`);
    assert.equal(cross.status, 404);
    assert.equal((cross.json as { error: { code: string } }).error.code, "BACKUP_NOT_FOUND");
    // A stopped add-on (stopped outside Pier) can be neither backed up nor restored: a clear error, and
    // its backups stay as they were.
    const { host } = await pier.cliJson<{ host: string }>(["addon", "status", "cache"]);
    const before = await pier.cliJson<{ id: string }[]>(["addon", "backup", "list", "cache"]);
    await run(["/usr/bin/docker", "stop", host]);
    try {
      const stopped = await pier.cli(["addon", "backup", "create", "cache"]);
      assert.notEqual(stopped.code, 0);
      assert.match(stopped.stderr, /The add-on 'cache' is stopped: nothing was backed up/);
      const api = await pier.api("POST", "/v1/addons/cache/backups");
      assert.equal(api.status, 409);
      assert.equal((api.json as { error: { code: string } }).error.code, "ADDON_NOT_RUNNING");
      const restore = await pier.cli([
        "addon",
        "backup",
        "restore",
        "cache",
        before[0]?.id as string,
        "--yes",
      ]);
      assert.notEqual(restore.code, 0);
      assert.match(restore.stderr, /is stopped: nothing was restored/);
      assert.deepEqual(await pier.cliJson<{ id: string }[]>(["addon", "backup", "list", "cache"]), before);
      assert.equal((await pier.cliJson<{ state: string }>(["addon", "status", "cache"])).state, "stopped");
    } finally {
      await run(["/usr/bin/docker", "start", host]);
    }
    let state = "";
    for (let i = 0; i < 120 && state !== "running"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      state = (await pier.cliJson<{ state: string }>(["addon", "status", "cache"])).state;
    }
    assert.equal(state, "running");
  });

  test("an app's token sees only the add-ons linked to its app, read-only", async () => {
    const t = await pier.api("POST", "/v1/tokens", { name: "web-token", app: "web" });
    const token = (t.json as { token: string }).token;
    const list = await pier.api("GET", "/v1/addons", undefined, token);
    assert.deepEqual(
      (list.json as { name: string }[]).map((a) => a.name),
      ["db"],
    );
    assert.equal((await pier.api("GET", "/v1/addons/cache", undefined, token)).status, 404);
    // Nor its credentials or backups: another tenant's add-on does not exist for this token.
    for (const path of ["/v1/addons/cache/env", "/v1/addons/cache/backups"]) {
      const r = await pier.api("GET", path, undefined, token);
      assert.equal(r.status, 404, path);
      assert.doesNotMatch(JSON.stringify(r.json), /PASSWORD|TOKEN|URI/, path);
    }
    assert.equal((await pier.api("GET", "/v1/addons/db/env", undefined, token)).status, 200);
    assert.equal((await pier.api("POST", "/v1/addons", { kind: "kv", name: "mine" }, token)).status, 403);
    assert.equal(
      (await pier.api("POST", "/v1/apps/web/links/addons", { addon: "cache" }, token)).status,
      403,
    );
    assert.equal((await pier.api("POST", "/v1/addons/db/backups", undefined, token)).status, 403);
  });

  test("writes survive a restart of pier server, even without the add-on's container; delete --force removes a linked add-on", async () => {
    // While pier server is down, someone removes the add-on's container (its volume stays): Pier makes it
    // again at start, on the same data, and it rejoins the linked app's network.
    const { host } = await pier.cliJson<{ host: string }>(["addon", "status", "db"]);
    await pier.stopServer();
    await run(["/usr/bin/docker", "rm", "-f", host]);
    await pier.start();
    type Status = { state: string; apps: string[]; joins: { app: string; state: string }[] };
    let s: Status = { state: "", apps: [], joins: [] };
    const seen = new Set<string>();
    for (let i = 0; i < 240 && s.state !== "running"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      s = await pier.cliJson<Status>(["addon", "status", "db"]);
      seen.add(s.state);
    }
    // It is `running` only once it is back on the linked app's network: the app reaches it at once, on
    // the same data (it was `running` a moment before it rejoined).
    assert.deepEqual(
      [s.state, s.apps, s.joins.map((j) => `${j.app}: ${j.state}`)],
      ["running", ["web"], ["web: joined"]],
    );
    assert.equal(await body("web", "/pg"), "first", `states seen: ${[...seen].join(", ")}`);
    const human = await ok(["addon", "status", "db"]);
    assert.match(human.stdout, /linked to: web \(reaches it\)/);
    await ok(["addon", "delete", "db", "--yes", "--force"]);
    const list = await pier.cliJson<{ name: string }[]>(["addon", "list"]);
    assert.deepEqual(
      list.map((a) => a.name),
      ["cache"],
    );
  });
});
