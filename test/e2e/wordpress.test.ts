// WordPress as the proof of PHP on Pier (issue 17, item 5), one flow as a user does it: WordPress 6.8 from
// Debian's package pushed with git to a PHP app linked to a MySQL add-on and an fs add-on (its uploads),
// health-gated, installed by its own installer over HTTP through the edge, a post published and an image
// uploaded over XML-RPC and served back byte for byte; then a redeploy (a change pushed), a restart, a
// rollback and two instances, with the post and the uploads still there.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";
import {
  randomPng,
  saltVariables,
  WordPressSite,
  wordpressRoot,
  writeWordPressApp,
} from "./wordpress-fixture.js";

const DOCKER = "/usr/bin/docker";
const ADMIN = "admin";
const PASSWORD = "pier-Secret-123";
const TITLE = "Hello from Pier";

describe("WordPress on a MySQL add-on and an fs add-on", { timeout: 1_200_000 }, () => {
  const pier = new Pier();
  let repo = "";
  let appId = "";
  let site: WordPressSite;
  let post = "";
  let upload: { path: string; bytes: Buffer } = { path: "", bytes: Buffer.alloc(0) };

  const ok = async (args: string[], input?: string) => {
    const r = await pier.cli(args, { input });
    assert.equal(r.code, 0, `pier ${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  /**
   * The post's page, `/?p=<id>`: its permalink (the installer turns pretty permalinks on only when it can
   * reach the site's URL from inside the instance; the URL here is the edge's, outside it).
   */
  const postPage = () => site.get(`/?p=${post}`);
  /** What a visitor sees: the post's page with its title, and the upload byte for byte. */
  const stillThere = async (what: string) => {
    const page = await postPage();
    assert.equal(page.status, 200, what);
    assert.ok(page.body.includes(TITLE), `${what}: the post's page shows its title`);
    const file = await site.get(upload.path);
    assert.equal(file.status, 200, `${what}: the upload is served`);
    assert.ok(file.bytes.equals(upload.bytes), `${what}: the upload's bytes are the ones sent`);
  };

  before(async () => {
    const root = await wordpressRoot();
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "blog"]);
    appId = app.id;
    repo = await pier.repo("blog", {}, app.id);
    writeWordPressApp(root, repo);
    await pier.commit(repo, {}, "WordPress 6.8 from Debian's package, with a wp-config.php for Pier");
    site = new WordPressSite(pier.httpPort, "blog.localhost");
  });
  after(async () => {
    await pier.destroy();
  });

  test("pushed before its database is linked, it fails the health gate: the installer's page answers 500", async () => {
    await ok(["env", "import", "--app", "blog"], saltVariables());
    const listed = (await ok(["env", "--app", "blog"])).stdout;
    assert.equal(
      listed.match(/^WP_\w+_(KEY|SALT)=\*\*\*\*$/gm)?.length,
      8,
      `the keys and salts are masked: ${listed}`,
    );
    // The installer's page answers 200 before and after the install, 500 when WordPress cannot reach its
    // database or wp-config.php misses a variable (here: the add-on is not linked yet).
    await ok(["env", "set", "CC_HEALTH_CHECK_PATH", "/wp-admin/install.php", "--app", "blog"]);
    const push = await pier.push(repo);
    assert.notEqual(push.code, 0, "the deploy fails");
    assert.match(push.stderr, /- GET \/wp-admin\/install\.php returned 500\./);
  });

  test("pushed with git to a PHP app linked to a MySQL and an fs add-on, it passes the health gate", async () => {
    await ok(["addon", "create", "mysql", "db", "--link", "blog"]);
    await ok(["addon", "create", "fs", "uploads", "--link", "blog"]);
    const bucket = (await pier.cliJson<Record<string, string>>(["addon", "env", "uploads"])).BUCKET_HOST;
    assert.ok(bucket, "the fs add-on gives its bucket's name");
    await ok(["env", "set", "CC_FS_BUCKET", `/wp-content/uploads:${bucket}`, "--app", "blog"]);
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /Response from GET \/wp-admin\/install\.php is 200/);
    const vars = await pier.cliJson<Record<string, string>>(["addon", "env", "db", "--reveal"]);
    assert.ok(
      !push.stderr.includes(vars.MYSQL_ADDON_PASSWORD as string),
      "the deploy log masks the password",
    );
  });

  test("its own installer sets it up over HTTP through the edge, at a URL without a port", async () => {
    const home = await site.get("/");
    assert.equal(home.status, 302, "a site not installed sends its visitors to the installer");
    assert.equal(home.headers.location, "http://blog.localhost/wp-admin/install.php");
    const form = await site.get("/wp-admin/install.php");
    assert.equal(form.status, 200);
    assert.match(form.body, /<title>WordPress &rsaquo; Installation<\/title>/);
    const done = await site.install("Pier WordPress", ADMIN, PASSWORD);
    assert.equal(done.status, 200, done.body.slice(0, 500));
    assert.match(done.body, /<h1>Success!<\/h1>/);
    assert.match((await site.get("/wp-admin/install.php")).body, /Already Installed/);
    const installed = await site.get("/");
    assert.equal(installed.status, 200);
    assert.match(installed.body, /Pier WordPress/);
  });

  test("a post published and an image uploaded over XML-RPC are served, the image byte for byte", async () => {
    post = await site.publish(ADMIN, PASSWORD, TITLE, "Published over XML-RPC, stored in the MySQL add-on.");
    const bytes = randomPng();
    const url = await site.upload(ADMIN, PASSWORD, "pixel.png", "image/png", bytes);
    assert.match(url, /^http:\/\/blog\.localhost\/wp-content\/uploads\/\d{4}\/\d{2}\/pixel\.png$/);
    upload = { path: site.pathOf(url), bytes };
    await stillThere("after the upload");
    const home = await site.get("/");
    assert.ok(home.body.includes(TITLE), "the home page lists the post");
  });

  test("a redeploy (a change pushed), a restart and a rollback keep the post and the upload", async () => {
    await pier.commit(
      repo,
      {
        "wp-content/mu-plugins/footer.php":
          "<?php\nadd_action('wp_footer', static function (): void { echo '<p>Deployed with git push</p>'; });\n",
      },
      "a footer",
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match((await site.get("/")).body, /<p>Deployed with git push<\/p>/, "the change is live");
    await stillThere("after the redeploy");
    await ok(["restart", "--app", "blog"]);
    await stillThere("after a restart");
    await ok(["rollback", "v1", "--app", "blog"]);
    assert.doesNotMatch(
      (await site.get("/")).body,
      /Deployed with git push/,
      "the release before the change",
    );
    await stillThere("after a rollback to the first release");
  });

  test("with 2 instances, both serve the uploads: those made before, and one made now through either", async () => {
    await ok(["scale", "--instances", "2", "--app", "blog"]);
    const status = await pier.cliJson<{ instances: unknown[] }>(["status", "--app", "blog"]);
    assert.equal(status.instances.length, 2, JSON.stringify(status));
    const second = randomPng();
    const url = await site.upload(ADMIN, PASSWORD, "second.png", "image/png", second);
    // Each instance's own files, read inside it: the bucket is one, mounted in both.
    const ps = await run([
      DOCKER,
      "ps",
      "-q",
      "--filter",
      `label=pier.app=${appId}`,
      "--filter",
      "label=pier.instance",
    ]);
    const instances = ps.stdout.trim().split("\n");
    assert.equal(instances.length, 2, ps.stdout);
    for (const [path, bytes] of [
      [upload.path, upload.bytes],
      [site.pathOf(url), second],
    ] as const) {
      for (const id of instances) {
        const cat = await run([DOCKER, "exec", id, "base64", "-w0", `/app${path}`]);
        assert.equal(cat.stdout, bytes.toString("base64"), `${path} in instance ${id}`);
      }
      // The edge balances round robin: four requests reach both instances.
      for (let i = 0; i < 4; i++) {
        const r = await site.get(path);
        assert.equal(r.status, 200, path);
        assert.ok(r.bytes.equals(bytes), path);
      }
    }
  });
});
