// The files of the Laravel 10 app the framework e2e tests push (test/e2e/php-frameworks.test.ts): Laravel's
// skeleton (stock public/index.php), the configuration Laravel 10 needs, and Octane's FrankenPHP loop.
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
