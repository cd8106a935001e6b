<?php
// $_SERVER of phpserver's worker mode (docs/adr/0013-php-worker-mode.md), as FrankenPHP builds it: the
// environment first, then the CGI/1.1 variables of the request, its headers (HTTP_*), then the variables
// PHP derives itself (CONTENT_TYPE, PATH_TRANSLATED, QUERY_STRING, REMOTE_USER, REQUEST_METHOD,
// PHP_AUTH_*, REQUEST_TIME*). The worker script boots inside a request of its own (GET of the script's
// name, the script's folder as DOCUMENT_ROOT), as FrankenPHP boots it; FRANKENPHP_WORKER is set there only.

declare(strict_types=1);

final class PhpserverCgi
{
    /**
     * $_SERVER of one request.
     * @param array<string, mixed> $env the process's environment
     * @param array{method: string, uri: string, headers: list<array{0: string, 1: string}>} $req
     * @param array<string, string> $internal what nginx says of the connection (X-Phpserver-* headers)
     * @param string $splitPath the path whose ".php" part is matched against SCRIPT_NAME for PATH_INFO
     */
    public static function server(array $env, array $req, array $internal, string $script, string $docRoot, string $splitPath): array
    {
        $host = '';
        $headers = [];
        $auth = '';
        $contentType = null;
        $contentLength = '';
        foreach ($req['headers'] as [$n, $v]) {
            $key = 'HTTP_' . strtoupper(strtr($n, '-. ', '___'));
            $headers[$key] = isset($headers[$key]) ? $headers[$key] . ', ' . $v : $v;
            $lower = strtolower($n);
            if ($lower === 'host') $host = $v;
            elseif ($lower === 'authorization') $auth = $v;
            elseif ($lower === 'content-type') $contentType = $v;
            elseif ($lower === 'content-length') $contentLength = $v;
        }
        $uri = $req['uri'];
        $q = strpos($uri, '?');
        $query = $q === false ? '' : substr($uri, $q + 1);
        $https = ($internal['https'] ?? '') === 'on';
        [$serverName, $serverPort] = self::hostPort($host, $https);
        $scriptName = str_starts_with($script, $docRoot . '/') ? substr($script, strlen($docRoot)) : '';
        [$docUri, $pathInfo] = self::splitPath($splitPath, $scriptName);
        $server = $env;
        foreach ([
            'REMOTE_ADDR' => $internal['remote-addr'] ?? '',
            'REMOTE_HOST' => $internal['remote-addr'] ?? '',
            'REMOTE_PORT' => $internal['remote-port'] ?? '',
            'DOCUMENT_ROOT' => $docRoot,
            'PATH_INFO' => $pathInfo,
            'PHP_SELF' => $scriptName . $pathInfo,
            'DOCUMENT_URI' => $docUri,
            'SCRIPT_FILENAME' => $script,
            'SCRIPT_NAME' => $scriptName,
            'SSL_CIPHER' => '',
            'SERVER_NAME' => $serverName,
            'SERVER_PORT' => $serverPort,
            'SERVER_ADDR' => $internal['server-addr'] ?? '',
            'CONTENT_LENGTH' => $contentLength,
            'SERVER_PROTOCOL' => $internal['protocol'] ?? 'HTTP/1.1',
            'HTTP_HOST' => $host,
            'REQUEST_URI' => $uri,
            'GATEWAY_INTERFACE' => 'CGI/1.1',
            'SERVER_SOFTWARE' => 'phpserver',
            'REQUEST_SCHEME' => $https ? 'https' : 'http',
            'SSL_PROTOCOL' => '',
            'HTTPS' => $https ? 'on' : '',
            'AUTH_TYPE' => '',
            'REMOTE_IDENT' => '',
        ] as $k => $v) $server[$k] = $v;
        foreach ($headers as $k => $v) $server[$k] = $v;
        $server['CONTENT_TYPE'] = $contentType ?? '';
        if ($pathInfo !== '') $server['PATH_TRANSLATED'] = self::join($docRoot, $pathInfo);
        $server['QUERY_STRING'] = $query;
        $user = self::auth($auth);
        if (isset($user['PHP_AUTH_USER'])) $server['REMOTE_USER'] = $user['PHP_AUTH_USER'];
        $server['REQUEST_METHOD'] = $req['method'];
        foreach ($user as $k => $v) $server[$k] = $v;
        $now = microtime(true);
        $server['REQUEST_TIME_FLOAT'] = $now;
        $server['REQUEST_TIME'] = (int) $now;
        return $server;
    }

    /** $_SERVER while the worker script boots: FrankenPHP's start-up request (GET of the script's name). */
    public static function boot(array $env, string $script): array
    {
        $req = ['method' => 'GET', 'uri' => '', 'headers' => []];
        $server = self::server($env, $req, [], $script, dirname($script), basename($script));
        // That request's path is the script's name without a slash (a URL relative to nothing).
        $server['DOCUMENT_URI'] = basename($script);
        $server['FRANKENPHP_WORKER'] = '1';
        return $server;
    }

    /** SERVER_NAME and SERVER_PORT from the Host the client asked for (the scheme's port when it names none). */
    private static function hostPort(string $host, bool $https): array
    {
        if (preg_match('/^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/', $host, $m)) {
            $name = $m[1];
            $port = $m[2] ?? '';
        } else {
            [$name, $port] = [$host, ''];
        }
        if (str_starts_with($name, '[') && str_ends_with($name, ']')) $name = substr($name, 1, -1);
        return [$name, $port !== '' ? $port : ($https ? '443' : '80')];
    }

    /**
     * DOCUMENT_URI and PATH_INFO: a path whose part up to its first ".php" is the worker's SCRIPT_NAME has
     * the rest as PATH_INFO (/index.php/blog/1); any other path was handed to the worker script as a front
     * controller (/blog/1), as php_server's (and nginx's) rewrite to index.php does. A worker outside the
     * webroot has neither (FrankenPHP's rule).
     */
    public static function splitPath(string $rawPath, string $scriptName): array
    {
        if ($scriptName === '') return ['', ''];
        $path = rawurldecode($rawPath);
        $at = stripos($path, '.php');
        if ($at !== false && substr($path, 0, $at + 4) === $scriptName) return [$scriptName, substr($path, $at + 4)];
        return [$scriptName, ''];
    }

    /** PATH_TRANSLATED: the path info under the webroot, never outside it. */
    private static function join(string $root, string $path): string
    {
        $parts = [];
        foreach (explode('/', $path) as $p) {
            if ($p === '' || $p === '.') continue;
            if ($p === '..') array_pop($parts);
            else $parts[] = $p;
        }
        $joined = rtrim($root, '/') . ($parts ? '/' . implode('/', $parts) : '');
        return str_ends_with($path, '/') && strlen($path) > 1 ? "$joined/" : $joined;
    }

    /** PHP_AUTH_USER and PHP_AUTH_PW from a Basic Authorization header, PHP_AUTH_DIGEST from a Digest one (as PHP does). */
    public static function auth(string $header): array
    {
        if (strncasecmp($header, 'Basic ', 6) === 0) {
            $decoded = base64_decode(substr($header, 6), false);
            if (is_string($decoded) && ($p = strpos($decoded, ':')) !== false) {
                $user = substr($decoded, 0, $p);
                $nul = strpos($user, "\0");
                return ['PHP_AUTH_USER' => $nul === false ? $user : substr($user, 0, $nul), 'PHP_AUTH_PW' => substr($decoded, $p + 1)];
            }
            return [];
        }
        if (strncasecmp($header, 'Digest ', 7) === 0) return ['PHP_AUTH_DIGEST' => substr($header, 7)];
        return [];
    }
}
