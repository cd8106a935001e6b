<?php
// FrankenPHP's PHP functions in phpserver's worker mode (docs/adr/0013-php-worker-mode.md), and the set-up of
// a freshly forked worker. Functions that need FrankenPHP's own server have a working equivalent
// (frankenphp_log writes to the instance's log; headers_send sends the head now, and drops a 1xx
// response, which nginx cannot pass on) or a clear error naming the function (mercure_publish).

declare(strict_types=1);

const FRANKENPHP_LOG_LEVEL_DEBUG = -4;
const FRANKENPHP_LOG_LEVEL_INFO = 0;
const FRANKENPHP_LOG_LEVEL_WARN = 4;
const FRANKENPHP_LOG_LEVEL_ERROR = 8;

/** FrankenPHP's worker API: waits for one request, runs $handler for it, answers; false when the worker must stop. */
function frankenphp_handle_request(callable $handler): bool
{
    if (PhpserverRuntime::$readyPipe !== null) {
        @fwrite(PhpserverRuntime::$readyPipe, 'R');
        @fclose(PhpserverRuntime::$readyPipe);
        PhpserverRuntime::$readyPipe = null;
    }
    if (PhpserverRuntime::$maxRequests > 0 && PhpserverRuntime::$handled >= PhpserverRuntime::$maxRequests) return false;
    // No time limit while waiting for a request (FrankenPHP's too): max_execution_time is per request.
    if (PhpserverRuntime::$timeLimit > 0) set_time_limit(0);
    while (true) {
        $conn = @stream_socket_accept(PhpserverRuntime::$server, -1);
        if ($conn === false) continue;
        $req = PhpserverRequest::read($conn);
        if ($req !== null) break;
        fclose($conn);
    }
    PhpserverRuntime::handle($conn, $req, $handler);
    return true;
}

function phpserver_handle_request(callable $handler): bool
{
    return frankenphp_handle_request($handler);
}

/** Sends the response now; the rest of the handler runs after the client has it. */
function frankenphp_finish_request(): bool
{
    if (!PhpserverRuntime::$inRequest || PhpserverRuntime::$conn === null) return false;
    while (ob_get_level() > PhpserverRuntime::$obLevel) {
        if (!@ob_end_flush()) break;
    }
    PhpserverRuntime::endSession();
    PhpserverRuntime::respond();
    return true;
}

if (!function_exists('fastcgi_finish_request')) {
    function fastcgi_finish_request(): bool
    {
        return frankenphp_finish_request();
    }
}

function frankenphp_request_headers(): array
{
    $out = [];
    foreach ($_SERVER as $k => $v) {
        if (is_string($k) && str_starts_with($k, 'HTTP_')) $out[ucwords(strtolower(str_replace('_', '-', substr($k, 5))), '-')] = $v;
    }
    if (($_SERVER['CONTENT_TYPE'] ?? '') !== '') $out['Content-Type'] = $_SERVER['CONTENT_TYPE'];
    if (($_SERVER['CONTENT_LENGTH'] ?? '') !== '') $out['Content-Length'] = $_SERVER['CONTENT_LENGTH'];
    return $out;
}

/** The response's headers so far, name => value (the last one of a name), as apache_response_headers() gives them. */
function frankenphp_response_headers(): array|bool
{
    $out = [];
    if (!PhpserverRuntime::$inRequest) return $out;
    foreach (PhpserverRuntime::$headers as [$n, $v]) $out[$n] = $v;
    return $out;
}

if (!function_exists('getallheaders')) {
    function getallheaders(): array
    {
        return frankenphp_request_headers();
    }
}
if (!function_exists('apache_request_headers')) {
    function apache_request_headers(): array
    {
        return frankenphp_request_headers();
    }
}
if (!function_exists('apache_response_headers')) {
    function apache_response_headers(): array|bool
    {
        return frankenphp_response_headers();
    }
}

/**
 * Sends the head now with $status. A 1xx (103 Early Hints) cannot reach the client: nginx in front does not
 * pass informational responses on. It is dropped (the headers stay set for the final response, as
 * FrankenPHP keeps them), and the instance's log says so once.
 */
function headers_send(int $status = 200): int
{
    if ($status >= 100 && $status < 200) {
        static $said = false;
        if (!$said) fwrite(STDERR, "phpserver: headers_send($status): informational responses (103 Early Hints) are not passed on by nginx; this one and later ones are dropped\n");
        $said = true;
        return 1;
    }
    PhpserverRuntime::$status = $status;
    PhpserverRuntime::flush();
    return 0;
}

function mercure_publish(string|array $topics, string $data = '', bool $private = false, ?string $id = null, ?string $type = null, ?int $retry = null): string
{
    throw new RuntimeException('mercure_publish(): this phpserver serves no Mercure hub. Run a hub as its own app and publish to it over HTTP (MERCURE_URL), e.g. with symfony/mercure.');
}

/** FrankenPHP's structured log, to the instance's log (pier logs): one line, slog's text format. */
function frankenphp_log(string $message, int $level = 0, array $context = []): void
{
    if ($level < FRANKENPHP_LOG_LEVEL_INFO && !PhpserverRuntime::$debug) return;
    $name = $level < FRANKENPHP_LOG_LEVEL_INFO ? 'DEBUG' : ($level < FRANKENPHP_LOG_LEVEL_WARN ? 'INFO' : ($level < FRANKENPHP_LOG_LEVEL_ERROR ? 'WARN' : 'ERROR'));
    $quote = static function (string $s): string {
        return $s !== '' && preg_match('/^[^\s"=\x00-\x1f]+$/', $s) ? $s : json_encode($s, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE);
    };
    $line = 'level=' . $name . ' msg=' . $quote($message);
    foreach ($context as $k => $v) {
        $text = is_array($v) ? '[' . implode(' ', array_map(fn($x) => is_scalar($x) ? (string) $x : json_encode($x), $v)) . ']' : (is_bool($v) ? ($v ? 'true' : 'false') : (is_scalar($v) || $v === null ? (string) $v : json_encode($v)));
        $line .= ' ' . $quote((string) $k) . '=' . $quote($text);
    }
    fwrite(STDERR, "$line\n");
}

/** Sets the runtime up in a freshly forked worker; the caller then requires the app's script at global scope. */
function phpserver_worker_setup($server, $readyPipe, string $script, int $maxRequests, string $docRoot): void
{
    PhpserverRuntime::$server = $server;
    PhpserverRuntime::$readyPipe = $readyPipe;
    PhpserverRuntime::$script = $script;
    PhpserverRuntime::$maxRequests = $maxRequests;
    PhpserverRuntime::$docRoot = $docRoot;
    $env = $_SERVER;
    foreach (['argv', 'argc', 'PHP_SELF', 'SCRIPT_NAME', 'SCRIPT_FILENAME', 'PATH_TRANSLATED', 'DOCUMENT_ROOT', 'REQUEST_TIME', 'REQUEST_TIME_FLOAT'] as $k) unset($env[$k]);
    // phpserver's own variables for the worker's PHP: not the app's (a `php` it runs reads the CLI's ini).
    PhpserverRuntime::$debug = ($env['PHPSERVER_DEBUG'] ?? '') === '1';
    foreach (['PHP_INI_SCAN_DIR', 'PHPSERVER_DEBUG'] as $k) {
        unset($env[$k]);
        putenv($k);
    }
    PhpserverRuntime::$baseServer = $env;
    // The script boots inside FrankenPHP's start-up request: SCRIPT_FILENAME is the worker script.
    $_SERVER = PhpserverCgi::boot($env, $script);
    putenv('FRANKENPHP_WORKER=1');
    $_GET = $_POST = $_COOKIE = $_FILES = $_REQUEST = [];
    PhpserverRuntime::fpmSettings();
    // Output outside of a request goes to the logs, never to the SAPI (which would mark headers as sent).
    ob_start(function (string $b): string {
        if ($b !== '') fwrite(STDERR, $b);
        return '';
    }, 1);
    register_shutdown_function([PhpserverRuntime::class, 'shutdown']);
    phpserver_check_functions();
    stream_wrapper_unregister('php');
    stream_wrapper_register('php', PhpserverPhpStream::class);
}
