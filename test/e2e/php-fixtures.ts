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

/**
 * composer.lock written by composer itself in pier/php:8.4, with no network, as a user without Packagist makes
 * it (the packages are path repositories).
 */
export async function composerLock(repo: string): Promise<void> {
  const lock = await run([
    "/usr/bin/docker",
    "run",
    "--rm",
    "--network",
    "none",
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
    "--no-audit",
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

/**
 * A PHP app whose scripts run the same in classic and worker mode, the way FrankenPHP's own tests drive
 * theirs: each script returns its request handler and requires the runner, which calls the handler once
 * (classic mode) or loops on frankenphp_handle_request() (worker mode, told by $_SERVER['FRANKENPHP_WORKER']
 * while the script boots). Worker mode serves `public/index.php` (CC_PHPSERVER_WORKER=/public/index.php),
 * which picks the behaviour under test from `?t=`. `runtime.php` returns early without SCRIPT_FILENAME,
 * as Symfony Runtime's generated autoload_runtime.php does.
 */
export const FRANKENPHP_APP: Record<string, string> = {
  "php.ini": "display_errors = On\ndisable_functions = exec\n",
  "public/runtime.php": `<?php
if (empty($_SERVER['SCRIPT_FILENAME'])) return;
$handler = require $_SERVER['SCRIPT_FILENAME'];
if (($_SERVER['FRANKENPHP_WORKER'] ?? null) !== '1') {
    $handler();
    exit(0);
}
while (frankenphp_handle_request($handler)) {
}
exit(0);
`,
  "public/index.php": `<?php
$boot = ['server' => $_SERVER, 'env' => getenv('FRANKENPHP_WORKER')];
require_once __DIR__ . '/runtime.php';
return function () use ($boot) {
    static $served = 0;
    $served++;
    ini_set('display_errors', $_GET['display'] ?? '1');
    $i = $_GET['i'] ?? '';
    switch ($_GET['t'] ?? 'server') {
        case 'boot':
            header('Content-Type: application/json');
            echo json_encode($boot);
            return;
        case 'server':
            header('Content-Type: application/json');
            echo json_encode(['server' => $_SERVER, 'env' => getenv('FRANKENPHP_WORKER'), 'served' => $served]);
            return;
        case 'exception':
            echo 'hello';
            throw new Exception("request $i");
        case 'fatal':
            echo 'before';
            $too = str_repeat('x', 1 << 30);
            return;
        case 'exit':
            echo "bye $i";
            exit(0);
        case 'headers':
            header('Foo: bar');
            header('Foo2:bar2');
            header('Invalid');
            header("I: $i");
            if ((int) $i % 3) http_response_code((int) $i + 100);
            var_export(apache_response_headers());
            return;
        case 'hints':
            header('Link: </style.css>; rel=preload; as=style');
            header("Request: $i");
            headers_send(103);
            header_remove('Link');
            echo 'Hello';
            return;
        case 'log':
            frankenphp_log("warn message $i", FRANKENPHP_LOG_LEVEL_WARN, ['key int' => 1, 'err' => ['a', 'v']]);
            echo 'logged';
            return;
        case 'mercure':
            mercure_publish('https://example.com/books/1', 'x');
            return;
        case 'finish':
            echo "This is output $i\\n";
            function_exists('frankenphp_finish_request') ? frankenphp_finish_request() : fastcgi_finish_request();
            echo 'This is not';
            error_log("reached after finish_request $i");
            return;
        case 'sse':
            ignore_user_abort(true);
            header('Content-Type: text/event-stream');
            $n = 0;
            while (!connection_aborted() && $n < 300) {
                echo 'data: ' . $n++ . "\\n\\n";
                @ob_flush();
                flush();
                usleep(100000);
            }
            file_put_contents("/tmp/sse-$i.txt", "events $n, status " . connection_status());
            return;
        case 'functions':
            header(header: 'X-Named: yes', replace: true);
            setcookie(name: 'c', value: 'v 1', expires_or_options: ['path' => '/', 'httponly' => true]);
            header('Content-Type: application/json');
            echo json_encode(['exec' => function_exists('exec'), 'sent' => headers_sent(), 'code' => http_response_code()]);
            return;
        case 'sse-result':
            echo @file_get_contents("/tmp/sse-$i.txt");
            return;
    }
};
`,
};
