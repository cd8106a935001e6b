import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { buildGitSetup, PIER_GIT_ALIAS, pierGitPrefixes } from "../../../src/core/build-git.js";

const input = {
  secretsDir: "/pier",
  pierSocket: "/run/pier-git.sock",
  pierHostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey",
  pierPrefixes: pierGitPrefixes("localhost", 2222),
  hasKey: true,
};

test("prefixes: the URL Pier prints (git+ssh://git@host:port/) as git sees it; port 22 adds the short forms", () => {
  assert.deepEqual(pierGitPrefixes("localhost", 2222), ["ssh://git@localhost:2222/"]);
  assert.deepEqual(pierGitPrefixes("git.example.com", 22), [
    "ssh://git@git.example.com:22/",
    "ssh://git@git.example.com/",
    "git@git.example.com:",
  ]);
});

test("git rewrites Pier's URLs to the socket-backed alias; other URLs are left alone", () => {
  const { env } = buildGitSetup({ ...input, pierPrefixes: pierGitPrefixes("git.example.com", 22) });
  const dir = mkdtempSync(join(tmpdir(), "pier-build-git-"));
  const rewrite = (url: string) =>
    execFileSync("git", ["ls-remote", "--get-url", url], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
      encoding: "utf8",
    }).trim();
  assert.equal(rewrite("ssh://git@git.example.com:22/app-1.git"), `ssh://git@${PIER_GIT_ALIAS}/app-1.git`);
  assert.equal(rewrite("ssh://git@git.example.com/app-1.git"), `ssh://git@${PIER_GIT_ALIAS}/app-1.git`);
  assert.equal(rewrite("git@git.example.com:app-1.git"), `ssh://git@${PIER_GIT_ALIAS}/app-1.git`);
  assert.equal(rewrite("ssh://git@github.com/me/lib.git"), "ssh://git@github.com/me/lib.git");
});

test("ssh config: Pier's alias goes through the socket with its host key pinned; the key is used when set", () => {
  const { files, env } = buildGitSetup(input);
  assert.equal(env.GIT_SSH_COMMAND, "ssh -F /pier/ssh_config");
  assert.equal(files.known_hosts, `${PIER_GIT_ALIAS} ${input.pierHostKey}\n`);
  assert.match(
    files.ssh_config ?? "",
    /Host pier-git\n {2}User git\n {2}ProxyCommand node \/pier\/git-proxy\.cjs\n {2}StrictHostKeyChecking yes/,
  );
  assert.match(files.ssh_config ?? "", /IdentityFile \/pier\/ssh_key/);
  assert.match(files["git-proxy.cjs"] ?? "", /connect\("\/run\/pier-git\.sock"\)/);
  const without = buildGitSetup({ ...input, hasKey: false });
  assert.doesNotMatch(without.files.ssh_config ?? "", /IdentityFile/);
});

test("ssh reads the config as valid (ssh -G)", () => {
  const { files } = buildGitSetup(input);
  const dir = mkdtempSync(join(tmpdir(), "pier-build-git-"));
  const cfg = files.ssh_config?.replaceAll("/pier/", `${dir}/`) ?? "";
  writeFileSync(join(dir, "ssh_config"), cfg);
  const out = execFileSync("ssh", ["-F", join(dir, "ssh_config"), "-G", PIER_GIT_ALIAS], {
    encoding: "utf8",
  });
  assert.match(out, /^user git$/m);
  assert.match(out, /^stricthostkeychecking (true|yes)$/m);
  assert.match(out, new RegExp(`^proxycommand node ${dir}/git-proxy\\.cjs$`, "m"));
  const other = execFileSync("ssh", ["-F", join(dir, "ssh_config"), "-G", "github.com"], {
    encoding: "utf8",
  });
  assert.match(other, /^stricthostkeychecking accept-new$/m);
});
