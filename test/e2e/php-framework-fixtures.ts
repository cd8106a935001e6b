// Symfony 6.4 and Laravel 10 apps as a user without Packagist commits them (issue 17, item 2;
// docs/research/php-frameworks-from-debian.md): Debian trixie's packaged PHP code copied into lib/, each
// package given a composer.json, required through composer path repositories, locked by composer itself
// with no network. The framework's own files are those of its skeleton, written out below.
import assert from "node:assert/strict";
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { debianPackages } from "../support/debian-packages.js";
import { run } from "./harness.js";

export const SYMFONY_DEBS = [
  "php-symfony-framework-bundle",
  "php-symfony-runtime",
  "php-symfony-twig-bundle",
  "php-symfony-dotenv",
  "php-symfony-yaml",
];
export const LARAVEL_DEBS = ["php-laravel-framework"];

/** Writes `files` (path -> text) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
}

/** The Debian version of `deb` (without its revision) in the set extracted at `root` (`<entry>/root`). */
function debVersion(root: string, deb: string): string {
  const list = readFileSync(join(root, "..", "packages.txt"), "utf8");
  const m = new RegExp(`^${deb}_([0-9.]+)`, "m").exec(list);
  if (!m?.[1]) throw new Error(`${deb} is not in ${root}`);
  return m[1];
}

const kebab = (s: string) => s.replace(/(?<!^)(?=[A-Z])/g, "-").toLowerCase();

/** The composer name upstream gives the package Debian installs at `rel` (under /usr/share/php). */
function packageName(rel: string): string {
  const [top, kind = "", name = ""] = rel.split("/");
  if (top === "Symfony") {
    const suffix = kind === "Bridge" ? "-bridge" : kind === "Contracts" ? "-contracts" : "";
    return `symfony/${kebab(name)}${suffix}`;
  }
  if (rel === "Illuminate") return "laravel/framework";
  if (rel === "Twig") return "twig/twig";
  if (top === "Psr" || top === "Illuminate") return `${top.toLowerCase()}/${kebab(kind)}`;
  return `debian/${rel.split("/").map(kebab).join("-")}`;
}

/** Package roots: the folders with a pkg-php-tools autoload.php, relative to `lib`. */
function packageRoots(lib: string, rel = ""): string[] {
  const here = join(lib, rel);
  const found: string[] = rel && readdirSync(here).includes("autoload.php") ? [rel] : [];
  for (const e of readdirSync(here)) {
    if (statSync(join(here, e)).isDirectory()) found.push(...packageRoots(lib, rel ? `${rel}/${e}` : e));
  }
  return found;
}

/**
 * The composer.json of the package at `rel`: its dependencies and helper files are those its Debian
 * autoload.php requires; its classes a classmap (Debian's folders do not always follow PSR-4).
 */
function composerJson(lib: string, rel: string, roots: Set<string>, version: string): object {
  const src = readFileSync(join(lib, rel, "autoload.php"), "utf8");
  const require: Record<string, string> = {};
  const files: string[] = [];
  for (const m of src.matchAll(
    /require_once\s+(?:'\/usr\/share\/php\/([^']+)'|__DIR__\s*\.\s*'\/([^']+)')/g,
  )) {
    const path = m[1] ?? normalize(join(rel, m[2] ?? ""));
    if (path.endsWith("/autoload.php")) {
      const dep = dirname(path);
      if (roots.has(dep)) require[packageName(dep)] = "*";
    } else if (m[2]) files.push(m[2]);
  }
  const name = packageName(rel);
  const autoload =
    name === "laravel/framework"
      ? { classmap: ["Foundation/"], files: ["Foundation/helpers.php"] }
      : { classmap: [""], ...(files.length ? { files } : {}) };
  if (name !== "symfony/runtime") return { name, version, require, autoload };
  return {
    name,
    version,
    type: "composer-plugin",
    require: { ...require, "composer-plugin-api": "^2.0", "symfony/filesystem": "*" },
    autoload,
    extra: { class: "Symfony\\Component\\Runtime\\Internal\\ComposerPlugin" },
  };
}

/**
 * Copies Debian's /usr/share/php (of the set at `root`) into `app/lib` and gives each package a
 * composer.json; returns the path repositories (globs) an app's composer.json names.
 */
export function debianLib(root: string, app: string, version: string): object[] {
  const lib = join(app, "lib");
  cpSync(join(root, "usr/share/php"), lib, { recursive: true });
  const roots = packageRoots(lib);
  const set = new Set(roots);
  for (const rel of roots) {
    writeFileSync(
      join(lib, rel, "composer.json"),
      `${JSON.stringify(composerJson(lib, rel, set, version), null, 2)}\n`,
    );
  }
  const depths = [...new Set(roots.map((r) => r.split("/").length))].sort((a, b) => a - b);
  return [
    ...depths.map((d) => ({ type: "path", url: relative(app, join(lib, ...Array(d).fill("*"))) })),
    { "packagist.org": false },
  ];
}

/** composer.lock written by composer itself, with no network (as a user without Packagist makes it). */
export async function composerLockOffline(dir: string): Promise<void> {
  const r = await run([
    "/usr/bin/docker",
    "run",
    "--rm",
    "--network",
    "none",
    "-v",
    `${dir}:/app`,
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
  assert.equal(r.code, 0, r.stderr);
}

/** A Symfony 6.4 app in `dir` (lib/ from Debian, composer.json, composer.lock, the skeleton's files). */
export async function symfonyApp(dir: string): Promise<void> {
  const root = await debianPackages("symfony", SYMFONY_DEBS);
  const repositories = debianLib(root, dir, debVersion(root, "php-symfony-framework-bundle"));
  const composer = {
    name: "pier-test/symfony",
    type: "project",
    repositories,
    require: Object.fromEntries(
      ["framework-bundle", "runtime", "twig-bundle", "dotenv", "yaml"].map((p) => [`symfony/${p}`, "*"]),
    ),
    autoload: { "psr-4": { "App\\": "src/" } },
    config: { "allow-plugins": { "symfony/runtime": true } },
  };
  writeFiles(dir, { ...SYMFONY_FILES, "composer.json": `${JSON.stringify(composer, null, 2)}\n` });
  await composerLockOffline(dir);
}

/** A Laravel 10 app in `dir` (lib/ from Debian, composer.json, composer.lock, the skeleton's files). */
export async function laravelApp(dir: string): Promise<void> {
  const root = await debianPackages("laravel", LARAVEL_DEBS);
  const repositories = debianLib(root, dir, debVersion(root, "php-laravel-framework"));
  const composer = {
    name: "pier-test/laravel",
    type: "project",
    repositories,
    require: { "laravel/framework": "*" },
    autoload: { "psr-4": { "App\\": "app/" } },
  };
  writeFiles(dir, { ...LARAVEL_FILES, "composer.json": `${JSON.stringify(composer, null, 2)}\n` });
  await composerLockOffline(dir);
}

/** Symfony's skeleton, a Twig page, a JSON route with a per-kernel counter, and the FrankenPHP runtime. */
export const SYMFONY_FILES: Record<string, string> = {
  ".gitignore": "/vendor/\n",
  ".env": "APP_ENV=prod\nAPP_DEBUG=0\nAPP_SECRET=2f0e6c1d9a8b7e6f5a4b3c2d1e0f9a8b\n",
  "public/index.php": `<?php

use App\\Kernel;

require_once dirname(__DIR__).'/vendor/autoload_runtime.php';

return function (array $context) {
    return new Kernel($context['APP_ENV'], (bool) $context['APP_DEBUG']);
};
`,
  "src/Kernel.php": `<?php

namespace App;

use Symfony\\Bundle\\FrameworkBundle\\FrameworkBundle;
use Symfony\\Bundle\\FrameworkBundle\\Kernel\\MicroKernelTrait;
use Symfony\\Bundle\\TwigBundle\\TwigBundle;
use Symfony\\Component\\DependencyInjection\\Loader\\Configurator\\ContainerConfigurator;
use Symfony\\Component\\HttpKernel\\Kernel as BaseKernel;
use Symfony\\Component\\Routing\\Loader\\Configurator\\RoutingConfigurator;

class Kernel extends BaseKernel
{
    use MicroKernelTrait;

    public function registerBundles(): iterable
    {
        yield new FrameworkBundle();
        yield new TwigBundle();
    }

    protected function configureContainer(ContainerConfigurator $c): void
    {
        $c->extension('framework', [
            'secret' => '%env(APP_SECRET)%',
            'http_method_override' => false,
            'handle_all_throwables' => true,
            'php_errors' => ['log' => true],
        ]);
        $c->extension('twig', ['default_path' => '%kernel.project_dir%/templates']);
        $c->services()->defaults()->autowire()->autoconfigure()
            ->load('App\\\\Controller\\\\', __DIR__.'/Controller/');
    }

    protected function configureRoutes(RoutingConfigurator $routes): void
    {
        $routes->import(__DIR__.'/Controller/', 'attribute');
    }
}
`,
  "src/Controller/HomeController.php": `<?php

namespace App\\Controller;

use Symfony\\Bundle\\FrameworkBundle\\Controller\\AbstractController;
use Symfony\\Component\\HttpFoundation\\JsonResponse;
use Symfony\\Component\\HttpFoundation\\Response;
use Symfony\\Component\\HttpKernel\\Kernel;
use Symfony\\Component\\Routing\\Attribute\\Route;

class HomeController extends AbstractController
{
    /** The controller is a service of the kernel's container: it lives as long as the kernel. */
    private int $hits = 0;

    #[Route('/', name: 'home')]
    public function home(): Response
    {
        return $this->render('home.html.twig', ['version' => Kernel::VERSION]);
    }

    #[Route('/hello/{name}', name: 'hello')]
    public function hello(string $name): JsonResponse
    {
        return $this->json(['hello' => $name, 'pid' => getmypid(), 'hits' => ++$this->hits]);
    }
}
`,
  "templates/home.html.twig": `<!doctype html>
<html><head><title>Symfony on Pier</title></head>
<body><h1>Hello from Symfony {{ version }}</h1><p>Rendered by Twig {{ constant('Twig\\\\Environment::VERSION') }}.</p>
<p><a href="{{ url('hello', {name: 'pier'}) }}">hello</a></p></body></html>
`,
  "src/Runtime/FrankenPhpRuntime.php": `<?php

namespace App\\Runtime;

use Symfony\\Component\\HttpKernel\\HttpKernelInterface;
use Symfony\\Component\\Runtime\\RunnerInterface;
use Symfony\\Component\\Runtime\\SymfonyRuntime;

/** Symfony 6.4's runtime has no FrankenPHP runner (symfony/runtime has one from 7.4): the app brings it. */
class FrankenPhpRuntime extends SymfonyRuntime
{
    public function getRunner(?object $application): RunnerInterface
    {
        if ($application instanceof HttpKernelInterface && ($_SERVER['FRANKENPHP_WORKER'] ?? false)) {
            return new FrankenPhpRunner($application, (int) ($_SERVER['FRANKENPHP_LOOP_MAX'] ?? 500));
        }

        return parent::getRunner($application);
    }
}
`,
  "src/Runtime/FrankenPhpRunner.php": `<?php

namespace App\\Runtime;

use Symfony\\Component\\HttpFoundation\\Request;
use Symfony\\Component\\HttpKernel\\HttpKernelInterface;
use Symfony\\Component\\HttpKernel\\TerminableInterface;
use Symfony\\Component\\Runtime\\RunnerInterface;

/** The kernel is booted once; each frankenphp_handle_request() call handles one request. */
class FrankenPhpRunner implements RunnerInterface
{
    public function __construct(private HttpKernelInterface $kernel, private int $loopMax)
    {
    }

    public function run(): int
    {
        // What the runtime put in $_SERVER at boot (.env, APP_ENV...) is added to each request's.
        $boot = array_filter($_SERVER, static fn ($k) => !str_starts_with($k, 'HTTP_'), ARRAY_FILTER_USE_KEY);
        unset($boot['FRANKENPHP_WORKER']);
        $request = $response = null;
        $handler = function () use ($boot, &$request, &$response): void {
            $_SERVER += $boot;
            $request = Request::createFromGlobals();
            $response = $this->kernel->handle($request);
            $response->send();
        };
        $loops = 0;
        do {
            $more = \\frankenphp_handle_request($handler);
            if ($this->kernel instanceof TerminableInterface && $request && $response) {
                $this->kernel->terminate($request, $response);
            }
            $request = $response = null;
            gc_collect_cycles();
        } while ($more && (0 >= $this->loopMax || ++$loops < $this->loopMax));

        return 0;
    }
}
`,
};

/** Laravel 10's skeleton, trimmed to what the pages need; public/worker.php is Octane's FrankenPHP loop. */
export const LARAVEL_FILES: Record<string, string> = {
  ".gitignore": "/vendor/\n",
  ".env": [
    "APP_NAME=PierLaravel",
    "APP_ENV=production",
    "APP_DEBUG=false",
    "APP_KEY=base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    "LOG_CHANNEL=stderr",
    "SESSION_DRIVER=file",
    "CACHE_DRIVER=file",
    "",
  ].join("\n"),
  // Storage lives outside the read-only release: CC_PRE_RUN_HOOK="sh prepare-storage.sh" makes it.
  "prepare-storage.sh": `S="\${LARAVEL_STORAGE_PATH:-/tmp/storage}"
mkdir -p "$S/framework/cache/data" "$S/framework/sessions" "$S/framework/views" "$S/logs" /tmp/bootstrap-cache
`,
  "public/index.php": `<?php

use Illuminate\\Contracts\\Http\\Kernel;
use Illuminate\\Http\\Request;

define('LARAVEL_START', microtime(true));

require __DIR__.'/../vendor/autoload.php';

$app = require_once __DIR__.'/../bootstrap/app.php';

$kernel = $app->make(Kernel::class);

$response = $kernel->handle(
    $request = Request::capture()
)->send();

$kernel->terminate($request, $response);
`,
  "public/worker.php": `<?php
// Octane's FrankenPHP worker, without Octane (Debian does not package it): the app is booted once; each
// frankenphp_handle_request() call handles one request; then what Octane's listeners reset is reset.
use Illuminate\\Contracts\\Http\\Kernel;
use Illuminate\\Http\\Request;

// Laravel takes a CLI's PHP_SAPI for a console (runningInConsole()): Octane says it is not, here too.
$_ENV['APP_RUNNING_IN_CONSOLE'] = false;

require __DIR__.'/../vendor/autoload.php';

$app = require __DIR__.'/../bootstrap/app.php';
$kernel = $app->make(Kernel::class);
$kernel->bootstrap();
$max = (int) ($_SERVER['MAX_REQUESTS'] ?? 500);

for ($n = 0; !$max || $n < $max; ++$n) {
    $more = frankenphp_handle_request(function () use ($kernel): void {
        $request = Request::capture();
        $response = $kernel->handle($request);
        $response->send();
        $kernel->terminate($request, $response);
    });
    if ($app->resolved('session')) {
        // The session store is a singleton: the next client must not start with this one's data.
        $store = $app->make('session')->driver();
        $store->flush();
        $store->setId(null);
    }
    if ($app->resolved('cookie')) {
        $app->make('cookie')->flushQueuedCookies();
    }
    if ($app->resolved('auth')) {
        $app->make('auth')->forgetGuards();
    }
    gc_collect_cycles();
    if (!$more) {
        break;
    }
}
`,
  "bootstrap/app.php": `<?php

$app = new Illuminate\\Foundation\\Application(
    $_ENV['APP_BASE_PATH'] ?? dirname(__DIR__)
);

$app->singleton(Illuminate\\Contracts\\Http\\Kernel::class, App\\Http\\Kernel::class);
$app->singleton(Illuminate\\Contracts\\Console\\Kernel::class, App\\Console\\Kernel::class);
$app->singleton(Illuminate\\Contracts\\Debug\\ExceptionHandler::class, App\\Exceptions\\Handler::class);

return $app;
`,
  "app/Http/Kernel.php": `<?php

namespace App\\Http;

use Illuminate\\Foundation\\Http\\Kernel as HttpKernel;

class Kernel extends HttpKernel
{
    protected $middleware = [
        \\Illuminate\\Foundation\\Http\\Middleware\\ValidatePostSize::class,
        \\Illuminate\\Foundation\\Http\\Middleware\\ConvertEmptyStringsToNull::class,
    ];

    protected $middlewareGroups = [
        'web' => [
            \\Illuminate\\Cookie\\Middleware\\EncryptCookies::class,
            \\Illuminate\\Cookie\\Middleware\\AddQueuedCookiesToResponse::class,
            \\Illuminate\\Session\\Middleware\\StartSession::class,
            \\Illuminate\\View\\Middleware\\ShareErrorsFromSession::class,
            \\Illuminate\\Routing\\Middleware\\SubstituteBindings::class,
        ],
    ];
}
`,
  "app/Console/Kernel.php": `<?php

namespace App\\Console;

use Illuminate\\Foundation\\Console\\Kernel as ConsoleKernel;

class Kernel extends ConsoleKernel
{
}
`,
  "app/Exceptions/Handler.php": `<?php

namespace App\\Exceptions;

use Illuminate\\Foundation\\Exceptions\\Handler as ExceptionHandler;

class Handler extends ExceptionHandler
{
}
`,
  "app/Providers/RouteServiceProvider.php": `<?php

namespace App\\Providers;

use Illuminate\\Foundation\\Support\\Providers\\RouteServiceProvider as ServiceProvider;
use Illuminate\\Support\\Facades\\Route;

class RouteServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->routes(function () {
            Route::middleware('web')->group(base_path('routes/web.php'));
        });
    }
}
`,
  "app/Http/Controllers/HelloController.php": `<?php

namespace App\\Http\\Controllers;

use Illuminate\\Http\\Request;
use Illuminate\\Routing\\Controller;

class HelloController extends Controller
{
    private static int $hits = 0;

    public function show(Request $request, string $name)
    {
        $request->session()->put('seen', $request->session()->get('seen', 0) + 1);

        return response()->json([
            'hello' => $name,
            'pid' => getmypid(),
            'hits' => ++self::$hits,
            'seen' => $request->session()->get('seen'),
            'console' => app()->runningInConsole(),
        ]);
    }
}
`,
  "routes/web.php": `<?php

use App\\Http\\Controllers\\HelloController;
use Illuminate\\Support\\Facades\\Route;

Route::get('/', fn () => view('welcome', ['version' => app()->version()]));
Route::get('/hello/{name}', [HelloController::class, 'show']);
Route::get('/go', fn () => redirect('/hello/pier'));
`,
  "resources/views/welcome.blade.php": `<!doctype html>
<html><head><title>{{ config('app.name') }}</title></head>
<body><h1>Hello from Laravel {{ $version }}</h1><p>Blade, PHP {{ PHP_VERSION }}.</p></body></html>
`,
  "config/app.php": `<?php

use Illuminate\\Support\\ServiceProvider;

return [
    'name' => env('APP_NAME', 'Laravel'),
    'env' => env('APP_ENV', 'production'),
    'debug' => (bool) env('APP_DEBUG', false),
    'url' => env('APP_URL', 'http://localhost'),
    'timezone' => 'UTC',
    'locale' => 'en',
    'fallback_locale' => 'en',
    'key' => env('APP_KEY'),
    'cipher' => 'AES-256-CBC',
    'maintenance' => ['driver' => 'file'],
    'providers' => ServiceProvider::defaultProviders()->merge([
        App\\Providers\\RouteServiceProvider::class,
    ])->toArray(),
    'aliases' => [],
];
`,
  "config/view.php": `<?php

return [
    'paths' => [resource_path('views')],
    'compiled' => env('VIEW_COMPILED_PATH', storage_path('framework/views')),
];
`,
  "config/session.php": `<?php

return [
    'driver' => env('SESSION_DRIVER', 'file'),
    'lifetime' => 120,
    'expire_on_close' => false,
    'encrypt' => false,
    'files' => storage_path('framework/sessions'),
    'connection' => null,
    'table' => 'sessions',
    'store' => null,
    'lottery' => [2, 100],
    'cookie' => 'laravel_session',
    'path' => '/',
    'domain' => null,
    'secure' => null,
    'http_only' => true,
    'same_site' => 'lax',
];
`,
  "config/cache.php": `<?php

return [
    'default' => env('CACHE_DRIVER', 'file'),
    'stores' => [
        'file' => ['driver' => 'file', 'path' => storage_path('framework/cache/data')],
        'array' => ['driver' => 'array', 'serialize' => false],
    ],
    'prefix' => 'pier_cache_',
];
`,
  "config/logging.php": `<?php

return [
    'default' => env('LOG_CHANNEL', 'stderr'),
    'channels' => [
        'stderr' => [
            'driver' => 'monolog',
            'handler' => Monolog\\Handler\\StreamHandler::class,
            'with' => ['stream' => 'php://stderr'],
        ],
    ],
];
`,
};
