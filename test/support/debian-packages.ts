// Debian trixie's packaged PHP code (Symfony, Laravel, WordPress...) for end-to-end tests that build real
// framework apps without Packagist: the packages are downloaded with apt-get in a throwaway pier/php:8.4
// container (its apt sources are trixie's) and extracted once into a cache outside the repository.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The cache's root: `$PIER_TEST_CACHE/debian`, else `~/.cache/pier-test/debian`. */
export function debianCacheDir(): string {
  const base = process.env.PIER_TEST_CACHE || join(homedir(), ".cache", "pier-test");
  return join(base, "debian");
}

/** Meta packages and PHP extensions: pier/php:8.4 has the extensions already, and apt would pull PHP itself. */
const NOT_CODE = /^php-(cli|common|intl|json|mbstring|xml|uuid|gd|mysql|cgi|fpm|curl|zip|sqlite3|pgsql)$/;

/**
 * The script run in the container, as root, in /out. Its arguments are the package names (never spliced
 * into the script). CLOSURE=1 adds the php-* packages the roots depend on, recursively.
 */
const SCRIPT = `set -eu
apt-get update -qq
pkgs="$*"
if [ "$CLOSURE" = 1 ]; then
  deps=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \\
    --no-replaces --no-enhances "$@" | grep '^php-' | grep -vE "$NOT_CODE" | sort -u)
  pkgs="$pkgs $deps"
fi
mkdir -p debs root
cd debs
apt-get download -qq $pkgs
for d in *.deb; do dpkg-deb -x "$d" ../root; done
ls > ../packages.txt
cd ..
rm -rf debs
chown -R "$OWNER" /out
`;

const NAME = /^[a-z0-9][a-z0-9+.-]*$/;

/** The cache entry of these packages: `<cache>/<set>-<hash of the sorted roots and the closure flag>`. */
export function debianEntry(set: string, roots: string[], closure: boolean): string {
  if (!NAME.test(set)) throw new Error(`debianPackages: set '${set}' is not a simple name`);
  const bad = roots.filter((r) => !NAME.test(r));
  if (roots.length === 0 || bad.length)
    throw new Error(`debianPackages: bad package names: ${bad.join(", ")}`);
  const hash = createHash("sha256")
    .update(JSON.stringify({ roots: [...roots].sort(), closure }))
    .digest("hex")
    .slice(0, 12);
  return join(debianCacheDir(), `${set}-${hash}`);
}

/** One build at a time per cache entry in this process (two test files run in two processes: see the rename). */
const building = new Map<string, Promise<string>>();

/**
 * Debian trixie packages and their php-* dependency closure, downloaded once (apt-get download in a
 * throwaway pier/php:8.4 container) into a cache, extracted; returns the extracted root (it holds
 * usr/share/...). The entry is `<cache>/<set>-<hash of roots>`; it is built in a temporary directory
 * beside it and renamed into place, so two processes asking at once both end with one whole entry.
 */
export async function debianPackages(
  set: string,
  roots: string[],
  opts: { closure?: boolean } = {},
): Promise<string> {
  const closure = opts.closure ?? true;
  const entry = debianEntry(set, roots, closure);
  const pending = building.get(entry) ?? build(entry, roots, closure);
  building.set(entry, pending);
  return pending;
}

async function build(entry: string, roots: string[], closure: boolean): Promise<string> {
  const root = join(entry, "root");
  if (existsSync(join(entry, "packages.txt"))) return root;
  mkdirSync(debianCacheDir(), { recursive: true });
  const tmp = mkdtempSync(`${entry}.tmp-`);
  chmodSync(tmp, 0o755); // mkdtemp makes it 0700: the entry is read by whoever runs the tests next
  try {
    await download(tmp, roots, closure);
    try {
      renameSync(tmp, entry);
    } catch (e) {
      // Another process renamed its copy first: use that one.
      if (!existsSync(join(entry, "packages.txt"))) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return root;
}

function download(out: string, roots: string[], closure: boolean): Promise<void> {
  const owner = `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
  const argv = [
    "run",
    "--rm",
    "--user",
    "0",
    "-e",
    `CLOSURE=${closure ? 1 : 0}`,
    "-e",
    `NOT_CODE=${NOT_CODE.source}`,
    "-e",
    `OWNER=${owner}`,
    "-v",
    `${out}:/out`,
    "-w",
    "/out",
    "--entrypoint",
    "sh",
    "pier/php:8.4",
    "-c",
    SCRIPT,
    "sh",
    ...roots,
  ];
  return new Promise((res, rej) => {
    const child = spawn("docker", argv, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-4000);
    });
    child.on("error", rej);
    child.on("close", (code) => {
      if (code === 0) res();
      else
        rej(
          new Error(
            `debianPackages: apt-get in pier/php:8.4 exited ${code} for ${roots.join(" ")}:\n${stderr}`,
          ),
        );
    });
  });
}
