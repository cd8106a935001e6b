<?php
// The request side of phpserver's worker mode (docs/adr/0013-php-worker-mode.md), loaded in each worker
// process before the app's worker script. The worker is a PHP CLI process: the functions that the CLI's
// SAPI ignores (header(), setcookie(), http_response_code(), ...) are replaced by ones that collect the
// response (worker-functions.php), php:// is wrapped so that php://input reads the request's body, and the output of each
// request is captured with output buffering. Nothing of a request survives into the next one but what the
// script keeps on purpose (its objects, static variables).

declare(strict_types=1);

require_once __DIR__ . '/worker-cgi.php';
require_once __DIR__ . '/worker-stream.php';
require_once __DIR__ . '/worker-api.php';
require_once __DIR__ . '/worker-functions.php';

final class PhpserverRuntime
{
    /** @var resource */
    public static $server;
    /** @var resource|null */
    public static $readyPipe;
    /** @var resource|null */
    public static $conn = null;
    public static int $maxRequests = 0;
    public static int $handled = 0;
    public static string $script = '';
    public static string $docRoot = '';
    public static array $baseServer = [];
    public static int $status = 200;
    /** @var list<array{0: string, 1: string}> name (as written), value */
    public static array $headers = [];
    public static string $input = '';
    /** @var array<string, true> */
    public static array $uploaded = [];
    public static string $sessionIn = '';
    public static bool $inRequest = false;
    public static int $obLevel = 0;
    public static bool $finished = false;
    /** What the handler wrote and the client does not have yet. */
    public static string $body = '';
    /** The head is sent: the response streams (no Content-Length, it ends when the connection closes). */
    public static bool $streamed = false;
    /** The runtime itself empties the request's buffer (its handler must not take that for ob_clean()). */
    public static bool $closing = false;
    private static bool $sessionHeaders = false;
    /** Past this many bytes not yet sent, the response streams (a large download is never held whole). */
    public const STREAM_AFTER = 1 << 20;
    public static string $method = 'GET';
    /** The client left (a write failed, or nginx closed the connection): connection_aborted() is 1. */
    public static bool $aborted = false;
    /** The start-up request (FRANKENPHP_WORKER set) is over. */
    private static bool $booted = false;
    /** max_execution_time of php-fpm's configuration, applied to each request (as a SAPI does). */
    public static int $timeLimit = 0;
    /** phpserver --debug: frankenphp_log() writes debug messages too. */
    public static bool $debug = false;
    private const REASONS = [
        200 => 'OK', 201 => 'Created', 202 => 'Accepted', 204 => 'No Content', 301 => 'Moved Permanently', 302 => 'Found',
        303 => 'See Other', 304 => 'Not Modified', 307 => 'Temporary Redirect', 308 => 'Permanent Redirect',
        400 => 'Bad Request', 401 => 'Unauthorized', 403 => 'Forbidden', 404 => 'Not Found', 405 => 'Method Not Allowed',
        409 => 'Conflict', 410 => 'Gone', 422 => 'Unprocessable Content', 429 => 'Too Many Requests',
        500 => 'Internal Server Error', 502 => 'Bad Gateway', 503 => 'Service Unavailable',
    ];

    public static function header(string $header, bool $replace = true, int $code = 0): void
    {
        if (preg_match('#^HTTP/\S+\s+(\d{3})#i', $header, $m)) {
            self::$status = (int) $m[1];
            return;
        }
        $p = strpos($header, ':');
        if ($p === false) return;
        $name = trim(substr($header, 0, $p));
        $value = trim(substr($header, $p + 1));
        if ($replace) self::removeHeader($name);
        self::$headers[] = [$name, $value];
        if ($code > 0) self::$status = $code;
        elseif (strcasecmp($name, 'Location') === 0 && self::$status !== 201 && (self::$status < 300 || self::$status > 399))
            self::$status = 302;
    }

    public static function removeHeader(?string $name): void
    {
        self::$headers = $name === null ? [] : array_values(array_filter(self::$headers, fn($h) => strcasecmp($h[0], $name) !== 0));
    }

    public static function cookie(bool $raw, string $name, string $value, array|int $opts, string $path, string $domain, bool $secure, bool $httponly): bool
    {
        $samesite = '';
        $expires = 0;
        if (is_array($opts)) {
            $expires = (int) ($opts['expires'] ?? 0);
            $path = (string) ($opts['path'] ?? '');
            $domain = (string) ($opts['domain'] ?? '');
            $secure = (bool) ($opts['secure'] ?? false);
            $httponly = (bool) ($opts['httponly'] ?? false);
            $samesite = (string) ($opts['samesite'] ?? '');
        } else {
            $expires = $opts;
        }
        if ($name === '' || strpbrk($name, "=,; \t\r\n\013\014") !== false) return false;
        if ($value === '') {
            $c = "$name=deleted; expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0";
        } else {
            $c = $name . '=' . ($raw ? $value : rawurlencode($value));
            if ($expires > 0)
                $c .= '; expires=' . gmdate('D, d M Y H:i:s \G\M\T', $expires) . '; Max-Age=' . max(0, $expires - time());
        }
        if ($path !== '') $c .= "; path=$path";
        if ($domain !== '') $c .= "; domain=$domain";
        if ($secure) $c .= '; secure';
        if ($httponly) $c .= '; HttpOnly';
        if ($samesite !== '') $c .= "; SameSite=$samesite";
        self::$headers[] = ['Set-Cookie', $c];
        return true;
    }

    /** Sets the superglobals of one request. */
    public static function begin(array $req): void
    {
        if (!self::$booted) {
            // FRANKENPHP_WORKER is the boot's (FrankenPHP sets it in the worker's start-up request only).
            self::$booted = true;
            putenv('FRANKENPHP_WORKER');
        }
        $internal = [];
        $headers = [];
        $cookieHeader = '';
        $contentType = '';
        foreach ($req['headers'] as [$n, $v]) {
            if (stripos($n, 'X-Phpserver-') === 0) {
                $internal[strtolower(substr($n, 12))] = $v;
                continue;
            }
            $headers[] = [$n, $v];
            if (strcasecmp($n, 'Cookie') === 0) $cookieHeader = $cookieHeader === '' ? $v : "$cookieHeader; $v";
            if (strcasecmp($n, 'Content-Type') === 0) $contentType = $v;
        }
        $uri = $req['uri'];
        $q = strpos($uri, '?');
        $query = $q === false ? '' : substr($uri, $q + 1);
        $path = $q === false ? $uri : substr($uri, 0, $q);
        $req['headers'] = $headers;
        $server = PhpserverCgi::server(self::$baseServer, $req, $internal, self::$script, self::$docRoot, $path);
        $_SERVER = $server;
        $get = [];
        parse_str($query, $get);
        $_GET = $get;
        $cookies = [];
        foreach (explode(';', $cookieHeader) as $pair) {
            $p = strpos($pair, '=');
            if ($p === false) continue;
            $name = trim(substr($pair, 0, $p));
            if ($name !== '' && !array_key_exists($name, $cookies)) $cookies[$name] = urldecode(trim(substr($pair, $p + 1)));
        }
        $_COOKIE = $cookies;
        $_POST = [];
        $_FILES = [];
        self::$input = $req['body'];
        if ($req['method'] === 'POST') {
            if (stripos($contentType, 'application/x-www-form-urlencoded') === 0) {
                $post = [];
                parse_str($req['body'], $post);
                $_POST = $post;
            } elseif (stripos($contentType, 'multipart/form-data') === 0 && preg_match('/boundary="?([^";]+)"?/i', $contentType, $m)) {
                PhpserverRequest::multipart($req['body'], $m[1]);
            }
        }
        $_REQUEST = array_merge($_GET, $_POST);
        self::$status = 200;
        // As a SAPI's request start-up: PHP's own header when expose_php is on, no error of an earlier request.
        self::$headers = self::iniBool('expose_php') ? [['X-Powered-By', 'PHP/' . PHP_VERSION]] : [];
        self::$method = $req['method'];
        self::$finished = false;
        error_clear_last();
        // Sessions: the id comes from this request's cookie only; no session is open at the start.
        if (session_status() === PHP_SESSION_ACTIVE) session_write_close();
        $_SESSION = [];
        $sid = $cookies[session_name()] ?? '';
        if (!is_string($sid) || !preg_match('/^[A-Za-z0-9,-]{1,256}$/', $sid)) $sid = '';
        session_id($sid);
        self::$sessionIn = $sid;
    }

    /** The session's response headers, once: the cache limiter's, and its cookie when its id is new. */
    private static function sessionHeaders(): void
    {
        if (self::$sessionHeaders) return;
        self::$sessionHeaders = true;
        if (session_status() === PHP_SESSION_ACTIVE && ini_get('session.cache_limiter') === 'nocache') {
            self::$headers[] = ['Expires', 'Thu, 19 Nov 1981 08:52:00 GMT'];
            self::$headers[] = ['Cache-Control', 'no-store, no-cache, must-revalidate'];
            self::$headers[] = ['Pragma', 'no-cache'];
        }
        $id = session_id();
        if ($id !== '' && $id !== self::$sessionIn && ini_get('session.use_cookies')) {
            $p = session_get_cookie_params();
            $opts = ['expires' => $p['lifetime'] > 0 ? time() + $p['lifetime'] : 0, 'path' => $p['path'], 'domain' => $p['domain'], 'secure' => $p['secure'], 'httponly' => $p['httponly'], 'samesite' => $p['samesite']];
            self::cookie(false, session_name(), $id, $opts, '', '', false, false);
        }
    }

    /** Ends the request's session: saved, its cookie set when it is new (unless the head is sent already). */
    public static function endSession(): void
    {
        if (!self::$streamed) self::sessionHeaders();
        if (session_status() === PHP_SESSION_ACTIVE) session_write_close();
        $_SESSION = [];
        // After a fatal error PHP wrote its message to the SAPI, which then counts its headers as sent.
        @session_id('');
    }

    /** The status line and headers; with a length, the whole response, else a streamed one (ends at close). */
    private static function head(?int $length): string
    {
        $hasType = false;
        $out = '';
        foreach (self::$headers as [$n, $v]) {
            if (strcasecmp($n, 'Content-Type') === 0) $hasType = true;
            if (strcasecmp($n, 'Content-Length') === 0 || strcasecmp($n, 'Connection') === 0) continue;
            $out .= "$n: $v\r\n";
        }
        if (!$hasType) $out .= 'Content-Type: ' . (ini_get('default_mimetype') ?: 'text/html') . '; charset=' . (ini_get('default_charset') ?: 'UTF-8') . "\r\n";
        // nginx passes a streamed response on as it comes (X-Accel-Buffering is nginx's, not sent on).
        $out .= $length === null ? "X-Accel-Buffering: no\r\n" : "Content-Length: $length\r\n";
        return 'HTTP/1.0 ' . self::$status . ' ' . (self::REASONS[self::$status] ?? 'Status') . "\r\n" . $out . "Connection: close\r\n\r\n";
    }

    /**
     * The request's output buffer handler (chunk size 1: called at each write that reaches the request's
     * level, as a SAPI is). The output is kept until the handler returns, then sent whole with its length;
     * flush(), ob_flush() at that level, or more than STREAM_AFTER bytes make the response stream from there.
     * ob_clean() and ob_end_clean() at that level drop what the client does not have yet.
     */
    public static function output(string $data, int $phase): string
    {
        if (!self::$inRequest || self::$conn === null) return '';
        if ($phase & PHP_OUTPUT_HANDLER_CLEAN) {
            if (!self::$closing) self::$body = '';
            return '';
        }
        self::$body .= $data;
        if (($phase & PHP_OUTPUT_HANDLER_FLUSH) || ($phase & PHP_OUTPUT_HANDLER_FINAL) || strlen(self::$body) > self::STREAM_AFTER) self::flush();
        return '';
    }

    /** flush(): the head (once) and what the handler wrote so far go to the client now. */
    public static function flush(): void
    {
        if (!self::$inRequest || self::$conn === null) return;
        if (!self::$streamed) {
            self::$streamed = true;
            self::sessionHeaders();
            self::send(self::head(null));
        }
        if (self::$body !== '' && self::$method !== 'HEAD') self::send(self::$body);
        self::$body = '';
    }

    /** Sends what is left of the response and closes the connection. */
    public static function respond(): void
    {
        if (self::$conn === null) return;
        if (self::$streamed) {
            self::flush();
        } else {
            $body = self::$method === 'HEAD' ? '' : self::$body;
            self::send(self::head(strlen(self::$body)) . $body);
        }
        self::$body = '';
        @fclose(self::$conn);
        self::$conn = null;
    }

    /**
     * The settings that the CLI forces over php.ini (html_errors=0, implicit_flush=1, max_execution_time=0)
     * back to what the ini files say, as php-fpm reads them: a worker's requests behave as classic mode's.
     * Workers do not hang up when the client leaves (FrankenPHP's workers set ignore_user_abort too).
     */
    public static function fpmSettings(): void
    {
        $values = ['html_errors' => '1', 'implicit_flush' => '0', 'max_execution_time' => '30'];
        $files = [(string) php_ini_loaded_file(), ...array_map('trim', explode(',', (string) php_ini_scanned_files()))];
        foreach ($files as $f) {
            $ini = $f === '' ? false : @parse_ini_file($f);
            if (!is_array($ini)) continue;
            foreach (array_keys($values) as $k) {
                if (array_key_exists($k, $ini)) $values[$k] = (string) $ini[$k];
            }
        }
        ini_set('html_errors', $values['html_errors']);
        ini_set('implicit_flush', $values['implicit_flush']);
        ini_set('ignore_user_abort', '1');
        self::$timeLimit = max(0, (int) $values['max_execution_time']);
        // The boot is a request too (FrankenPHP's start-up request has the same limit).
        if (self::$timeLimit > 0) set_time_limit(self::$timeLimit);
    }

    /** Writes to nginx; a failed write means the client left (nginx closed its connection to the worker). */
    private static function send(string $data): void
    {
        if (self::$aborted || self::$conn === null) return;
        $n = @fwrite(self::$conn, $data);
        if ($n === false || $n < strlen($data)) self::$aborted = true;
    }

    /**
     * connection_status(): CONNECTION_ABORTED once the client has left. nginx closes its connection to the
     * worker when its client goes (proxy_ignore_client_abort off): a failed write says so, and so does the
     * connection's end, seen without writing (the request was read whole: nothing else comes on it).
     */
    public static function connectionStatus(): int
    {
        if (!self::$aborted && self::$inRequest && self::$conn !== null) {
            $r = [self::$conn];
            $w = $e = null;
            if (@stream_select($r, $w, $e, 0) > 0) {
                $peek = @stream_socket_recvfrom(self::$conn, 1, STREAM_PEEK);
                if ($peek === '' || $peek === false) self::$aborted = true;
            }
        }
        return self::$aborted ? CONNECTION_ABORTED : CONNECTION_NORMAL;
    }

    /** An ini flag as PHP reads one ("1", "On", "yes", "true"). */
    public static function iniBool(string $name): bool
    {
        $v = strtolower(trim((string) ini_get($name)));
        return in_array($v, ['on', 'yes', 'true', 'stderr', 'stdout'], true) || (int) $v > 0;
    }

    /**
     * An exception the handler did not catch, as FrankenPHP reports it (PHP's zend_exception_error): a fatal
     * error "Uncaught ..." logged and shown as log_errors, display_errors and html_errors say, after the
     * output written before it; a 500 when it is not shown and the head is not sent. The worker goes on.
     */
    public static function uncaught(Throwable $e): void
    {
        try {
            $text = (string) $e;
        } catch (Throwable) {
            $text = get_class($e) . ': ' . $e->getMessage();
        }
        $message = "Uncaught $text\n  thrown";
        [$file, $line] = [$e->getFile(), $e->getLine()];
        $display = self::iniBool('display_errors');
        if ((error_reporting() & E_ERROR) !== 0) {
            if (self::iniBool('log_errors')) error_log("PHP Fatal error:  $message in $file on line $line");
            if ($display) echo self::displayed('Fatal error', $message, $file, $line);
        }
        if (!$display && !self::$streamed && self::$status === 200) self::$status = 500;
    }

    /** An error as PHP shows it (php_error_cb's formats, html_errors on or off). */
    private static function displayed(string $type, string $message, string $file, int $line): string
    {
        [$pre, $post] = [(string) ini_get('error_prepend_string'), (string) ini_get('error_append_string')];
        return self::iniBool('html_errors')
            ? "$pre<br />\n<b>$type</b>:  " . htmlspecialchars($message, ENT_COMPAT | ENT_SUBSTITUTE | ENT_HTML401) . " in <b>$file</b> on line <b>$line</b><br />\n$post"
            : "$pre\n$type: $message in $file on line $line\n$post";
    }

    /** Runs the handler for one request read from $conn and answers it. */
    public static function handle($conn, array $req, callable $handler): void
    {
        self::$handled++;
        self::$conn = $conn;
        self::$aborted = false;
        self::begin($req);
        self::$inRequest = true;
        self::$closing = false;
        ob_start([self::class, 'output'], 1);
        self::$obLevel = ob_get_level();
        if (self::$timeLimit > 0) set_time_limit(self::$timeLimit);
        try {
            $handler();
        } catch (Throwable $e) {
            self::uncaught($e);
        }
        self::finish();
    }

    /** Ends the request: the app's buffers still open hand their output down, the response goes whole. */
    public static function finish(): void
    {
        while (ob_get_level() > self::$obLevel) {
            if (!@ob_end_flush()) break;
        }
        self::$closing = true;
        if (ob_get_level() === self::$obLevel) ob_end_clean();
        self::endSession();
        self::respond();
        self::cleanup();
    }

    /**
     * At the script's end (exit() or a fatal error in a handler, which end the worker as they end
     * FrankenPHP's): the request in progress gets what was written, with the error as display_errors says
     * (PHP wrote it already), and a 500 for a fatal error not shown. Registered last (from a shutdown
     * function), so that the app's own shutdown functions still write into the response.
     */
    public static function shutdown(): void
    {
        register_shutdown_function(static function (): void {
            if (!self::$inRequest || self::$conn === null) return;
            $fatal = E_ERROR | E_CORE_ERROR | E_COMPILE_ERROR | E_PARSE | E_USER_ERROR | E_RECOVERABLE_ERROR;
            $e = error_get_last();
            if ($e !== null && ($e['type'] & $fatal)) {
                if (!self::iniBool('display_errors')) {
                    if (!self::$streamed && self::$status === 200) self::$status = 500;
                } elseif (self::bufferLost() && (error_reporting() & $e['type'])) {
                    // PHP could not run the request's output handler for its message (memory exhausted):
                    // its message went to the log only. Now that memory is back, the page gets it too.
                    $type = $e['type'] === E_PARSE ? 'Parse error' : ($e['type'] === E_RECOVERABLE_ERROR ? 'Recoverable fatal error' : 'Fatal error');
                    self::$body .= self::displayed($type, $e['message'], $e['file'], $e['line']);
                }
            }
            self::finish();
        });
    }

    /**
     * PHP gave up on the request's output handler: calling it failed (memory exhausted) and PHP disabled it,
     * or shut the output layer down (a fatal error inside an output handler): its message went past it.
     */
    private static function bufferLost(): bool
    {
        if (ob_get_level() < self::$obLevel) return true;
        $status = ob_get_status(true)[self::$obLevel - 1] ?? null;
        return is_array($status) && (($status['flags'] ?? 0) & PHP_OUTPUT_HANDLER_DISABLED) !== 0;
    }

    public static function cleanup(): void
    {
        foreach (array_keys(self::$uploaded) as $f) @unlink($f);
        self::$uploaded = [];
        self::$input = '';
        $_GET = $_POST = $_COOKIE = $_FILES = $_REQUEST = [];
        $_SERVER = self::$baseServer;
        self::$inRequest = false;
        self::$body = '';
        self::$streamed = false;
        self::$sessionHeaders = false;
    }
}

