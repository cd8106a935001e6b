<?php
// The PHP functions that the CLI's SAPI ignores, as phpserver's worker mode serves them
// (docs/adr/0013-php-worker-mode.md): header(), setcookie(), http_response_code(), flush(),
// connection_aborted()... act on the request in progress. phpserver starts the workers with these names in
// `disable_functions`, which since PHP 8 removes a function altogether, and they are declared here in its
// place, with PHP's own parameter names. (uopz did this before, at a cost of about a third of a Symfony
// request's CPU: it compiles every script without PHP's specialised calls and optimisations.)

declare(strict_types=1);

/** The functions replaced here: phpserver names the same ones in the workers' disable_functions. */
const PHPSERVER_REPLACED_FUNCTIONS = [
    'header', 'header_remove', 'headers_list', 'headers_sent', 'http_response_code', 'setcookie', 'setrawcookie',
    'flush', 'connection_status', 'connection_aborted', 'is_uploaded_file', 'move_uploaded_file',
];

/** Refuses to start when PHP still has its own functions (the worker was not started by phpserver). */
function phpserver_check_functions(): void
{
    foreach (PHPSERVER_REPLACED_FUNCTIONS as $f) {
        if (function_exists($f) && (new ReflectionFunction($f))->isInternal())
            throw new RuntimeException("phpserver worker: PHP's $f() is still defined: start the worker with disable_functions=" . implode(',', PHPSERVER_REPLACED_FUNCTIONS));
    }
}

if (!function_exists('header')) {
    function header(string $header, bool $replace = true, int $response_code = 0): void
    {
        PhpserverRuntime::header($header, $replace, $response_code);
    }

    function header_remove(?string $name = null): void
    {
        PhpserverRuntime::removeHeader($name);
    }

    function headers_list(): array
    {
        return array_map(static fn(array $h): string => "$h[0]: $h[1]", PhpserverRuntime::$headers);
    }

    /** The head is sent once the response streams (flush(), or a large body). */
    function headers_sent(mixed &$filename = null, mixed &$line = null): bool
    {
        return PhpserverRuntime::$streamed;
    }

    function http_response_code(int $response_code = 0): int|bool
    {
        if (!PhpserverRuntime::$inRequest) return false;
        $old = PhpserverRuntime::$status;
        if ($response_code > 0) PhpserverRuntime::$status = $response_code;
        return $old;
    }

    function setcookie(string $name, string $value = '', array|int $expires_or_options = 0, string $path = '', string $domain = '', bool $secure = false, bool $httponly = false): bool
    {
        return PhpserverRuntime::cookie(false, $name, $value, $expires_or_options, $path, $domain, $secure, $httponly);
    }

    function setrawcookie(string $name, string $value = '', array|int $expires_or_options = 0, string $path = '', string $domain = '', bool $secure = false, bool $httponly = false): bool
    {
        return PhpserverRuntime::cookie(true, $name, $value, $expires_or_options, $path, $domain, $secure, $httponly);
    }

    function flush(): void
    {
        PhpserverRuntime::flush();
    }

    function connection_status(): int
    {
        return PhpserverRuntime::connectionStatus();
    }

    function connection_aborted(): int
    {
        return (int) (PhpserverRuntime::connectionStatus() === CONNECTION_ABORTED);
    }

    function is_uploaded_file(string $filename): bool
    {
        return isset(PhpserverRuntime::$uploaded[$filename]);
    }

    function move_uploaded_file(string $from, string $to): bool
    {
        if (!isset(PhpserverRuntime::$uploaded[$from])) return false;
        unset(PhpserverRuntime::$uploaded[$from]);
        return @rename($from, $to);
    }
}
