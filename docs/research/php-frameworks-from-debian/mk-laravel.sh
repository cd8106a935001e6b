#!/bin/bash
# mk-laravel.sh DEST : a Laravel 10 app from Debian trixie's php-laravel-framework files
set -euo pipefail
R=/tmp/fw-research; D="$1"; rm -rf "$D"
mkdir -p "$D"/{public,app/Http/Controllers,app/Exceptions,app/Providers,app/Console,bootstrap/cache,config,routes,resources/views,storage/framework/{cache,sessions,views},storage/logs}
$R/bin/mklib.sh $R/root/lar "$D/lib"
cd "$D"
cat > composer.json <<'EOF'
{
    "name": "pier-test/laravel",
    "type": "project",
    "require": { "php": ">=8.1" },
    "autoload": { "psr-4": { "App\\": "app/" }, "files": ["lib/autoload.php"] }
}
EOF
cat > .env <<'EOF'
APP_NAME=PierLaravel
APP_ENV=production
APP_DEBUG=false
APP_KEY=base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=
LOG_CHANNEL=stderr
SESSION_DRIVER=file
CACHE_DRIVER=file
EOF
cat > public/index.php <<'EOF'
<?php

use Illuminate\Contracts\Http\Kernel;
use Illuminate\Http\Request;

define('LARAVEL_START', microtime(true));

require __DIR__.'/../vendor/autoload.php';

$app = require_once __DIR__.'/../bootstrap/app.php';

$kernel = $app->make(Kernel::class);

$response = $kernel->handle(
    $request = Request::capture()
)->send();

$kernel->terminate($request, $response);
EOF
cp $R/bin/laravel-worker.php public/worker.php
cat > bootstrap/app.php <<'EOF'
<?php

$app = new Illuminate\Foundation\Application(
    $_ENV['APP_BASE_PATH'] ?? dirname(__DIR__)
);

$app->singleton(Illuminate\Contracts\Http\Kernel::class, App\Http\Kernel::class);
$app->singleton(Illuminate\Contracts\Console\Kernel::class, App\Console\Kernel::class);
$app->singleton(Illuminate\Contracts\Debug\ExceptionHandler::class, App\Exceptions\Handler::class);

return $app;
EOF
cat > app/Http/Kernel.php <<'EOF'
<?php

namespace App\Http;

use Illuminate\Foundation\Http\Kernel as HttpKernel;

class Kernel extends HttpKernel
{
    protected $middleware = [
        \Illuminate\Foundation\Http\Middleware\ValidatePostSize::class,
        \Illuminate\Foundation\Http\Middleware\ConvertEmptyStringsToNull::class,
    ];

    protected $middlewareGroups = [
        'web' => [
            \Illuminate\Cookie\Middleware\EncryptCookies::class,
            \Illuminate\Cookie\Middleware\AddQueuedCookiesToResponse::class,
            \Illuminate\Session\Middleware\StartSession::class,
            \Illuminate\View\Middleware\ShareErrorsFromSession::class,
            \Illuminate\Routing\Middleware\SubstituteBindings::class,
        ],
    ];
}
EOF
cat > app/Console/Kernel.php <<'EOF'
<?php

namespace App\Console;

use Illuminate\Foundation\Console\Kernel as ConsoleKernel;

class Kernel extends ConsoleKernel
{
}
EOF
cat > app/Exceptions/Handler.php <<'EOF'
<?php

namespace App\Exceptions;

use Illuminate\Foundation\Exceptions\Handler as ExceptionHandler;

class Handler extends ExceptionHandler
{
}
EOF
cat > app/Providers/RouteServiceProvider.php <<'EOF'
<?php

namespace App\Providers;

use Illuminate\Foundation\Support\Providers\RouteServiceProvider as ServiceProvider;
use Illuminate\Support\Facades\Route;

class RouteServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->routes(function () {
            Route::middleware('web')->group(base_path('routes/web.php'));
        });
    }
}
EOF
cat > app/Http/Controllers/HelloController.php <<'EOF'
<?php

namespace App\Http\Controllers;

use Illuminate\Http\Request;
use Illuminate\Routing\Controller;

class HelloController extends Controller
{
    private static int $hits = 0;

    public function show(Request $request, string $name)
    {
        $request->session()->put('seen', $request->session()->get('seen', 0) + 1);

        return response()->json([
            'hello' => $name,
            'laravel' => app()->version(),
            'pid' => getmypid(),
            'hits_in_this_process' => ++self::$hits,
            'session_seen' => $request->session()->get('seen'),
            'q' => $request->query('q'),
        ]);
    }
}
EOF
cat > routes/web.php <<'EOF'
<?php

use App\Http\Controllers\HelloController;
use Illuminate\Support\Facades\Route;

Route::get('/', fn () => view('welcome', ['version' => app()->version()]));
Route::get('/hello/{name}', [HelloController::class, 'show']);
EOF
cat > resources/views/welcome.blade.php <<'EOF'
<!doctype html>
<html><head><title>{{ config('app.name') }}</title></head>
<body><h1>Hello from Laravel {{ $version }}</h1><p>Blade, PHP {{ PHP_VERSION }}.</p></body></html>
EOF
cat > config/app.php <<'EOF'
<?php

use Illuminate\Support\ServiceProvider;

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
        App\Providers\RouteServiceProvider::class,
    ])->toArray(),
    'aliases' => [],
];
EOF
cat > config/view.php <<'EOF'
<?php
return [
    'paths' => [resource_path('views')],
    'compiled' => env('VIEW_COMPILED_PATH', storage_path('framework/views')),
];
EOF
cat > config/session.php <<'EOF'
<?php
return [
    'driver' => env('SESSION_DRIVER', 'file'),
    'lifetime' => 120,
    'expire_on_close' => false,
    'encrypt' => false,
    'files' => storage_path('framework/sessions'),
    'connection' => null, 'table' => 'sessions', 'store' => null,
    'lottery' => [2, 100],
    'cookie' => 'laravel_session',
    'path' => '/', 'domain' => null, 'secure' => null, 'http_only' => true, 'same_site' => 'lax',
];
EOF
cat > config/cache.php <<'EOF'
<?php
return [
    'default' => env('CACHE_DRIVER', 'file'),
    'stores' => [
        'file' => ['driver' => 'file', 'path' => storage_path('framework/cache/data')],
        'array' => ['driver' => 'array', 'serialize' => false],
    ],
    'prefix' => 'pier_cache_',
];
EOF
cat > config/logging.php <<'EOF'
<?php
return [
    'default' => env('LOG_CHANNEL', 'stderr'),
    'channels' => [
        'stderr' => ['driver' => 'monolog', 'handler' => Monolog\Handler\StreamHandler::class, 'with' => ['stream' => 'php://stderr']],
        'emergency' => ['path' => storage_path('logs/laravel.log')],
    ],
];
EOF
# a pre-run hook would make these under LARAVEL_STORAGE_PATH
cat > prepare-storage.sh <<'EOF'
#!/bin/sh
S="${LARAVEL_STORAGE_PATH:-/tmp/storage}"
mkdir -p "$S/framework/cache/data" "$S/framework/sessions" "$S/framework/views" "$S/logs" /tmp/bootstrap-cache
EOF
chmod +x prepare-storage.sh
