<?php
// The loop of Octane's FrankenPHP worker, minus Octane (not packaged by Debian): boot the app once;
// per request: capture the request from the globals, handle, send, terminate; then reset the
// per-request state that Octane's listeners reset (session, queued cookies, auth guards).
use Illuminate\Contracts\Http\Kernel;
use Illuminate\Http\Request;

require __DIR__.'/../vendor/autoload.php';

$app = require __DIR__.'/../bootstrap/app.php';
$kernel = $app->make(Kernel::class);
$kernel->bootstrap();                               // .env, config, providers, routes: once
$max = (int) ($_SERVER['MAX_REQUESTS'] ?? 500);

for ($n = 0; !$max || $n < $max; ++$n) {
    $keep = frankenphp_handle_request(function () use ($app, $kernel): void {
        $request = Request::capture();
        $response = $kernel->handle($request);
        $response->send();
        $kernel->terminate($request, $response);
    });
    if ($app->resolved('session')) {                 // the session store is a singleton: empty it
        $store = $app->make('session')->driver();
        $store->flush();
        $store->regenerate();
    }
    if ($app->resolved('cookie')) {
        $app->make('cookie')->flushQueuedCookies();
    }
    if ($app->resolved('auth')) {
        $app->make('auth')->forgetGuards();
    }
    gc_collect_cycles();
    if (!$keep) {
        break;
    }
}
