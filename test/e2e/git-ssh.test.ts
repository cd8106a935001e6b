// Git over SSH, for real: OpenSSH's client and git's own push/clone against Pier's SSH server on loopback,
// with a fake deploy (onPush) in place of the deployer. No dockerd needed.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import ssh2, { type ParsedKey, type PublicKeyAuthMethod } from "ssh2";
import { archiveCommit, commitInfo } from "../../src/adapters/git.js";
import { hookScript, type PushRequest, startGitSshServer } from "../../src/server/git-ssh.js";
import { freePort, type RunResult, run } from "./harness.js";

const { Client, utils } = ssh2;
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function keyBlob(pubFile: string): Buffer {
  const [, b64 = ""] = readFileSync(pubFile, "utf8").trim().split(/\s+/);
  return Buffer.from(b64, "base64");
}

/** Resolves when `check` holds, polling; fails the test after `ms`. */
async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("git push over SSH", () => {
  const tmp = mkdtempSync(join(tmpdir(), "pier-git-ssh-"));
  const key = join(tmp, "id_ed25519");
  const strangerKey = join(tmp, "stranger_ed25519");
  const deployKey = join(tmp, "deploy_ed25519");
  const reposDir = join(tmp, "repos");
  let port = 0;
  let close: () => Promise<void> = async () => undefined;

  interface Call {
    req: PushRequest;
    subject: string;
    /** hello.txt of the pushed commit, extracted with the hook's gitEnv while the push waits. */
    hello: string | null;
    aborted: boolean;
    done: boolean;
  }
  const calls: Call[] = [];
  /** Pushes whose commit subject contains "hold" wait here until released. */
  const held: (() => void)[] = [];

  const sshCommand = (k: string) =>
    `ssh -i ${k} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -o LogLevel=ERROR`;
  const env = (k = key): NodeJS.ProcessEnv => ({
    ...process.env,
    GIT_SSH_COMMAND: sshCommand(k),
    GIT_AUTHOR_NAME: "e2e",
    GIT_AUTHOR_EMAIL: "e2e@pier.test",
    GIT_COMMITTER_NAME: "e2e",
    GIT_COMMITTER_EMAIL: "e2e@pier.test",
    GIT_TERMINAL_PROMPT: "0",
  });
  const git = (args: string[], k = key): Promise<RunResult> =>
    run(["git", ...args], { env: env(k), timeoutMs: 60_000 });
  const remote = (app: string) => `git+ssh://git@127.0.0.1:${port}/${app}.git`;
  const bareMaster = async (app = "myapp") =>
    (
      await git(["-C", join(reposDir, `${app}.git`), "rev-parse", "--verify", "-q", "refs/heads/master"])
    ).stdout.trim();
  const head = async (dir: string) => (await git(["-C", dir, "rev-parse", "HEAD"])).stdout.trim();

  async function workTree(name: string, app = "myapp"): Promise<string> {
    const dir = join(tmp, "src", name);
    mkdirSync(dir, { recursive: true });
    await git(["init", "-q", "-b", "master", dir]);
    await git(["-C", dir, "remote", "add", "pier", remote(app)]);
    return dir;
  }
  async function commit(dir: string, files: Record<string, string>, message: string): Promise<string> {
    for (const [f, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), content);
    }
    await git(["-C", dir, "add", "-A"]);
    const r = await git(["-C", dir, "commit", "-q", "--allow-empty", "-m", message]);
    assert.equal(r.code, 0, r.stderr);
    return head(dir);
  }
  const push = (dir: string, refspec = "master", k = key) => git(["-C", dir, "push", "pier", refspec], k);

  before(async () => {
    for (const k of [key, strangerKey, deployKey]) {
      const r = await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "e2e@pier", "-f", k]);
      assert.equal(r.code, 0, r.stderr);
    }
    const allowed = keyBlob(`${key}.pub`);
    const readOnly = keyBlob(`${deployKey}.pub`);
    const server = await startGitSshServer({
      host: "127.0.0.1",
      port: 0,
      hostKeyPath: join(tmp, "data", "ssh_host_ed25519_key"),
      reposDir,
      runDir: join(tmp, "run"),
      maxPushBytes: 50 * 1024 * 1024,
      logger: quiet,
      authorizeKey: async (_algo, blob) =>
        blob.equals(allowed)
          ? { fingerprint: "SHA256:e2e", keyId: "push" }
          : blob.equals(readOnly)
            ? { fingerprint: "SHA256:deploy", keyId: "deploy" }
            : null,
      // The server's own answers (src/server/access.ts authorizeRepo) are tested in tenancy.test.ts.
      authorizeRepo: async (keyId, appId, op) =>
        appId !== "myapp" && appId !== "busy"
          ? `pier: app '${appId}' not found. Create it with \`pier create\`; see \`pier apps\`.`
          : keyId === "deploy" && op === "push"
            ? "pier: this key is a read-only deploy key: it may fetch (git clone, npm git dependencies) but not push."
            : null,
      resolveApp: async (ref) => (ref === "myapp" || ref === "busy" ? ref : null),
      onPush: async (req) => {
        const { subject } = await commitInfo(req.repoDir, req.newSha, req.gitEnv);
        const call: Call = { req, subject, hello: null, aborted: false, done: false };
        calls.push(call);
        req.signal.addEventListener("abort", () => {
          call.aborted = true;
        });
        const src = mkdtempSync(join(tmp, "build-"));
        await archiveCommit(req.repoDir, req.newSha, src, req.gitEnv);
        call.hello = readFileSync(join(src, "hello.txt"), "utf8");
        req.log("-----> Building myapp");
        req.log(`-----> Commit ${req.newSha.slice(0, 7)}: ${subject}`);
        if (subject.includes("hold")) await new Promise<void>((r) => held.push(r));
        req.log("-----> Done building");
        call.done = true;
        if (subject.includes("fail"))
          return {
            ok: false,
            message: "Deploy failed: the build exited with 1.\nThe previous release keeps serving.",
          };
        return { ok: true, message: "Deployed myapp." };
      },
    });
    port = server.port;
    close = server.close;
  });

  after(async () => {
    for (const r of held) r();
    await close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("git push master deploys, streams the log as remote: lines, and updates master", async () => {
    const dir = await workTree("app");
    const sha = await commit(dir, { "hello.txt": "hello v1\n" }, "first");
    const r = await push(dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /remote: -----> Building myapp/);
    assert.match(r.stderr, new RegExp(`remote: -----> Commit ${sha.slice(0, 7)}: first`));
    assert.match(r.stderr, /remote: Deployed myapp\./);
    assert.equal(await bareMaster(), sha);
    const call = calls.at(-1);
    assert.ok(call);
    assert.equal(call.req.appId, "myapp");
    assert.equal(call.req.ref, "refs/heads/master");
    assert.equal(call.req.oldSha, "0".repeat(40));
    assert.equal(call.req.newSha, sha);
    assert.equal(call.req.keyFingerprint, "SHA256:e2e");
    assert.ok(call.req.gitEnv.GIT_QUARANTINE_PATH, "the hook passes git's quarantine");
    // The pushed objects were only in quarantine while onPush ran; archiveCommit read them through gitEnv.
    assert.equal(call.hello, "hello v1\n");
  });

  test("a failed deploy rejects the push: non-zero exit, the message, master unchanged", async () => {
    const dir = join(tmp, "src", "app");
    const prev = await bareMaster();
    const sha = await commit(dir, { "hello.txt": "hello v2\n" }, "this one will fail");
    const r = await push(dir);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /remote: -----> Done building/);
    assert.match(
      r.stderr,
      /remote: Deploy failed: the build exited with 1\.\s*\nremote: The previous release keeps serving\./,
    );
    assert.match(r.stderr, /pre-receive hook declined/);
    assert.equal(calls.at(-1)?.req.newSha, sha);
    assert.equal(await bareMaster(), prev);
  });

  test("a push of another branch is refused with how to deploy it", async () => {
    const dir = join(tmp, "src", "app");
    await git(["-C", dir, "checkout", "-q", "-b", "feature"]);
    await commit(dir, { "hello.txt": "feature\n" }, "feature work");
    const n = calls.length;
    const r = await push(dir, "feature");
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /remote: Pier deploys the master branch only/);
    assert.match(r.stderr, /git push pier <branch>:master/);
    assert.equal(calls.length, n, "no deploy for a refused branch");
    // ... and the way it names works.
    const ok = await push(dir, "feature:master");
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(await bareMaster(), await head(dir));
    assert.equal(calls.at(-1)?.hello, "feature\n");
    await git(["-C", dir, "checkout", "-q", "master"]);
    await git(["-C", dir, "reset", "-q", "--hard", "feature"]);
  });

  test("deleting master is refused", async () => {
    const dir = join(tmp, "src", "app");
    const prev = await bareMaster();
    const r = await push(dir, ":master");
    assert.notEqual(r.code, 0);
    assert.equal(await bareMaster(), prev);
  });

  test("an unknown key gets Permission denied", async () => {
    const dir = join(tmp, "src", "app");
    const r = await push(dir, "master", strangerKey);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Permission denied \(publickey\)/);
  });

  test("a registered public key without its private key does not authenticate", async () => {
    // The attacker knows the user's ed25519 public key (public keys are public) and offers it as an RSA key
    // (rsa-sha2-256) with a made-up signature: with a sha256 digest, verifying an ed25519 key fails with an
    // Error instead of false.
    const real = utils.parseKey(readFileSync(`${key}.pub`));
    assert.ok(!(real instanceof Error) && !Array.isArray(real));
    const forged = Object.create(Object.getPrototypeOf(real)) as ParsedKey;
    // The key's own hidden fields (ssh2 keeps them under symbols) are copied as they are.
    for (const sym of Object.getOwnPropertySymbols(real)) {
      Reflect.set(forged, sym, Reflect.get(real, sym));
    }
    Object.defineProperties(forged, {
      type: { value: "ssh-rsa" },
      comment: { value: "" },
      isPrivateKey: { value: () => true },
      sign: { value: () => Buffer.alloc(64, 7) },
    });
    const outcome = await new Promise<string>((resolve) => {
      const c = new Client();
      c.on("ready", () => {
        c.end();
        resolve("authenticated");
      });
      c.on("error", (e) => resolve(e.message));
      c.connect({
        host: "127.0.0.1",
        port,
        username: "git",
        authHandler: [{ type: "publickey", username: "git", key: forged } as PublicKeyAuthMethod],
      });
    });
    assert.match(outcome, /All configured authentication methods failed/);
  });

  test("an unknown app gets a message saying how to create it", async () => {
    const dir = await workTree("nope", "nope");
    await commit(dir, { "hello.txt": "x\n" }, "first");
    const r = await push(dir);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pier: app 'nope' not found\. Create it with `pier create`/);
    const bad = await git(["-C", dir, "push", `git+ssh://git@127.0.0.1:${port}/../etc.git`, "master"]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /is not an app id/);
  });

  test("SSH commands other than git's are refused", async () => {
    const r = await run(
      ["ssh", ...sshCommand(key).split(" ").slice(1), "-p", String(port), "git@127.0.0.1", "cat /etc/passwd"],
      { timeoutMs: 30_000 },
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pier: only `git push` and `git fetch` are served over SSH/);
    assert.doesNotMatch(r.stdout, /root:/);
  });

  test("git clone of the app's repository gives the deployed commit", async () => {
    const dest = join(tmp, "clone");
    const r = await git(["clone", "-q", remote("myapp"), dest]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await head(dest), await bareMaster());
    assert.equal(readFileSync(join(dest, "hello.txt"), "utf8"), "feature\n");
  });

  test("a read-only deploy key clones but cannot push", async () => {
    const dest = join(tmp, "clone-deploy-key");
    const cloned = await git(["clone", "-q", remote("myapp"), dest], deployKey);
    assert.equal(cloned.code, 0, cloned.stderr);
    assert.equal(await head(dest), await bareMaster());
    const before = await bareMaster();
    const dir = await workTree("deploy-key-push");
    await commit(dir, { "hello.txt": "from a deploy key\n" }, "deploy key push");
    const calls0 = calls.length;
    const r = await push(dir, "master", deployKey);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /read-only deploy key: it may fetch .* but not push/);
    assert.equal(calls.length, calls0, "no deploy was started");
    assert.equal(await bareMaster(), before);
  });

  test("a second push while the first deploy still runs gets its own onPush call", async () => {
    const a = join(tmp, "clone");
    const b = join(tmp, "clone-b");
    assert.equal((await git(["clone", "-q", remote("myapp"), b])).code, 0);
    await git(["-C", a, "remote", "add", "pier", remote("myapp")]);
    await git(["-C", b, "remote", "add", "pier", remote("myapp")]);
    const base = await bareMaster();
    await commit(a, { "hello.txt": "from a\n" }, "a: hold");
    const shaB = await commit(b, { "hello.txt": "from b\n" }, "b: quick");

    const n = calls.length;
    const first = push(a);
    await until(() => held.length === 1, "the first push's onPush");
    const second = await push(b);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(calls.length, n + 2);
    assert.equal(calls[n]?.done, false, "the second push ran while the first's onPush was still running");
    assert.equal(calls[n + 1]?.hello, "from b\n");
    assert.equal(await bareMaster(), shaB);

    held.shift()?.();
    const r = await first;
    // Its deploy succeeded, but master moved under it: git refuses the stale ref update.
    assert.match(r.stderr, /remote: Deployed myapp\./);
    assert.notEqual(r.code, 0);
    assert.notEqual(base, shaB);
    assert.equal(await bareMaster(), shaB);
  });

  test("simultaneous pushes to one app all reach their deploy (no lock errors on the repository's set-up)", async () => {
    const dirs: string[] = [];
    for (let i = 0; i < 6; i++) dirs.push(await workTree(`busy-${i}`, "busy"));
    for (let round = 0; round < 3; round++) {
      // A new commit everywhere, so that no push is "Everything up-to-date".
      for (const [i, dir] of dirs.entries())
        await commit(dir, { "hello.txt": `busy ${round}.${i}\n` }, "busy");
      const n = calls.length;
      const results = await Promise.all(dirs.map((d) => git(["-C", d, "push", "-f", "pier", "master"])));
      for (const r of results) {
        assert.doesNotMatch(r.stderr, /could not lock config|pier: git exited/);
        assert.match(r.stderr, /remote: -----> Building myapp/);
      }
      assert.equal(calls.length, n + dirs.length);
    }
  });

  test("a pusher that disconnects aborts its push's signal", async () => {
    const dir = join(tmp, "clone-b");
    const prev = await bareMaster();
    await commit(dir, { "hello.txt": "abandoned\n" }, "hold then disconnect");
    const n = calls.length;
    // Its own process group, so that killing it takes ssh too (as closing a terminal would).
    const child: ChildProcess = spawn("git", ["-C", dir, "push", "pier", "master"], {
      env: env(),
      stdio: "ignore",
      detached: true,
    });
    const exited = new Promise((r) => child.on("close", r));
    await until(() => held.length === 1 && calls.length === n + 1, "the push's onPush");
    process.kill(-child.pid!, "SIGKILL");
    await exited;
    await until(() => calls[n]?.aborted === true, "the abort signal");
    held.shift()?.();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await bareMaster(), prev, "an abandoned push does not move master");
  });

  test("the hook says Pier is not running when it cannot reach the server", async () => {
    const hook = join(tmp, "pre-receive");
    writeFileSync(hook, hookScript(), { mode: 0o755 });
    const closed = await freePort();
    const r = await run([hook], {
      env: { ...process.env, PIER_HOOK_PORT: String(closed), PIER_PUSH_TOKEN: "x" },
      input: `${"0".repeat(40)} ${"1".repeat(40)} refs/heads/master\n`,
    });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /Pier is not running/);
    assert.equal(r.stderr, "", "no shell noise about the refused connection");
  });
});

describe("git over SSH: limits and shutdown", () => {
  const tmp = mkdtempSync(join(tmpdir(), "pier-git-ssh-limit-"));
  const key = join(tmp, "id_ed25519");
  let server: { port: number; close(): Promise<void> } | null = null;
  after(async () => {
    await server?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("a push larger than maxPushBytes is refused with a clear error", async () => {
    assert.equal((await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])).code, 0);
    let deploys = 0;
    server = await startGitSshServer({
      host: "127.0.0.1",
      port: 0,
      hostKeyPath: join(tmp, "host_key"),
      reposDir: join(tmp, "repos"),
      runDir: join(tmp, "run"),
      maxPushBytes: 64 * 1024,
      logger: quiet,
      authorizeKey: async () => ({ fingerprint: "SHA256:any", keyId: "any" }),
      authorizeRepo: async () => null,
      resolveApp: async (ref) => ref,
      onPush: async () => {
        deploys++;
        return { ok: true, message: "ok" };
      },
    });
    const dir = join(tmp, "app");
    const env = {
      ...process.env,
      GIT_SSH_COMMAND: `ssh -i ${key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -o LogLevel=ERROR`,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@pier.test",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@pier.test",
    };
    await run(["git", "init", "-q", "-b", "master", dir]);
    // Random bytes do not compress: the pack is about 1 MB.
    writeFileSync(
      join(dir, "blob.bin"),
      Buffer.from(Array.from({ length: 1 << 20 }, () => (Math.random() * 256) | 0)),
    );
    await run(["git", "-C", dir, "add", "-A"], { env });
    await run(["git", "-C", dir, "commit", "-q", "-m", "big"], { env });
    const r = await run(
      ["git", "-C", dir, "push", `git+ssh://git@127.0.0.1:${server.port}/big.git`, "master"],
      {
        env,
        timeoutMs: 60_000,
      },
    );
    assert.notEqual(r.code, 0);
    assert.equal(
      r.stderr.match(/pier: the push is larger than the limit of 65536 bytes/g)?.length,
      1,
      r.stderr,
    );
    assert.equal(deploys, 0);
  });

  test("close() ends open connections and cancels the deploys of waiting pushes", async () => {
    const tmp2 = mkdtempSync(join(tmpdir(), "pier-git-ssh-close-"));
    const key2 = join(tmp2, "id_ed25519");
    assert.equal((await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key2])).code, 0);
    let signal: AbortSignal | null = null;
    const s = await startGitSshServer({
      host: "127.0.0.1",
      port: 0,
      hostKeyPath: join(tmp2, "host_key"),
      reposDir: join(tmp2, "repos"),
      runDir: join(tmp2, "run"),
      maxPushBytes: 1 << 20,
      logger: quiet,
      authorizeKey: async () => ({ fingerprint: "SHA256:any", keyId: "any" }),
      authorizeRepo: async () => null,
      resolveApp: async (ref) => ref,
      onPush: async (req) => {
        signal = req.signal;
        req.log("-----> Building");
        // A deploy that ends only when cancelled.
        await new Promise((r) => req.signal.addEventListener("abort", r));
        return { ok: false, message: "Deploy cancelled." };
      },
    });
    // A connection that never says a word, and a push waiting for its deploy.
    const idle = connect(s.port, "127.0.0.1");
    idle.on("error", () => undefined);
    await new Promise((r) => idle.once("connect", r));
    const env = {
      ...process.env,
      GIT_SSH_COMMAND: `ssh -i ${key2} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -o LogLevel=ERROR`,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@pier.test",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@pier.test",
    };
    const dir = join(tmp2, "app");
    await run(["git", "init", "-q", "-b", "master", dir]);
    writeFileSync(join(dir, "a.txt"), "a\n");
    await run(["git", "-C", dir, "add", "-A"], { env });
    await run(["git", "-C", dir, "commit", "-q", "-m", "a"], { env });
    const pushed = run(["git", "-C", dir, "push", `git+ssh://git@127.0.0.1:${s.port}/app.git`, "master"], {
      env,
      timeoutMs: 60_000,
    });
    await until(() => signal !== null, "the push's onPush");

    // The deploy ends only when cancelled: close() resolving at all shows that it aborted it.
    await s.close();
    assert.equal((signal as AbortSignal | null)?.aborted, true);
    const r = await pushed;
    assert.notEqual(r.code, 0);
    idle.destroy();
    rmSync(tmp2, { recursive: true, force: true });
  });
});
