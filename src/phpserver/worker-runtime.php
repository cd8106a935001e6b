<?php
// The request side of phpserver's worker mode (docs/adr/0013-php-worker-mode.md), loaded in each worker
// process before the app's worker script. The worker is a PHP CLI process: uopz replaces the functions
// that the CLI's SAPI ignores (header(), setcookie(), http_response_code(), ...) with ones that collect
// the response, php:// is wrapped so that php://input reads the request's body, and the output of each
// request is captured with output buffering. Nothing of a request survives into the next one but what the
// script keeps on purpose (its objects, static variables).

declare(strict_types=1);

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

    /** Reads one request (HTTP/1.0 from nginx, body with Content-Length); null when the peer sent nothing. */
    public static function read($conn): ?array
    {
        $head = '';
        while (!str_contains($head, "\r\n\r\n")) {
            $chunk = fread($conn, 8192);
            if ($chunk === '' || $chunk === false) return null;
            $head .= $chunk;
            if (strlen($head) > 1 << 20) return null;
        }
        [$head, $body] = explode("\r\n\r\n", $head, 2);
        $lines = explode("\r\n", $head);
        $parts = explode(' ', array_shift($lines), 3);
        if (count($parts) < 2) return null;
        $headers = [];
        foreach ($lines as $l) {
            $p = strpos($l, ':');
            if ($p !== false) $headers[] = [trim(substr($l, 0, $p)), trim(substr($l, $p + 1))];
        }
        $length = 0;
        foreach ($headers as [$n, $v]) if (strcasecmp($n, 'Content-Length') === 0) $length = (int) $v;
        while (strlen($body) < $length) {
            $chunk = fread($conn, min(1 << 20, $length - strlen($body)));
            if ($chunk === '' || $chunk === false) break;
            $body .= $chunk;
        }
        return ['method' => $parts[0], 'uri' => $parts[1], 'headers' => $headers, 'body' => $body];
    }

    /** Sets the superglobals of one request. */
    public static function begin(array $req): void
    {
        $server = self::$baseServer;
        $internal = [];
        $cookieHeader = '';
        $contentType = '';
        foreach ($req['headers'] as [$n, $v]) {
            if (stripos($n, 'X-Phpserver-') === 0) {
                $internal[strtolower(substr($n, 12))] = $v;
                continue;
            }
            $key = strtoupper(str_replace('-', '_', $n));
            if ($key === 'CONTENT_TYPE' || $key === 'CONTENT_LENGTH') $server[$key] = $v;
            else $server["HTTP_$key"] = isset($server["HTTP_$key"]) ? $server["HTTP_$key"] . ', ' . $v : $v;
            if ($key === 'COOKIE') $cookieHeader = $v;
            if ($key === 'CONTENT_TYPE') $contentType = $v;
        }
        $uri = $req['uri'];
        $q = strpos($uri, '?');
        $query = $q === false ? '' : substr($uri, $q + 1);
        $scriptName = str_starts_with(self::$script, self::$docRoot . '/') ? substr(self::$script, strlen(self::$docRoot)) : '/index.php';
        $now = microtime(true);
        $host = $server['HTTP_HOST'] ?? 'localhost';
        $server = array_merge($server, [
            'REQUEST_METHOD' => $req['method'],
            'REQUEST_URI' => $uri,
            'QUERY_STRING' => $query,
            'SERVER_PROTOCOL' => $internal['protocol'] ?? 'HTTP/1.1',
            'GATEWAY_INTERFACE' => 'CGI/1.1',
            'SERVER_SOFTWARE' => 'phpserver',
            'SERVER_NAME' => preg_replace('/:\d+$/', '', $host),
            'SERVER_PORT' => $internal['server-port'] ?? '8080',
            'SERVER_ADDR' => $internal['server-addr'] ?? '',
            'REMOTE_ADDR' => $internal['remote-addr'] ?? '127.0.0.1',
            'REMOTE_PORT' => $internal['remote-port'] ?? '',
            'DOCUMENT_ROOT' => self::$docRoot,
            'SCRIPT_FILENAME' => self::$script,
            'SCRIPT_NAME' => $scriptName,
            'PHP_SELF' => $scriptName,
            'REQUEST_TIME' => (int) $now,
            'REQUEST_TIME_FLOAT' => $now,
        ]);
        if (($internal['https'] ?? '') === 'on') $server['HTTPS'] = 'on';
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
                self::multipart($req['body'], $m[1]);
            }
        }
        $_REQUEST = array_merge($_GET, $_POST);
        self::$status = 200;
        self::$headers = [];
        self::$method = $req['method'];
        self::$finished = false;
        // Sessions: the id comes from this request's cookie only; no session is open at the start.
        if (session_status() === PHP_SESSION_ACTIVE) session_write_close();
        $_SESSION = [];
        $sid = $cookies[session_name()] ?? '';
        if (!is_string($sid) || !preg_match('/^[A-Za-z0-9,-]{1,256}$/', $sid)) $sid = '';
        session_id($sid);
        self::$sessionIn = $sid;
    }

    private static function multipart(string $body, string $boundary): void
    {
        $fields = [];
        foreach (explode("--$boundary", $body) as $part) {
            if ($part === '' || str_starts_with($part, '--')) continue;
            $part = ltrim($part, "\r\n");
            $split = strpos($part, "\r\n\r\n");
            if ($split === false) continue;
            $head = substr($part, 0, $split);
            $content = substr($part, $split + 4);
            if (str_ends_with($content, "\r\n")) $content = substr($content, 0, -2);
            if (!preg_match('/name="([^"]*)"/i', $head, $nm)) continue;
            $name = $nm[1];
            if (preg_match('/filename="([^"]*)"/i', $head, $fm)) {
                $type = preg_match('/Content-Type:\s*([^\r\n]+)/i', $head, $tm) ? trim($tm[1]) : 'application/octet-stream';
                $tmp = tempnam(sys_get_temp_dir(), 'php');
                file_put_contents($tmp, $content);
                self::$uploaded[$tmp] = true;
                $file = ['name' => basename($fm[1]), 'full_path' => $fm[1], 'type' => $type, 'tmp_name' => $tmp, 'error' => $fm[1] === '' ? UPLOAD_ERR_NO_FILE : UPLOAD_ERR_OK, 'size' => strlen($content)];
                self::setFile($name, $file);
            } else {
                $fields[] = urlencode($name) . '=' . urlencode($content);
            }
        }
        $post = [];
        parse_str(str_replace(['%5B', '%5D'], ['[', ']'], implode('&', $fields)), $post);
        $_POST = $post;
    }

    /** $_FILES as PHP shapes it: a[b][] puts each attribute under $_FILES['a'][attr]['b'][]. */
    private static function setFile(string $name, array $file): void
    {
        if (!preg_match('/^([^\[]+)((?:\[[^\]]*\])*)$/', $name, $m)) return;
        preg_match_all('/\[([^\]]*)\]/', $m[2], $km);
        $keys = $km[1];
        if (!$keys) {
            $_FILES[$m[1]] = $file;
            return;
        }
        foreach ($file as $attr => $v) {
            $ref = &$_FILES[$m[1]][$attr];
            foreach ($keys as $k) {
                if ($k === '') {
                    $ref[] = null;
                    $k = array_key_last($ref);
                }
                $ref = &$ref[$k];
            }
            $ref = $v;
            unset($ref);
        }
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
        session_id('');
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
            @fwrite(self::$conn, self::head(null));
        }
        if (self::$body !== '' && self::$method !== 'HEAD') @fwrite(self::$conn, self::$body);
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
            @fwrite(self::$conn, self::head(strlen(self::$body)) . $body);
        }
        self::$body = '';
        @fclose(self::$conn);
        self::$conn = null;
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

/** php://input reads the current request's body; every other php:// stream is PHP's own. */
final class PhpserverPhpStream
{
    public $context;
    /** @var resource|null */
    private $fp = null;
    private int $pos = 0;
    private bool $input = false;

    public function stream_open(string $path, string $mode, int $options, ?string &$opened): bool
    {
        if (strcasecmp($path, 'php://input') === 0) {
            $this->input = true;
            return true;
        }
        stream_wrapper_restore('php');
        try {
            $fp = $this->context ? @fopen($path, $mode, false, $this->context) : @fopen($path, $mode);
        } finally {
            stream_wrapper_unregister('php');
            stream_wrapper_register('php', self::class);
        }
        if ($fp === false) return false;
        $this->fp = $fp;
        return true;
    }

    public function stream_read(int $count): string|false
    {
        if (!$this->input) return fread($this->fp, $count);
        $chunk = substr(PhpserverRuntime::$input, $this->pos, $count);
        $this->pos += strlen($chunk);
        return $chunk;
    }

    public function stream_write(string $data): int
    {
        return $this->input ? 0 : (int) fwrite($this->fp, $data);
    }

    public function stream_eof(): bool
    {
        return $this->input ? $this->pos >= strlen(PhpserverRuntime::$input) : feof($this->fp);
    }

    public function stream_tell(): int
    {
        return $this->input ? $this->pos : (int) ftell($this->fp);
    }

    public function stream_seek(int $offset, int $whence): bool
    {
        if (!$this->input) return fseek($this->fp, $offset, $whence) === 0;
        $len = strlen(PhpserverRuntime::$input);
        $to = match ($whence) { SEEK_SET => $offset, SEEK_CUR => $this->pos + $offset, SEEK_END => $len + $offset, default => -1 };
        if ($to < 0) return false;
        $this->pos = $to;
        return true;
    }

    public function stream_flush(): bool
    {
        return $this->input ? true : fflush($this->fp);
    }

    public function stream_stat(): array|false
    {
        return $this->input ? ['size' => strlen(PhpserverRuntime::$input)] : fstat($this->fp);
    }

    public function stream_close(): void
    {
        if ($this->fp) fclose($this->fp);
    }

    public function stream_truncate(int $size): bool
    {
        return $this->input ? false : ftruncate($this->fp, $size);
    }

    public function stream_set_option(int $option, int $arg1, ?int $arg2): bool
    {
        return false;
    }

    public function stream_cast(int $as)
    {
        return $this->input ? false : $this->fp;
    }
}

/** FrankenPHP's worker API: waits for one request, runs $handler for it, answers; false when the worker must stop. */
function frankenphp_handle_request(callable $handler): bool
{
    if (PhpserverRuntime::$readyPipe !== null) {
        @fwrite(PhpserverRuntime::$readyPipe, 'R');
        @fclose(PhpserverRuntime::$readyPipe);
        PhpserverRuntime::$readyPipe = null;
    }
    if (PhpserverRuntime::$maxRequests > 0 && PhpserverRuntime::$handled >= PhpserverRuntime::$maxRequests) return false;
    while (true) {
        $conn = @stream_socket_accept(PhpserverRuntime::$server, -1);
        if ($conn === false) continue;
        $req = PhpserverRuntime::read($conn);
        if ($req !== null) break;
        fclose($conn);
    }
    PhpserverRuntime::$handled++;
    PhpserverRuntime::$conn = $conn;
    PhpserverRuntime::begin($req);
    PhpserverRuntime::$inRequest = true;
    PhpserverRuntime::$closing = false;
    ob_start([PhpserverRuntime::class, 'output'], 1);
    PhpserverRuntime::$obLevel = ob_get_level();
    try {
        $handler();
    } catch (Throwable $e) {
        error_log('PHP Fatal error:  Uncaught ' . $e);
        while (ob_get_level() > PhpserverRuntime::$obLevel) ob_end_clean();
        PhpserverRuntime::$body = '';
        if (!PhpserverRuntime::$streamed) PhpserverRuntime::$status = 500;
    }
    // The app's own buffers still open hand their output down; the request's buffer ends.
    while (ob_get_level() > PhpserverRuntime::$obLevel) ob_end_flush();
    PhpserverRuntime::$closing = true;
    if (ob_get_level() === PhpserverRuntime::$obLevel) ob_end_clean();
    PhpserverRuntime::endSession();
    PhpserverRuntime::respond();
    PhpserverRuntime::cleanup();
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
    while (ob_get_level() > PhpserverRuntime::$obLevel) ob_end_flush();
    PhpserverRuntime::endSession();
    PhpserverRuntime::respond();
    return true;
}

function frankenphp_request_headers(): array
{
    $out = [];
    foreach ($_SERVER as $k => $v) {
        if (str_starts_with($k, 'HTTP_')) $out[ucwords(strtolower(str_replace('_', '-', substr($k, 5))), '-')] = $v;
    }
    if (isset($_SERVER['CONTENT_TYPE'])) $out['Content-Type'] = $_SERVER['CONTENT_TYPE'];
    if (isset($_SERVER['CONTENT_LENGTH'])) $out['Content-Length'] = $_SERVER['CONTENT_LENGTH'];
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

/** Sets the runtime up in a freshly forked worker; the caller then requires the app's script at global scope. */
function phpserver_worker_setup($server, $readyPipe, string $script, int $maxRequests, string $docRoot): void
{
    PhpserverRuntime::$server = $server;
    PhpserverRuntime::$readyPipe = $readyPipe;
    PhpserverRuntime::$script = $script;
    PhpserverRuntime::$maxRequests = $maxRequests;
    PhpserverRuntime::$docRoot = $docRoot;
    $base = $_SERVER;
    foreach (['argv', 'argc', 'PHP_SELF', 'SCRIPT_NAME', 'SCRIPT_FILENAME', 'PATH_TRANSLATED', 'DOCUMENT_ROOT', 'REQUEST_TIME', 'REQUEST_TIME_FLOAT'] as $k) unset($base[$k]);
    PhpserverRuntime::$baseServer = $base;
    $_SERVER = $base;
    $_GET = $_POST = $_COOKIE = $_FILES = $_REQUEST = [];
    // Output outside of a request goes to the logs, never to the SAPI (which would mark headers as sent).
    ob_start(function (string $b): string {
        if ($b !== '') fwrite(STDERR, $b);
        return '';
    }, 1);
    $R = PhpserverRuntime::class;
    uopz_set_return('header', fn(string $h, bool $replace = true, int $code = 0) => $R::header($h, $replace, $code), true);
    uopz_set_return('header_remove', fn(?string $name = null) => $R::removeHeader($name), true);
    uopz_set_return('headers_list', fn() => array_map(fn($h) => "$h[0]: $h[1]", $R::$headers), true);
    uopz_set_return('headers_sent', fn(&$file = null, &$line = null) => $R::$streamed, true);
    uopz_set_return('flush', fn() => $R::flush(), true);
    uopz_set_return('http_response_code', function (int $code = 0) use ($R) {
        if (!$R::$inRequest) return false;
        $old = $R::$status;
        if ($code > 0) $R::$status = $code;
        return $old;
    }, true);
    uopz_set_return('setcookie', fn(string $name, string $value = '', array|int $o = 0, string $path = '', string $domain = '', bool $secure = false, bool $httponly = false) => $R::cookie(false, $name, $value, $o, $path, $domain, $secure, $httponly), true);
    uopz_set_return('setrawcookie', fn(string $name, string $value = '', array|int $o = 0, string $path = '', string $domain = '', bool $secure = false, bool $httponly = false) => $R::cookie(true, $name, $value, $o, $path, $domain, $secure, $httponly), true);
    uopz_set_return('is_uploaded_file', fn(string $f) => isset($R::$uploaded[$f]), true);
    uopz_set_return('move_uploaded_file', function (string $from, string $to) use ($R) {
        if (!isset($R::$uploaded[$from])) return false;
        unset($R::$uploaded[$from]);
        return @rename($from, $to);
    }, true);
    stream_wrapper_unregister('php');
    stream_wrapper_register('php', PhpserverPhpStream::class);
}
