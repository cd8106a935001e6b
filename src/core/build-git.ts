/**
 * Git over SSH inside a build (contract section 5.2, private dependencies): the app's private SSH key is
 * used for `git+ssh://` dependencies, and repositories on Pier's own git server are reached through a
 * unix socket mounted into the build container, whatever address the server listens on. Pure: it returns
 * the files to put in the build's secrets folder and the environment that makes git and ssh use them.
 */

/** The host alias Pier's own git server has inside builds. */
export const PIER_GIT_ALIAS = "pier-git";

export interface BuildGitInput {
  /** Where the build sees its secrets folder (read-only), e.g. `/pier`. */
  secretsDir: string;
  /** Where the build sees the unix socket of Pier's git server. */
  pierSocket: string;
  /** Pier's host public key (`ssh-ed25519 AAAA...`), pinned for the alias. */
  pierHostKey: string;
  /** The URL prefixes users write for Pier's repositories, e.g. `ssh://git@localhost:2222/`. */
  pierPrefixes: readonly string[];
  /** Whether the app has a private key (written by the caller as `ssh_key` in secretsDir). */
  hasKey: boolean;
}

export interface BuildGitSetup {
  /** File name (inside secretsDir) to content. The private key itself is written by the caller as `ssh_key`. */
  files: Record<string, string>;
  env: Record<string, string>;
}

/** The URL prefixes of Pier's own repositories, as `git+ssh://git@<host>[:port]/<app>.git` reaches git (npm drops `git+`). */
export function pierGitPrefixes(gitHost: string, sshPort: number): string[] {
  const out = [`ssh://git@${gitHost}:${sshPort}/`];
  if (sshPort === 22) out.push(`ssh://git@${gitHost}/`, `git@${gitHost}:`);
  return out;
}

export function buildGitSetup(i: BuildGitInput): BuildGitSetup {
  const d = i.secretsDir;
  const sshConfig = [
    `Host ${PIER_GIT_ALIAS}`,
    "  User git",
    `  ProxyCommand node ${d}/git-proxy.cjs`,
    "  StrictHostKeyChecking yes",
    `  UserKnownHostsFile ${d}/known_hosts`,
    "Host *",
    // Other hosts (GitHub, a company server) are not known in advance: the first key seen is accepted,
    // as npm itself does for git dependencies.
    "  StrictHostKeyChecking accept-new",
    "  UserKnownHostsFile /tmp/pier-known-hosts",
    ...(i.hasKey ? [`  IdentityFile ${d}/ssh_key`, "  IdentitiesOnly yes"] : []),
    "  BatchMode yes",
    "  LogLevel ERROR",
    "",
  ].join("\n");
  const proxy = [
    "// Connects ssh to Pier's git server through the unix socket mounted into the build.",
    `const s = require("node:net").connect(${JSON.stringify(i.pierSocket)});`,
    's.on("error", (e) => { process.stderr.write("pier: Pier\'s git server cannot be reached from the build: " + e.message + "\\n"); process.exit(1); });',
    "process.stdin.pipe(s);",
    "s.pipe(process.stdout);",
    "",
  ].join("\n");
  const env: Record<string, string> = { GIT_SSH_COMMAND: `ssh -F ${d}/ssh_config` };
  i.pierPrefixes.forEach((prefix, n) => {
    env[`GIT_CONFIG_KEY_${n}`] = `url.ssh://git@${PIER_GIT_ALIAS}/.insteadOf`;
    env[`GIT_CONFIG_VALUE_${n}`] = prefix;
  });
  env.GIT_CONFIG_COUNT = String(i.pierPrefixes.length);
  return {
    files: {
      ssh_config: sshConfig,
      known_hosts: `${PIER_GIT_ALIAS} ${i.pierHostKey}\n`,
      "git-proxy.cjs": proxy,
    },
    env,
  };
}
