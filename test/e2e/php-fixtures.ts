import assert from "node:assert/strict";
import { run } from "./harness.js";

// A composer app for the PHP runtime's end-to-end tests: two path packages (one a development dependency),
// php.ini, and a webroot (public/) whose index.php answers what a test checks in JSON.

export const INDEX = `<?php
require __DIR__ . '/../vendor/autoload.php';
header('Content-Type: application/json');
echo json_encode([
  'php' => PHP_VERSION,
  'greet' => (new Acme\\Greeter())->hello('pier'),
  'dev' => class_exists('Acme\\DevTool'),
  'memory_limit' => ini_get('memory_limit'),
  'extensions' => array_map('strtolower', get_loaded_extensions()),
  'instance_type' => getenv('INSTANCE_TYPE'),
  'forwarded_proto' => $_SERVER['HTTP_X_FORWARDED_PROTO'] ?? '',
  'rev' => 1,
]);
`;

export const COMPOSER_APP: Record<string, string> = {
  ".gitignore": "/vendor/\n",
  "composer.json": `${JSON.stringify(
    {
      name: "pier/phpapp",
      require: { "acme/greeter": "*" },
      "require-dev": { "acme/devtool": "*" },
      repositories: [
        { type: "path", url: "packages/greeter", options: { symlink: false } },
        { type: "path", url: "packages/devtool", options: { symlink: false } },
        { "packagist.org": false },
      ],
    },
    null,
    2,
  )}\n`,
  "packages/greeter/composer.json": JSON.stringify({
    name: "acme/greeter",
    version: "1.0.0",
    autoload: { "psr-4": { "Acme\\": "src/" } },
  }),
  "packages/greeter/src/Greeter.php":
    '<?php\nnamespace Acme;\nclass Greeter { public function hello(string $n): string { return "hello $n"; } }\n',
  "packages/devtool/composer.json": JSON.stringify({
    name: "acme/devtool",
    version: "1.0.0",
    autoload: { "psr-4": { "Acme\\": "src/" } },
  }),
  "packages/devtool/src/DevTool.php": "<?php\nnamespace Acme;\nclass DevTool {}\n",
  "php.ini": "memory_limit = 77M\n",
  "public/index.php": INDEX,
  "public/robots.txt": "User-agent: *\n",
};

/** composer.lock made as a user makes it (packagist is not reachable: the packages are path repositories). */
export async function composerLock(repo: string): Promise<void> {
  const lock = await run([
    "/usr/bin/docker",
    "run",
    "--rm",
    "-v",
    `${repo}:/app`,
    "-w",
    "/app",
    "pier/php:8.4",
    "composer",
    "update",
    "--no-install",
    "--no-interaction",
    "--no-progress",
  ]);
  assert.equal(lock.code, 0, lock.stderr);
}

/**
 * A small Dockerfile app (PHP's built-in server on pier/php:8.4) for tests of what every runtime shares:
 * its base image carries only labels Pier puts on images.
 */
export const PHP_DOCKER_APP: Record<string, string> = {
  Dockerfile: [
    "FROM pier/php:8.4",
    "WORKDIR /srv",
    "COPY index.php .",
    'CMD ["php", "-S", "0.0.0.0:8080", "-t", "/srv"]',
    "",
  ].join("\n"),
  "index.php": "<?php echo 'ok';\n",
};
