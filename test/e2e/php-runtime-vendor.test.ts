// Where a PHP release's vendor/ lives (docs/adr/0012): composer installs it into a release volume that the
// image names, not into the image; every instance of the release mounts it; an unchanged composer.lock
// mounts the current release's again; a rollback mounts its own; prune and app delete leave none behind.
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Pier, run } from "./harness.js";
import { COMPOSER_APP, composerLock } from "./php-fixtures.js";

const DOCKER = "/usr/bin/docker";

interface Body {
  greet: string;
  dev: boolean;
  rev: number;
  /** ini_get("memory_limit"), which a php.ini of the commit may set. */
  memory_limit?: string;
}

describe("PHP runtime: vendor/ in a release volume", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let repo = "";
  let appId = "";
  const body = async () => {
    const r = await pier.get("phpvol");
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as Body;
  };
  const docker = async (...args: string[]) => {
    const r = await run([DOCKER, ...args]);
    assert.equal(r.code, 0, `docker ${args.join(" ")}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const lines = (s: string) => s.split("\n").filter((l) => l !== "");
  /** The app's release volumes on the engine. */
  const volumes = async () =>
    lines(
      await docker(
        "volume",
        "ls",
        "-q",
        "--filter",
        `label=pier.app=${appId}`,
        "--filter",
        "label=pier.role=release-volume",
      ),
    ).sort();
  /** The current release and its running instances. */
  const current = async () => {
    const releases = (await pier.api("GET", `/v1/apps/${appId}/releases`)).json as {
      number: number;
      image: string;
      deploymentId: string;
      current?: boolean;
    }[];
    const rel = releases.find((r) => r.current) ?? releases[0];
    assert.ok(rel, "a current release");
    const ids = lines(
      await docker(
        "ps",
        "-q",
        "--filter",
        `label=pier.app=${appId}`,
        "--filter",
        `label=pier.deployment=${rel.deploymentId}`,
        "--filter",
        "label=pier.instance",
      ),
    );
    return { release: rel, instances: ids };
  };
  /** The volume mounted at /app/vendor in a container, or "" if none. */
  const vendorMount = async (id: string) =>
    docker(
      "inspect",
      "-f",
      '{{range .Mounts}}{{if eq .Destination "/app/vendor"}}{{.Name}}{{end}}{{end}}',
      id,
    );
  /** The release volume an image names ("" without one, or when the image is gone meanwhile). */
  const imageVolume = async (image: string) =>
    (
      await run([DOCKER, "image", "inspect", "-f", '{{index .Config.Labels "pier.volume"}}', image])
    ).stdout.trim();
  const push = async (what: string, files: Record<string, string> = {}) => {
    await pier.commit(repo, files, what);
    const r = await pier.push(repo);
    assert.equal(r.code, 0, `${what}: ${r.stderr}`);
    return r.stderr;
  };
  /** composer.lock with another text (its _readme): another dependency key, the same packages. */
  const relock = async (n: number) => {
    const lock = JSON.parse(readFileSync(`${repo}/composer.lock`, "utf8")) as { _readme: string[] };
    lock._readme = [...lock._readme.filter((l) => !l.startsWith("relocked")), `relocked ${n}`];
    return { "composer.lock": `${JSON.stringify(lock, null, 4)}\n` };
  };
  /** Pushes a composer.json that requires a package no repository has: the install fails, saying which. */
  const pushMissingPackage = async (what: string) => {
    const json = COMPOSER_APP["composer.json"]!.replace('"acme/greeter": "*"', '"acme/missing": "^1"');
    await pier.commit(repo, { "composer.json": json }, what);
    const r = await pier.push(repo);
    assert.notEqual(r.code, 0, `${what}: the deploy fails`);
    assert.match(r.stderr, /Installing dependencies: composer install .* failed: .*acme\/missing/);
    return r;
  };
  let first = "";

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpvol"]);
    appId = app.id;
    repo = await pier.repo("phpvol", COMPOSER_APP, app.id);
    await composerLock(repo);
    await pier.commit(repo, {}, "composer.lock");
    const r = await pier.cli(["env", "set", "CC_WEBROOT", "/public", "--app", "phpvol"]);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await pier.destroy();
  });

  test("composer installs into a volume: the image holds no vendor/, the instance mounts it", async () => {
    const log = await push("first");
    assert.match(log, /-----> Installing dependencies: composer install/);
    assert.match(log, /the build container started while the push was received/);
    assert.equal((await body()).greet, "hello pier", "composer's autoloader, from the volume");
    const { release, instances } = await current();
    assert.equal(instances.length, 1);
    const vols = await volumes();
    assert.equal(vols.length, 1, "one release volume");
    first = vols[0]!;
    assert.match(first, new RegExp(`^pier-vendor-${appId}-`));
    assert.equal(await imageVolume(release.image), `${first}:/app/vendor`, "the image names its volume");
    assert.equal(await vendorMount(instances[0]!), first, "the instance mounts it at /app/vendor");
    // The image alone (no volume mounted): /app/vendor holds nothing, /app the commit's files.
    const files = await docker(
      "run",
      "--rm",
      "--entrypoint",
      "/bin/sh",
      release.image,
      "-c",
      "ls -A /app/vendor 2>/dev/null | wc -l; test -f /app/public/index.php && echo source",
    );
    assert.deepEqual(lines(files), ["0", "source"], "no vendor/ files in the image");
    const labels = await docker("volume", "inspect", "-f", '{{index .Labels "pier.app"}}', first);
    assert.equal(labels, appId, "the volume carries pier.app (app delete removes it)");
  });

  test("an image of another app that names this app's volume in its labels does not get it", async () => {
    const thief = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "thief"]);
    const dockerfile = [
      "FROM pier/node:22",
      `LABEL pier.volume="${first}:/stolen"`,
      "CMD [\"node\", \"-e\", \"require('http').createServer((q, s) => s.end(require('fs').readdirSync('/stolen').join())).listen(8080, '0.0.0.0')\"]",
      "",
    ].join("\n");
    const push = await pier.push(await pier.repo("thief", { Dockerfile: dockerfile }, thief.id));
    assert.notEqual(push.code, 0, "the deploy fails");
    // The Docker runtime refuses pier.* labels; the engine adapter would refuse the mount too.
    assert.match(push.stderr, /pier\.volume/);
    const mounted = await docker("ps", "-aq", "--filter", `volume=${first}`);
    for (const id of lines(mounted)) {
      const app = await docker("inspect", "-f", '{{index .Config.Labels "pier.app"}}', id);
      assert.equal(app, appId, "only the app's own containers mount its volume");
    }
    const del = await pier.cli(["delete", "--app", "thief", "--yes"]);
    assert.equal(del.code, 0, del.stderr);
  });

  test("an unchanged composer.lock mounts the same volume; a changed one, or --without-cache, a new one", async () => {
    const same = await push("rev 2", {
      "public/index.php": COMPOSER_APP["public/index.php"]!.replace("'rev' => 1", "'rev' => 2"),
    });
    assert.match(same, /Dependencies unchanged .*vendor\/ reused from the current release/);
    assert.match(
      same,
      /vendor\/ is the current release's volume .*; the build container started while the push was received/,
    );
    assert.doesNotMatch(same, /-----> Installing dependencies/);
    const b = await body();
    assert.equal(b.rev, 2);
    assert.equal(b.greet, "hello pier");
    let c = await current();
    assert.equal(await vendorMount(c.instances[0]!), first, "the same volume");
    assert.equal(await imageVolume(c.release.image), `${first}:/app/vendor`);

    const env = await pier.cli(["env", "set", "CC_PHP_DEV_DEPENDENCIES", "install", "--app", "phpvol"]);
    assert.equal(env.code, 0, env.stderr);
    const changed = await push("relock", await relock(1));
    assert.match(changed, /-----> Installing dependencies: composer install/);
    assert.doesNotMatch(changed, /vendor\/ reused/);
    assert.doesNotMatch(changed, /started while the push/, "the container guessed the same lock: not used");
    assert.equal((await body()).dev, true, "development dependencies, in the new volume");
    c = await current();
    const second = await vendorMount(c.instances[0]!);
    assert.notEqual(second, first, "a changed lock: a new volume");
    assert.ok((await volumes()).includes(second));

    const fresh = await pier.cli(["restart", "--without-cache", "--app", "phpvol"]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.match(fresh.stderr, /-----> Installing dependencies: composer install/);
    c = await current();
    const third = await vendorMount(c.instances[0]!);
    assert.ok(third !== first && third !== second, "--without-cache: a new volume");
    assert.equal((await body()).dev, true);
  });

  test("a rollback serves with its own vendor/; two instances share the release's volume", async () => {
    const rollback = await pier.cli(["rollback", "v1", "--app", "phpvol"]);
    assert.equal(rollback.code, 0, rollback.stderr);
    const b = await body();
    assert.equal(b.rev, 1);
    assert.equal(b.dev, false, "v1's vendor/ (no development dependencies)");
    assert.equal(await vendorMount((await current()).instances[0]!), first);

    const scale = await pier.cli(["scale", "--instances", "2", "--app", "phpvol"]);
    assert.equal(scale.code, 0, scale.stderr);
    const c = await current();
    assert.equal(c.instances.length, 2);
    for (const id of c.instances) assert.equal(await vendorMount(id), first, "each instance mounts it");
    for (let i = 0; i < 4; i++) assert.equal((await body()).greet, "hello pier");
  });

  test("a failing composer install leaves the previous release serving and no new volume", async () => {
    const before = await volumes();
    const r = await pushMissingPackage("missing package");
    assert.match(r.stderr, /vendor\/ goes into the volume/);
    assert.equal((await body()).greet, "hello pier", "the previous release keeps serving");
    assert.deepEqual(await volumes(), before, "the failed build's volume is gone");
    await pier.commit(repo, { "composer.json": COMPOSER_APP["composer.json"]! }, "composer back");

    // A first deploy whose install fails: its build container (started while the push was received) and
    // its volume go.
    const bad = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpbad"]);
    const buildsOf = () =>
      docker("ps", "-aq", "--filter", `label=pier.app=${bad.id}`, "--filter", "label=pier.role=build");
    const badRepo = await pier.repo(
      "phpbad",
      {
        ...COMPOSER_APP,
        "composer.json": COMPOSER_APP["composer.json"]!.replace(
          '"acme/greeter": "*"',
          '"acme/missing": "^1"',
        ),
      },
      bad.id,
    );
    // Refused before the build (no index file in the project root): the container started ahead goes.
    const planned = await pier.push(badRepo);
    assert.notEqual(planned.code, 0);
    assert.match(planned.stderr, /No index\.php or index\.html/);
    let waiting = "";
    for (let i = 0; i < 50; i++) {
      waiting = await buildsOf();
      if (waiting === "") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(waiting, "", "no build container waits after a deploy refused before its build");
    const webroot = await pier.cli(["env", "set", "CC_WEBROOT", "/public", "--app", "phpbad"]);
    assert.equal(webroot.code, 0, webroot.stderr);
    await pier.commit(badRepo, {}, "again");
    const first = await pier.push(badRepo);
    assert.notEqual(first.code, 0);
    assert.match(first.stderr, /the build container started while the push was received/);
    assert.match(first.stderr, /Installing dependencies: composer install .* failed/);
    assert.match(first.stderr, /requires acme\/missing/);
    const left = await docker(
      "volume",
      "ls",
      "-q",
      "--filter",
      `label=pier.app=${bad.id}`,
      "--filter",
      "label=pier.role=release-volume",
    );
    assert.equal(left, "", "no volume of the failed first deploy");
    assert.equal(await buildsOf(), "", "no build container left");
  });

  test("a cancelled first build leaves no volume and no build container", async () => {
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "phpserver", "phpcancel"]);
    for (const [k, v] of [
      ["CC_WEBROOT", "/public"],
      ["CC_PRE_BUILD_HOOK", "sleep 30"],
    ] as const) {
      const r = await pier.cli(["env", "set", k, v, "--app", "phpcancel"]);
      assert.equal(r.code, 0, r.stderr);
    }
    const cancelRepo = await pier.repo("phpcancel", { ...COMPOSER_APP }, app.id);
    const pushing = pier.push(cancelRepo);
    const volumesOf = () =>
      docker(
        "volume",
        "ls",
        "-q",
        "--filter",
        `label=pier.app=${app.id}`,
        "--filter",
        "label=pier.role=release-volume",
      );
    const buildsOf = () =>
      docker("ps", "-aq", "--filter", `label=pier.app=${app.id}`, "--filter", "label=pier.role=build");
    // The build runs (its hook sleeps) with its volume made.
    let deployments: { state: string }[] = [];
    for (let i = 0; i < 100; i++) {
      deployments = (await pier.api("GET", `/v1/apps/${app.id}/deployments`)).json as { state: string }[];
      if (deployments.some((d) => d.state === "building") && (await volumesOf()) !== "") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.notEqual(await volumesOf(), "", "the build has its volume");
    await new Promise((r) => setTimeout(r, 500));
    const cancel = await pier.cli(["cancel-deploy", "--app", "phpcancel"]);
    assert.equal(cancel.code, 0, cancel.stderr);
    const pushed = await pushing;
    assert.notEqual(pushed.code, 0, "the cancelled deploy refuses the push");
    assert.match(pushed.stderr, /Cancelled by the user/);
    assert.equal(await volumesOf(), "", "the cancelled build's volume is gone");
    assert.equal(await buildsOf(), "", "its build container too");
  });

  test("a classmap autoloader: an unchanged lock copies the volume and dumps into the copy only", async () => {
    const classmap = JSON.parse(COMPOSER_APP["composer.json"]!) as Record<string, unknown>;
    classmap.autoload = { classmap: ["lib/"] };
    await push("classmap", {
      "composer.json": `${JSON.stringify(classmap, null, 2)}\n`,
      "lib/ProjV1.php": "<?php\nclass ProjV1 {}\n",
    });
    const a = await vendorMount((await current()).instances[0]!);
    const log = await push("a class of the project", { "lib/ProjV2.php": "<?php\nclass ProjV2 {}\n" });
    assert.match(
      log,
      /vendor\/ reused from the current release, copied into a new volume; composer dump-autoload/,
    );
    const c = await current();
    const b = await vendorMount(c.instances[0]!);
    assert.notEqual(b, a, "a new volume");
    const found = await docker(
      "exec",
      c.instances[0]!,
      "php",
      "-r",
      'require "/app/vendor/autoload.php"; echo class_exists("ProjV2") && class_exists("Acme\\Greeter") ? "yes" : "no";',
    );
    assert.equal(found, "yes", "the dump lists the new class; the packages are there");
    const old = await run([
      DOCKER,
      "run",
      "--rm",
      "-v",
      `${a}:/v:ro`,
      "pier/php:8.4",
      "grep",
      "-c",
      "ProjV2",
      "/v/composer/autoload_classmap.php",
    ]);
    assert.equal(old.stdout.trim(), "0", "the previous release's volume was not written");
    await push("no classmap", { "composer.json": COMPOSER_APP["composer.json"]! });
  });

  test("vendor/ unchanged and nothing else to run (no php.ini, no hook): no build container at all", async () => {
    const before = (await current()).instances[0]!;
    const mode = await docker("exec", before, "stat", "-c", "%a %U", "/app", "/app/public/index.php");
    const volume = await vendorMount(before);
    rmSync(join(repo, "php.ini"));
    const log = await push("no php.ini");
    assert.match(log, /vendor\/ reused from the current release/);
    assert.match(log, /Nothing to run: the release image is the commit's files on pier\/php:8\.4/);
    assert.doesNotMatch(log, /Building in a .* build container/);
    const b = await body();
    assert.equal(b.greet, "hello pier");
    assert.notEqual(b.memory_limit, "77M", "php.ini is gone");
    const after = (await current()).instances[0]!;
    assert.equal(await vendorMount(after), volume, "the same volume");
    assert.equal(
      await docker("exec", after, "stat", "-c", "%a %U", "/app", "/app/public/index.php"),
      mode,
      "the files as a build container leaves them",
    );
    // Its image says a redeploy runs nothing: the next push starts no build container ahead.
    const next = await push("rev 3", {
      "public/index.php": COMPOSER_APP["public/index.php"]!.replace("'rev' => 1", "'rev' => 3"),
    });
    assert.doesNotMatch(next, /started while the push was received/);
    assert.match(next, /Nothing to run/);
    assert.equal((await body()).rev, 3);

    // An install with nothing else to run: the image is made while composer runs. A failing install
    // leaves neither that image nor its volume, and the previous release serving.
    const images = async () =>
      lines(await docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", `pier-app/${appId}`)).sort();
    const [imagesBefore, volumesBefore] = [await images(), await volumes()];
    await pushMissingPackage("missing package, no php.ini");
    assert.equal((await body()).rev, 3, "the previous release keeps serving");
    // (The prune after the last success may still take old ones meanwhile: only new ones count.)
    const added = (now: string[], before: string[]) => now.filter((x) => !before.includes(x));
    assert.deepEqual(added(await images(), imagesBefore), [], "no image of the failed deployment");
    assert.deepEqual(added(await volumes(), volumesBefore), [], "no volume of the failed deployment");
    const back = await push("composer back, relocked, no php.ini", {
      "composer.json": COMPOSER_APP["composer.json"]!,
      ...(await relock(20)),
    });
    assert.match(back, /-----> Installing dependencies/);
    assert.equal((await body()).greet, "hello pier", "an install with the image made alongside serves");
  });

  test("pruning old releases removes the volumes no image names", async () => {
    // Each push relocks: one volume per release; the images of the last 5 releases are kept.
    for (let n = 3; n <= 8; n++) await push(`relock ${n}`, await relock(n));
    const named = async () => {
      const tags = lines(
        await docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", `pier-app/${appId}`),
      );
      const names = new Set<string>();
      for (const t of tags) names.add((await imageVolume(t)).split(":")[0]!);
      return names;
    };
    let left: string[] = [];
    for (let i = 0; i < 60; i++) {
      const names = await named();
      left = (await volumes()).filter((v) => !names.has(v));
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(left, [], "no release volume that no image names");
    assert.ok(!(await volumes()).includes(first), "v1's volume went with its image");
    assert.equal((await body()).greet, "hello pier");
  });

  test("deleting the app removes its release volumes", async () => {
    assert.ok((await volumes()).length > 0);
    const del = await pier.cli(["delete", "--app", "phpvol", "--yes"]);
    assert.equal(del.code, 0, del.stderr);
    const all = lines(await docker("volume", "ls", "-q")).filter((v) => v.includes(appId));
    assert.deepEqual(all, [], "no volume of the app is left");
    const containers = await docker("ps", "-aq", "--filter", `label=pier.app=${appId}`);
    assert.equal(containers, "", "no container of the app is left (builds started ahead included)");
  });
});
